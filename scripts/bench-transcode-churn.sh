#!/usr/bin/env bash
# Transcoder memory under job churn (issue 23): one process runs the ABR pipeline JOBS times
# in a row on a short source, as a cluster transcoder does while publishers come and go, and
# reports after each job its RSS and glibc's account of the heap (in use, free but kept).
# Run twice side by side: as the pipeline leaves the heap, and with the freed pages handed
# back after each job (malloc_trim), as the node does.
#
# Environment (all optional):
#   JOBS=60          jobs per run
#   SKIP_BUILD=1     use the existing .build/release/transcode-bench
#   RESULTS=path     where the markdown section goes (default /tmp/transcode-churn-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

JOBS=${JOBS:-60}
RESULTS=${RESULTS:-/tmp/transcode-churn-results.md}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|hls-latency-bench'
BENCH_NAME=bench-transcode-churn
DURATION=$((JOBS * 10))
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

for tool in ffmpeg flock pgrep; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
build_release transcode-bench >&2
bench=.build/release/transcode-bench
[[ -x $bench ]] || die "$bench missing"

# A 6 s 720p30 source with film grain and 2 s GOPs: each job is a few seconds of work.
source_file=/tmp/estuary-transcode-churn-6s.flv
if [[ ! -s $source_file ]]; then
  log "generating $source_file"
  ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "testsrc2=size=1280x720:rate=30,noise=alls=8:allf=t" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 6 \
    -c:v libx264 -preset veryfast -b:v 4M -maxrate 4M -bufsize 8M -g 60 -keyint_min 60 -sc_threshold 0 -bf 2 -pix_fmt yuv420p \
    -c:a aac -b:a 128k -ac 2 -f flv "$source_file.tmp"
  mv "$source_file.tmp" "$source_file"
fi

wait_quiet
log "$JOBS jobs as the heap leaves them"
kept=$("$bench" churn --input "$source_file" --jobs "$JOBS")
log "$JOBS jobs, the freed pages handed back after each"
trimmed=$("$bench" churn --input "$source_file" --jobs "$JOBS" --trim)
{
  echo "### Transcoder memory under job churn ($(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "Command: \`make bench-transcode-churn\` (JOBS=$JOBS): the default ladder on a 6 s 720p30 source, job after job in one process."
  echo
  echo "#### Without handing freed pages back"
  echo
  echo "$kept"
  echo
  echo "#### With \`malloc_trim\` after each job (the node)"
  echo
  echo "$trimmed"
} | tee "$RESULTS"
