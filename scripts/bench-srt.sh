#!/usr/bin/env bash
# SRT fan-out (issue 26): SRT viewers beside RTMP viewers of the same stream, in one run.
#
# Fan-out: one node, one stream published over RTMP (the 30 s fan-out source, ~600 kbit/s,
# looped); N RTMP viewers, then N SRT viewers (libsrt callers in fanout-bench, stream id
# read:app/name, latency 120 ms), each measured DURATION s: the node's CPU per Gbit
# delivered, stalls. Target: SRT CPU-s/Gbit ≤ 1.5 × RTMP's.
#
# Environment (all optional): N=100  DURATION=20  ROUNDS=2  VIDEO_KBPS=520 (the source's video
# bitrate: SRT's control traffic is per second, not per byte)  SKIP_BUILD=1  KEEP_TMP=1
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N=${N:-100}
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-2}
VIDEO_KBPS=${VIDEO_KBPS:-520}
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
encode_fanout_source "$tmp/src.flv" "$VIDEO_KBPS"
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

# Rounds in the order RTMP, SRT, SRT, RTMP, …: a drift of the machine's load over the run
# weighs on both kinds alike. Each window is one fanout-bench run of its own.
run_window() { # kind label
  local kind=$1 label=$2
  wait_quiet
  log "$kind ($label): $N viewers, ${DURATION}s"
  if [[ $kind == rtmp ]]; then
    "$bench" --rtmp-url "rtmp://127.0.0.1:$rtmp/live/s" --rtmp-viewers "$N" --duration "$DURATION" \
      --server-pid "$node_pid" --label rtmp --json >"$tmp/$label.json" 2>"$tmp/$label.log" || die "fanout-bench (rtmp) failed: $(tail -3 "$tmp/$label.log")"
  else
    "$bench" --srt-url "srt://127.0.0.1:$srt" --srt-stream-id "read:live/s" --srt-viewers "$N" --duration "$DURATION" \
      --server-pid "$node_pid" --label srt --json >"$tmp/$label.json" 2>"$tmp/$label.log" || die "fanout-bench (srt) failed: $(tail -3 "$tmp/$label.log")"
  fi
  tail -1 "$tmp/$label.log" >&2
  sleep 3
}
for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then order=(rtmp srt); else order=(srt rtmp); fi
  for kind in "${order[@]}"; do run_window "$kind" "$kind-$round"; done
done

echo "$N viewers of one stream (video $VIDEO_KBPS kbit/s, audio 64 kbit/s) per window, ${DURATION} s windows, $ROUNDS rounds, one node (release build), $(nproc) cores; $(date -u +%Y-%m-%d)."
echo
"$(project_python)" - "$tmp" "$ROUNDS" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
print("| window | delivered (Mbit/s) | server CPU % | CPU-s/Gbit | RSS KiB/viewer | stalls |")
print("| --- | --- | --- | --- | --- | --- |")
per = {"rtmp": [], "srt": []}
for r in range(1, rounds + 1):
    for kind in (("rtmp", "srt") if r % 2 else ("srt", "rtmp")):
        w = json.load(open(f"{tmp}/{kind}-{r}.json"))
        per[kind].append(w["serverCPUSecondsPerGbit"])
        if kind == "rtmp":
            print(f"| {r}: {w['rtmpViewers']} RTMP | {w['deliveredMbitPerSecond']:.1f} | {w['serverCPUPercent']:.0f} | {w['serverCPUSecondsPerGbit']:.3f} | {w['rssPerViewerKiB']:.1f} | {w['stallsInWindow']} |")
        else:
            print(f"| {r}: {int(w['srtViewers'])} SRT | {w['deliveredMbitPerSecond']:.1f} | {w['serverCPUPercent']:.0f} | {w['serverCPUSecondsPerGbit']:.3f} | {w['rssPerViewerKiB']:.1f} | {int(w['stalled'])} (failed {int(w['failed'])}, ended {int(w['ended'])}, longest wait {int(w['longestWaitMilliseconds'])} ms) |")
rtmp = sum(per["rtmp"]) / len(per["rtmp"])
srt = sum(per["srt"]) / len(per["srt"])
print()
print(f"Mean CPU-s/Gbit: RTMP {rtmp:.3f}, SRT {srt:.3f}. SRT / RTMP CPU per Gbit: **{srt / rtmp:.2f}** (target ≤ 1.5)")
PY
