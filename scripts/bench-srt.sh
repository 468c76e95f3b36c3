#!/usr/bin/env bash
# SRT fan-out (issue 26): SRT viewers beside RTMP viewers of the same stream, in one run.
#
# Fan-out: one node, one stream published over RTMP (the 30 s fan-out source, ~600 kbit/s,
# looped); N RTMP viewers, then N SRT viewers (libsrt callers in fanout-bench, stream id
# read:app/name, latency 120 ms), each measured DURATION s: the node's CPU per Gbit
# delivered, stalls. Target: SRT CPU-s/Gbit ≤ 1.5 × RTMP's.
#
# Environment (all optional): N=100  DURATION=20  SKIP_BUILD=1  KEEP_TMP=1
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N=${N:-100}
DURATION=${DURATION:-20}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]'
BENCH_NAME=bench-srt
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"
trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

scripts/install-deps.sh --bench
build_release estuary fanout-bench
node=.build/release/estuary
bench=.build/release/fanout-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d /tmp/estuary-bench-srt.XXXXXX)
encode_fanout_source "$tmp/src.flv"
pick_port rtmp 29751
pick_port http 29381
pick_port admin 29391
pick_port srt 29901

start estuary "$node" --bind 127.0.0.1 --rtmp-port "$rtmp" --http-port "$http" --admin-port "$admin" \
  --srt-port "$srt" --data-dir "$tmp/data" --log-level warning
node_pid=$started
wait_http estuary "http://127.0.0.1:$http/healthz" "$node_pid" 20
start publisher ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/src.flv" -c copy -f flv "rtmp://127.0.0.1:$rtmp/live/s"
for ((i = 0; i < 50; i++)); do
  [[ $(http_code "http://127.0.0.1:$http/live/s.flv") == 200 ]] && break
  sleep 0.2
done
sleep 2

wait_quiet
log "rtmp: $N viewers, ${DURATION}s"
"$bench" --rtmp-url "rtmp://127.0.0.1:$rtmp/live/s" --rtmp-viewers "$N" --duration "$DURATION" \
  --server-pid "$node_pid" --label rtmp --json >"$tmp/rtmp.json" 2>"$tmp/rtmp.log" || die "fanout-bench (rtmp) failed: $(tail -3 "$tmp/rtmp.log")"
tail -1 "$tmp/rtmp.log" >&2
sleep 3
wait_quiet
log "srt: $N viewers, ${DURATION}s"
"$bench" --srt-url "srt://127.0.0.1:$srt" --srt-stream-id "read:live/s" --srt-viewers "$N" --duration "$DURATION" \
  --server-pid "$node_pid" --label srt --json >"$tmp/srt.json" 2>"$tmp/srt.log" || die "fanout-bench (srt) failed: $(tail -3 "$tmp/srt.log")"
tail -1 "$tmp/srt.log" >&2

echo "$N viewers of one ~600 kbit/s stream per run, ${DURATION} s window, one node (release build), $(nproc) cores; $(date -u +%Y-%m-%d)."
echo
"$(project_python)" - "$tmp" <<'PY'
import json, sys
rtmp = json.load(open(f"{sys.argv[1]}/rtmp.json"))
srt = json.load(open(f"{sys.argv[1]}/srt.json"))
print("| viewers | delivered (Mbit/s) | server CPU % | CPU-s/Gbit | RSS KiB/viewer | stalls |")
print("| --- | --- | --- | --- | --- | --- |")
print(f"| {rtmp['rtmpViewers']} RTMP | {rtmp['deliveredMbitPerSecond']:.1f} | {rtmp['serverCPUPercent']:.0f} | {rtmp['serverCPUSecondsPerGbit']:.3f} | {rtmp['rssPerViewerKiB']:.1f} | {rtmp['stallsInWindow']} |")
print(f"| {int(srt['srtViewers'])} SRT | {srt['deliveredMbitPerSecond']:.1f} | {srt['serverCPUPercent']:.0f} | {srt['serverCPUSecondsPerGbit']:.3f} | {srt['rssPerViewerKiB']:.1f} | {int(srt['stalled'])} (failed {int(srt['failed'])}, ended {int(srt['ended'])}, longest wait {int(srt['longestWaitMilliseconds'])} ms) |")
print()
ratio = srt['serverCPUSecondsPerGbit'] / rtmp['serverCPUSecondsPerGbit'] if rtmp['serverCPUSecondsPerGbit'] else float('nan')
print(f"SRT / RTMP CPU per Gbit: **{ratio:.2f}** (target ≤ 1.5)")
PY
