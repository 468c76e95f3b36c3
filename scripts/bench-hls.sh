#!/usr/bin/env bash
# HLS / LL-HLS latency benchmark (issue 3): when does a published frame become available
# to a player polling the playlist, and what do 100 LL-HLS viewers cost the node?
#
# Two runs, each on a freshly started release node (loopback):
#   1. 0 load viewers: one parsing LL-HLS player (blocking reload) + one classic HLS player
#      (polls index.m3u8 every 100 ms) → availability latency per frame, node CPU baseline;
#   2. VIEWERS load viewers (LL-HLS blocking reload + part download) + the same two players
#      → node CPU per 100 viewers, RSS, latency under load.
# `hls-latency-bench` publishes the source FLV itself over RTMP, paced by DTS, and records
# when each video frame was written; see Benchmarks/HLSLatencyBench.
# The markdown section goes to RESULTS (default /tmp/hls-bench-results.md) and stdout.
#
# Environment (all optional):
#   DURATION=30   seconds published per run (the 30 s source loops if longer)
#   SKIP=4 TAIL=4 seconds left out at the start / end of each run
#   VIEWERS=100   load viewers of run 2
#   SKIP_BUILD=1  use the existing .build/release binaries
#   KEEP_TMP=1    keep the temporary directory (logs, JSON)
#   RESULTS=path  where the markdown section goes
#   RTMP_PORT HTTP_PORT   loopback ports (default: the first free ones from 29361, 29091)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

DURATION=${DURATION:-30}
SKIP=${SKIP:-4}
TAIL=${TAIL:-4}
VIEWERS=${VIEWERS:-100}
RESULTS=${RESULTS:-/tmp/hls-bench-results.md}
STREAM=live/hlsbench
BUILD_LOCK=/tmp/estuary-build.lock
# Processes whose CPU use would distort the figures: builds, tests, fuzzers, other benchmarks.
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|bench-fanout'
BENCH_NAME=bench-hls
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"


# --- processes we start, and their cleanup -------------------------------------------------
server_pid=""
watcher_pid=""
tmp=""
cleanup() {
  local status=$?
  if [[ -n $watcher_pid ]]; then stop_pid "$watcher_pid"; fi
  if [[ -n $server_pid ]]; then stop_pid "$server_pid"; fi
  if [[ -n $tmp && -z ${KEEP_TMP:-} ]]; then rm -rf "$tmp"; fi
  if [[ -n $tmp && -n ${KEEP_TMP:-} ]]; then log "kept $tmp"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM


# --- dependencies and binaries -------------------------------------------------------------
for tool in ffmpeg flock pgrep; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
if [[ -z ${SKIP_BUILD:-} ]]; then
  wait_quiet # a build would distort another benchmark's figures
  log "building the release node and hls-latency-bench (holding $BUILD_LOCK)"
  flock -w 3600 "$BUILD_LOCK" swift build -c release --product estuary
  flock -w 3600 "$BUILD_LOCK" swift build -c release --product hls-latency-bench
fi
node=.build/release/estuary
bench=.build/release/hls-latency-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"

RTMP_PORT=${RTMP_PORT:-$(free_port 29361)}
HTTP_PORT=${HTTP_PORT:-$(free_port 29091)}
for port in "$RTMP_PORT" "$HTTP_PORT"; do port_free "$port" || die "port $port is in use"; done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

tmp=$(mktemp -d /tmp/estuary-bench-hls.XXXXXX)

# --- the source: 30 s of 640x360 30 fps H.264 (GOP 2 s, no B-frames) + AAC -----------------
log "encoding the 30 s source"
ffmpeg -nostdin -loglevel error -y \
  -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=frequency=440:sample_rate=44100 \
  -c:v libx264 -preset veryfast -tune zerolatency -g 60 -keyint_min 60 -sc_threshold 0 -b:v 600k \
  -c:a aac -b:a 64k -t 30 "$tmp/src.flv"

start_node() { # run name
  mkdir -p "$tmp/data-$1"
  "$node" --bind 127.0.0.1 --rtmp-port "$RTMP_PORT" --http-port "$HTTP_PORT" --admin-port 0 \
    --data-dir "$tmp/data-$1" --log-level warning >"$tmp/node-$1.log" 2>&1 &
  server_pid=$!
  wait_port "$RTMP_PORT" && wait_port "$HTTP_PORT" || die "the node did not listen (see $tmp/node-$1.log)"
}

busy_runs=()
run_once() { # name viewers
  local name=$1 viewers=$2
  wait_quiet
  start_node "$name"
  log "$name: publishing ${DURATION}s with $viewers load viewers"
  watch_builds "$tmp/$name.busy" &
  watcher_pid=$!
  timeout $((DURATION + 120)) "$bench" run \
    --rtmp-url "rtmp://127.0.0.1:$RTMP_PORT/$STREAM" --http-url "http://127.0.0.1:$HTTP_PORT" \
    --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" \
    --viewers "$viewers" --server-pid "$server_pid" --label "$viewers viewers" \
    --json-out "$tmp/$name.json" 2>"$tmp/$name.log" ||
    log "warning: $name: hls-latency-bench failed (exit $?): $(tail -3 "$tmp/$name.log")"
  stop_pid "$watcher_pid"
  watcher_pid=""
  tail -1 "$tmp/$name.log" >&2
  stop_pid "$server_pid"
  server_pid=""
}
# A run during which a build or benchmark ran is repeated (3 attempts at most).
run() { # name viewers
  local attempt
  for ((attempt = 1; attempt <= 3; attempt++)); do
    run_once "$@"
    [[ -s $tmp/$1.busy ]] || break
    if ((attempt < 3)); then log "$1: something else ran during the measurement; repeating"; fi
  done
  if [[ -s $tmp/$1.busy ]]; then busy_runs+=("$1"); fi
  [[ -s $tmp/$1.json ]] || die "$1 produced no result (see $tmp/$1.log)"
}

run baseline 0
run loaded "$VIEWERS"

command="scripts/bench-hls.sh"
for var in DURATION SKIP TAIL VIEWERS; do
  case "$var=${!var}" in
    DURATION=30 | SKIP=4 | TAIL=4 | VIEWERS=100) ;;
    *) command="$var=${!var} $command" ;;
  esac
done
{
  "$bench" report --result "$tmp/baseline.json" --result "$tmp/loaded.json" --command "$command"
  if ((${#busy_runs[@]} > 0)); then
    echo
    echo "Warning: a build or another benchmark ran during ${busy_runs[*]}; its CPU figures are not trustworthy."
  fi
} >"$tmp/section.md"
cp "$tmp/section.md" "$RESULTS"
cat "$RESULTS"
log "written to $RESULTS"
