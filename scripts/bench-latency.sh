#!/usr/bin/env bash
# Latency against load (issue 15): publish → HTTP-FLV viewer latency and CPU per delivered
# Gbit of one node, with merged writes adapting to the node's load (the default) and with
# the fixed 100 ms merge of before, side by side, at each viewer count in N_LIST.
#
# Each run publishes the same 30 s source in real time (hls-latency-bench's publisher notes
# when it writes each video frame) to a fresh `node`, with one measuring HTTP-FLV viewer
# (which notes when each frame arrives) plus N-1 load viewers; latency = arrival − write,
# p50 and p99 over the window; CPU from /proc over the window, per Gbit the viewers got.
#
# Environment: N_LIST="100 1000" DURATION=30 SKIP=4 TAIL=4 RAMP_MS=2 SKIP_BUILD=1 KEEP_TMP=1
#              RESULTS=path (default /tmp/latency-bench-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N_LIST=${N_LIST:-"100 1000"}
DURATION=${DURATION:-30}
SKIP=${SKIP:-4}
TAIL=${TAIL:-4}
# The load viewers join this far apart, from 1 s after the publisher starts: at 2 ms, 1000
# have joined before the window (SKIP) opens, so it measures a steady load, not the joins.
RAMP_MS=${RAMP_MS:-2}
RESULTS=${RESULTS:-/tmp/latency-bench-results.md}
STREAM=live/latencybench
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-latency
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

python=$(project_python)
for tool in ffmpeg flock pgrep "$python"; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
build_release estuary hls-latency-bench
node=.build/release/estuary
bench=.build/release/hls-latency-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d /tmp/estuary-bench-latency.XXXXXX)

encode_latency_source "$tmp/src.flv"
echo '{"mergeWritesAboveViewers": 0, "mergeWritesFullAtViewers": 1}' >"$tmp/fixed.json"
echo '{}' >"$tmp/adaptive.json"

results=()
for n in $N_LIST; do
  for mode in adaptive fixed; do
    name="$mode-$n"
    RTMP=$(free_port 29481)
    HTTP=$(free_port 29211)
    "$node" --bind 127.0.0.1 --rtmp-port "$RTMP" --http-port "$HTTP" --admin-port 0 --data-dir "$tmp/$name" --log-level warning \
      --config "$tmp/$mode.json" >"$tmp/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_port "$RTMP" && wait_port "$HTTP" || die "the node did not listen (see $tmp/$name.log)"
    wait_quiet
    log "$name: publishing ${DURATION}s; 1 measuring + $((n - 1)) load HTTP-FLV viewers"
    timeout $((DURATION + 120)) "$bench" run --no-hls \
      --rtmp-url "rtmp://127.0.0.1:$RTMP/$STREAM" --http-url "http://127.0.0.1:$HTTP" --flv-url "http://127.0.0.1:$HTTP" \
      --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" \
      --flv-viewers "$((n - 1))" --ramp-ms "$RAMP_MS" --server-pid "$pid" --label "$name" \
      --json-out "$tmp/$name.json" 2>"$tmp/$name.bench.log" ||
      log "warning: $name: hls-latency-bench failed (exit $?): $(tail -3 "$tmp/$name.bench.log")"
    tail -1 "$tmp/$name.bench.log" >&2
    stop_pid "$pid"
    pids=()
    [[ -s $tmp/$name.json ]] && results+=("$tmp/$name.json")
  done
done

"$python" - "${results[@]}" >"$RESULTS" <<'PY'
import json, sys
runs = [json.load(open(path)) for path in sys.argv[1:]]
print(f"### Latency against load ({runs[0].get('date', '')[:10] if runs else ''})")
print()
print("| merged writes | viewers | frames matched | latency p50 ms | p99 ms | max ms | node CPU (cores) | CPU-s per Gbit |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for run in runs:
    flv = run.get("flv") or {}
    cpu = run.get("cpu") or {}
    window = cpu.get("windowSeconds") or run.get("windowSeconds") or 1
    gbit = (run.get("flvViewerBytes") or 0) * 8 / 1e9 * (window / float(run.get("publishSeconds") or window))
    per_gbit = cpu.get("serverCPUSeconds", 0) / gbit if gbit > 0 else float("nan")
    mode, viewers = run["label"].split("-")
    print(f"| {mode} | {viewers} | {flv.get('framesMatched', 0)}/{flv.get('framesInWindow', 0)} | {flv.get('p50Milliseconds', 0):.0f} | "
          f"**{flv.get('p99Milliseconds', 0):.0f}** | {flv.get('maxMilliseconds', 0):.0f} | {cpu.get('serverCores', 0):.3f} | {per_gbit:.3f} |")
errors = [error for run in runs for error in run.get("errors", [])]
if errors:
    print()
    print("Errors: " + "; ".join(errors[:5]))
PY
cat "$RESULTS"
log "written to $RESULTS"
