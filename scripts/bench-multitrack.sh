#!/usr/bin/env bash
# Multitrack against transcoding (issue 26): what an encoder-made 3-rung ladder costs the
# node, beside what transcoding the same ladder from its top rung costs, in one run.
#
# Source: an MP4 with three H.264 video streams made once by ffmpeg (1280x720 at 2500
# kbit/s, 854x480 at 1200 kbit/s, 640x360 at 700 kbit/s; 30 fps, 2 s GOPs at the same
# frames) and AAC. PyAV's FFmpeg 8 (the project's virtualenv) publishes it in real time:
#  - multitrack: all three streams as Enhanced RTMP v2 multitrack to live/mt: the node
#    splits them into live/mt, live/mt/track1, live/mt/track2 and segments each for HLS;
#  - transcode: the 720p stream alone to abr/tc, with a ladder of the same two lower rungs
#    (480p at 1200 kbit/s, 360p at 700 kbit/s): the node decodes and encodes them (x264).
# Each run: one fresh node (release build), WINDOW s of node CPU (utime + stime from
# /proc) after SKIP s, and one HTTP-FLV viewer per rendition that stays through the window.
# Target: multitrack ≤ 0.1 × transcode.
#
# Environment (all optional): WINDOW=30  SKIP=8  SKIP_BUILD=1  KEEP_TMP=1
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

WINDOW=${WINDOW:-30}
SKIP=${SKIP:-8}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-multitrack
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"
trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

python=$(project_python)
"$python" -c 'import av' 2>/dev/null || die "PyAV is not in $python (scripts/install-deps.sh --test makes .venv/)"
build_release estuary
node=.build/release/estuary
[[ -x $node ]] || die "missing $node (build it or unset SKIP_BUILD)"
tmp=$(mktemp -d /tmp/estuary-bench-multitrack.XXXXXX)
seconds=$((SKIP + WINDOW + 10))

log "encoding the ${seconds} s 3-track source"
ffmpeg -nostdin -loglevel error -y \
  -f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "testsrc2=size=854x480:rate=30" \
  -f lavfi -i "testsrc2=size=640x360:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
  -map 0:v -map 1:v -map 2:v -map 3:a \
  -c:v libx264 -profile:v main -preset veryfast -g 60 -keyint_min 60 -sc_threshold 0 -pix_fmt yuv420p \
  -b:v:0 2500k -b:v:1 1200k -b:v:2 700k -c:a aac -b:a 128k -t "$seconds" "$tmp/ladder.mp4"
ffmpeg -nostdin -loglevel error -y -i "$tmp/ladder.mp4" -map 0:v:0 -map 0:a -c copy "$tmp/top.mp4"
cat >"$tmp/ladder.json" <<JSON
{"ladders": {"abr": [{"name": "480p", "height": 480, "videoBitRate": 1200000}, {"name": "360p", "height": 360, "videoBitRate": 700000}]}}
JSON

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# run NAME FILE APP STREAM RENDITION... prints "cpu_seconds viewer_bytes"
run() {
  local name=$1 file=$2 app=$3 stream=$4
  shift 4
  local rtmp http node_pid publisher_pid before after viewers=() rendition bytes=0
  picked_ports=""
  pick_port rtmp 29811
  pick_port http 29821
  start "$name-node" "$node" --bind 127.0.0.1 --rtmp-port "$rtmp" --http-port "$http" --admin-port 0 \
    --data-dir "$tmp/$name-data" --log-level warning --config "$tmp/ladder.json"
  node_pid=$started
  wait_http "$name-node" "http://127.0.0.1:$http/healthz" "$node_pid" 20
  wait_quiet
  start "$name-publisher" "$python" Tests/Peers/pyav_publish.py "$file" "rtmp://127.0.0.1:$rtmp/$app/$stream"
  publisher_pid=$started
  for rendition in "$@"; do
    wait_http "$name-publisher" "http://127.0.0.1:$http/$app/$rendition.flv" "$publisher_pid" 30
  done
  for rendition in "$@"; do
    curl -s -m $((SKIP + WINDOW)) -o "$tmp/$name-${rendition//\//_}.flv" "http://127.0.0.1:$http/$app/$rendition.flv" &
    viewers+=($!)
  done
  sleep "$SKIP"
  before=$(ticks "$node_pid")
  sleep "$WINDOW"
  after=$(ticks "$node_pid")
  kill -0 "$publisher_pid" 2>/dev/null || die "$name: the publisher ended early (see $tmp/$name-publisher.log)"
  wait "${viewers[@]}" 2>/dev/null || true
  for rendition in "$@"; do
    bytes=$((bytes + $(stat -c %s "$tmp/$name-${rendition//\//_}.flv")))
  done
  stop_pid "$publisher_pid"
  stop_pid "$node_pid"
  awk -v t=$((after - before)) -v hz="$hz" -v b="$bytes" 'BEGIN { printf "%.2f %d\n", t / hz, b }'
}

log "multitrack: live/mt with three tracks, ${WINDOW} s window"
run multitrack "$tmp/ladder.mp4" live mt mt mt/track1 mt/track2 >"$tmp/multitrack.result"
read -r multitrack_cpu multitrack_bytes <"$tmp/multitrack.result"
log "transcode: abr/tc, 720p source into 480p and 360p, ${WINDOW} s window"
run transcode "$tmp/top.mp4" abr tc tc tc/480p tc/360p >"$tmp/transcode.result"
read -r transcode_cpu transcode_bytes <"$tmp/transcode.result"

"$python" - "$multitrack_cpu" "$transcode_cpu" "$multitrack_bytes" "$transcode_bytes" "$WINDOW" <<'PY'
import sys, datetime
mt, tc, mt_bytes, tc_bytes, window = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
print(f"### Multitrack ladder against transcoding ({datetime.date.today()})")
print()
print("| run | node CPU-s over the window | cores | viewers' bytes | CPU against transcoding |")
print("| --- | --- | --- | --- | --- |")
print(f"| multitrack: 720p + 480p + 360p from the encoder | {mt:.2f} | {mt / window:.3f} | {mt_bytes} | **{mt / tc:.3f} ×** |")
print(f"| transcode: 720p source → 480p + 360p (x264) | {tc:.2f} | {tc / window:.3f} | {tc_bytes} | 1 |")
print()
print(f"Target: multitrack ≤ 0.1 × transcode. {'Met' if mt <= 0.1 * tc else 'Not met'}.")
PY
