#!/usr/bin/env bash
# ABR transcoding benchmark (issue 4): the same 720p30 source into the default ladder
# (720p/2800k, 480p/1400k, 360p/800k, 240p/400k), once with Estuary's pipeline and once
# with the equivalent ffmpeg command line (split + scale + libx264 with the same
# settings), each in its own process, alternating, ROUNDS times. Reports wall time, fps,
# real-time factor, CPU-seconds per source second and peak RSS, and their ratios.
#
# Environment (all optional):
#   SECONDS_OF_SOURCE=60  length of the generated source
#   ROUNDS=3              runs of each side (the median is reported)
#   SKIP_BUILD=1          use the existing .build/release/transcode-bench
#   RESULTS=path          where the markdown section goes (default /tmp/transcode-bench-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

SOURCE_SECONDS=${SECONDS_OF_SOURCE:-60}
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

# The source: testsrc2 with moving film grain (so x264 has real work, like camera input),
# 2 s GOPs with B-frames as OBS sends them, AAC stereo. Made once and kept.
source_file=/tmp/estuary-transcode-source-${SOURCE_SECONDS}s.flv
if [[ ! -s $source_file ]]; then
  log "generating $source_file"
  ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "testsrc2=size=1280x720:rate=30,noise=alls=8:allf=t" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$SOURCE_SECONDS" \
    -c:v libx264 -preset veryfast -b:v 4M -maxrate 4M -bufsize 8M -g 60 -keyint_min 60 -sc_threshold 0 -bf 2 -pix_fmt yuv420p \
    -c:a aac -b:a 128k -ac 2 -f flv "$source_file.tmp"
  mv "$source_file.tmp" "$source_file"
fi

wait_quiet
busy_flag=$(mktemp)
watch_builds "$busy_flag" &
watcher=$!
trap 'kill $watcher 2>/dev/null || true; rm -f "$busy_flag"' EXIT
log "comparing ($ROUNDS rounds of each side)"
report=$("$bench" compare --input "$source_file" --seconds "$SOURCE_SECONDS" --rounds "$ROUNDS")
kill "$watcher" 2>/dev/null || true
{
  echo "### ABR transcoding: Estuary against the ffmpeg CLI ($(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "Command: \`make bench-transcode\` (SECONDS_OF_SOURCE=$SOURCE_SECONDS ROUNDS=$ROUNDS)"
  echo
  echo "$report"
  if [[ -s $busy_flag ]]; then echo; echo "**Warning:** a build or benchmark ran during the measurement."; fi
} | tee "$RESULTS"
