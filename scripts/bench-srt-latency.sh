#!/usr/bin/env bash
# SRT ingest to RTMP viewer latency (issue 26), beside RTMP ingest to the same viewer, in one
# run on one node (release build), on loopback.
#
# hls-latency-bench publishes the 30 s latency source in real time and notes when it hands
# each video frame to the socket: over SRT (a libsrt caller, `publish:live/name`, MPEG-TS
# muxed frame by frame with the project's MemoryMuxer, SRT latency LATENCY_MS) and, as the
# reference, over RTMP. A measuring RTMP player (the project's RTMP client) and an HTTP-FLV
# player note when each frame arrives; latency = arrival − hand-off, p50/p99/max over the
# window. The node's SRT latency is set to the same LATENCY_MS (SRT uses the larger of the
# two sides').
#
# Environment (all optional): LATENCY_MS=120  DURATION=30  SKIP=4  TAIL=3  SKIP_BUILD=1  KEEP_TMP=1
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

LATENCY_MS=${LATENCY_MS:-120}
DURATION=${DURATION:-30}
SKIP=${SKIP:-4}
TAIL=${TAIL:-3}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-srt-latency
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"
trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

python=$(project_python)
build_release estuary hls-latency-bench
node=.build/release/estuary
bench=.build/release/hls-latency-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
tmp=$(mktemp -d /tmp/estuary-bench-srt-latency.XXXXXX)
encode_latency_source "$tmp/src.flv"
pick_port rtmp 29841
pick_port http 29851
pick_port srt 29861
echo "{\"srtLatencyMilliseconds\": $LATENCY_MS}" >"$tmp/node.json"

start estuary "$node" --bind 127.0.0.1 --rtmp-port "$rtmp" --http-port "$http" --admin-port 0 --srt-port "$srt" \
  --data-dir "$tmp/data" --log-level warning --config "$tmp/node.json"
node_pid=$started
wait_http estuary "http://127.0.0.1:$http/healthz" "$node_pid" 20

results=()
for ingest in srt rtmp; do
  wait_quiet
  log "$ingest ingest: publishing ${DURATION}s to live/$ingest; one RTMP and one HTTP-FLV measuring player"
  extra=()
  [[ $ingest == srt ]] && extra=(--srt-publish-url "srt://127.0.0.1:$srt" --srt-latency-ms "$LATENCY_MS")
  timeout $((DURATION + 60)) "$bench" run --no-hls --rtmp-play "${extra[@]}" \
    --rtmp-url "rtmp://127.0.0.1:$rtmp/live/$ingest" --http-url "http://127.0.0.1:$http" --flv-url "http://127.0.0.1:$http" \
    --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" --server-pid "$node_pid" --label "$ingest" \
    --json-out "$tmp/$ingest.json" 2>"$tmp/$ingest.log" || die "$ingest run failed: $(tail -3 "$tmp/$ingest.log")"
  tail -1 "$tmp/$ingest.log" >&2
  results+=("$tmp/$ingest.json")
  sleep 2
done

"$python" - "$LATENCY_MS" "${results[@]}" <<'PY'
import json, sys
latency = int(sys.argv[1])
runs = {run["ingest"]: run for run in (json.load(open(path)) for path in sys.argv[2:])}
print(f"### SRT ingest to RTMP viewer latency ({runs['srt'].get('date', '')[:10]})")
print()
print(f"One node (release build), loopback, SRT latency {latency} ms; the 30 s 640x360 30 fps source published in real time.")
print()
print("| ingest | viewer | frames matched | p50 ms | p99 ms | max ms | node CPU (cores) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for ingest in ("srt", "rtmp"):
    run = runs[ingest]
    for viewer, key in (("RTMP", "rtmp"), ("HTTP-FLV", "flv")):
        figures = run.get(key) or {}
        print(f"| {ingest.upper()} | {viewer} | {figures.get('framesMatched', 0)}/{figures.get('framesInWindow', 0)} | "
              f"**{figures.get('p50Milliseconds', 0):.0f}** | {figures.get('p99Milliseconds', 0):.0f} | {figures.get('maxMilliseconds', 0):.0f} | "
              f"{(run.get('cpu') or {}).get('serverCores', 0):.3f} |")
srt, rtmp = runs["srt"].get("rtmp") or {}, runs["rtmp"].get("rtmp") or {}
if srt and rtmp:
    added = srt["p50Milliseconds"] - rtmp["p50Milliseconds"]
    print()
    print(f"SRT ingest adds {added:.0f} ms at p50 over RTMP ingest: {latency} ms of SRT latency (the receiver's "
          f"buffer) and {added - latency:.0f} ms more.")
errors = [error for run in runs.values() for error in run.get("errors", [])]
if errors:
    print()
    print("Errors: " + "; ".join(errors[:5]))
PY
