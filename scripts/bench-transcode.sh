#!/usr/bin/env bash
# ABR transcoding benchmark (issue 4): the same 720p30 source into the default ladder
# (720p/2800k, 480p/1400k, 360p/800k, 240p/400k), once with Estuary's pipeline and once
# with the equivalent ffmpeg command line (split + scale + libx264 with the same
# settings), each in its own process, alternating, ROUNDS times. Reports wall time, fps,
# real-time factor, CPU-seconds per source second and peak RSS, and their ratios.
#
# Environment (all optional):
#   SOURCE_CODEC=h264     h264, or hevc: the same source in HEVC (libx265), which Estuary reads
#                         as enhanced FLV (remuxed by PyAV's FFmpeg 8 from .venv) and the
#                         ffmpeg CLI from the MP4 it was remuxed from (5.1 reads no enhanced FLV)
#   SECONDS_OF_SOURCE=60  length of the generated source
#   ROUNDS=3              runs of each side (the median is reported)
#   SKIP_BUILD=1          use the existing .build/release/transcode-bench
#   RESULTS=path          where the markdown section goes (default /tmp/transcode-bench-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

SOURCE_SECONDS=${SECONDS_OF_SOURCE:-60}
SOURCE_CODEC=${SOURCE_CODEC:-h264}
ROUNDS=${ROUNDS:-3}
RESULTS=${RESULTS:-/tmp/transcode-bench-results.md}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|hls-latency-bench'
BENCH_NAME=bench-transcode
DURATION=$((SOURCE_SECONDS * ROUNDS * 3))
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

for tool in ffmpeg flock pgrep; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
if [[ -z ${SKIP_BUILD:-} ]]; then
  wait_quiet
  log "building transcode-bench (release, holding $BUILD_LOCK)"
  flock "$BUILD_LOCK" swift build -c release --product transcode-bench >&2
fi
bench=.build/release/transcode-bench
[[ -x $bench ]] || die "$bench missing"

# The source: testsrc2 with moving film grain (so the encoder has real work, like camera
# input), 2 s GOPs with B-frames as OBS sends them, AAC stereo. Made once and kept.
picture="testsrc2=size=1280x720:rate=30,noise=alls=8:allf=t"
case $SOURCE_CODEC in
  h264)
    source_file=/tmp/estuary-transcode-source-${SOURCE_SECONDS}s.flv
    reference_file=$source_file
    codec_name=H.264
    if [[ ! -s $source_file ]]; then
      log "generating $source_file"
      ffmpeg -nostdin -hide_banner -loglevel error -y \
        -f lavfi -i "$picture" -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$SOURCE_SECONDS" \
        -c:v libx264 -preset veryfast -b:v 4M -maxrate 4M -bufsize 8M -g 60 -keyint_min 60 -sc_threshold 0 -bf 2 -pix_fmt yuv420p \
        -c:a aac -b:a 128k -ac 2 -f flv "$source_file.tmp"
      mv "$source_file.tmp" "$source_file"
    fi
    ;;
  hevc)
    reference_file=/tmp/estuary-transcode-source-hevc-${SOURCE_SECONDS}s.mp4
    source_file=/tmp/estuary-transcode-source-hevc-${SOURCE_SECONDS}s.flv
    codec_name=HEVC
    python=.venv/bin/python3
    [[ -x $python ]] || die "$python missing (scripts/install-deps.sh --test makes it, with PyAV)"
    if [[ ! -s $reference_file ]]; then
      log "generating $reference_file (libx265)"
      ffmpeg -nostdin -hide_banner -loglevel error -y \
        -f lavfi -i "$picture" -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$SOURCE_SECONDS" \
        -c:v libx265 -preset veryfast -b:v 3M -x265-params "keyint=60:min-keyint=60:scenecut=0:bframes=2:vbv-maxrate=3000:vbv-bufsize=6000:log-level=error" \
        -tag:v hvc1 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 -f mp4 "$reference_file.tmp"
      mv "$reference_file.tmp" "$reference_file"
    fi
    if [[ ! -s $source_file ]]; then
      log "remuxing it to enhanced FLV ($source_file) with PyAV"
      "$python" Tests/Peers/pyav_publish.py "$reference_file" "$source_file.tmp" --loops 1 --unpaced
      mv "$source_file.tmp" "$source_file"
    fi
    ;;
  *) die "SOURCE_CODEC is h264 or hevc, not $SOURCE_CODEC" ;;
esac

wait_quiet
busy_flag=$(mktemp)
watch_builds "$busy_flag" &
watcher=$!
trap 'kill $watcher 2>/dev/null || true; rm -f "$busy_flag"' EXIT
log "comparing ($ROUNDS rounds of each side)"
report=$("$bench" compare --input "$source_file" --reference-input "$reference_file" --source-codec "$codec_name" --seconds "$SOURCE_SECONDS" --rounds "$ROUNDS")
kill "$watcher" 2>/dev/null || true
{
  echo "### ABR transcoding from $codec_name: Estuary against the ffmpeg CLI ($(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "Command: \`make bench-transcode\` (SOURCE_CODEC=$SOURCE_CODEC SECONDS_OF_SOURCE=$SOURCE_SECONDS ROUNDS=$ROUNDS)"
  echo
  echo "$report"
  if [[ -s $busy_flag ]]; then echo; echo "**Warning:** a build or benchmark ran during the measurement."; fi
} | tee "$RESULTS"
