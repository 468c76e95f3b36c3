#!/usr/bin/env bash
# Scale and soak benchmark: one node, many viewers for a long time, then churn.
#
#   1. Scale: SOAK_VIEWERS viewers (half RTMP, half HTTP-FLV) of one 64 kbit/s audio stream
#      for SOAK_MINUTES, counted for stalls by fanout-bench.
#   2. Churn: CHURN_PUBLISHERS publishers that come and go (each publishes 20–60 s, pauses
#      1 s, again) and CHURN_VIEWERS viewers in two generator loops that connect to a random
#      one of those streams, watch 20 s and leave, for CHURN_MINUTES.
#   3. Settle: everything stops; after SETTLE_SECONDS the node's RSS must be back near the
#      baseline taken between phases 1 and 2.
#
# The node's RSS is sampled every SAMPLE_SECONDS (60). It prints a markdown report for
# docs/benchmarks.md. Not a test: it never fails on a figure, it reports them.
#
# Environment (all optional):
#   SOAK_VIEWERS=10000  SOAK_MINUTES=10  CHURN_VIEWERS=1000  CHURN_PUBLISHERS=10
#   CHURN_MINUTES=30    SETTLE_SECONDS=60  SAMPLE_SECONDS=60  SKIP_BUILD=1  KEEP_TMP=1
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

SOAK_VIEWERS=${SOAK_VIEWERS:-10000}
SOAK_MINUTES=${SOAK_MINUTES:-10}
CHURN_VIEWERS=${CHURN_VIEWERS:-1000}
CHURN_PUBLISHERS=${CHURN_PUBLISHERS:-10}
CHURN_MINUTES=${CHURN_MINUTES:-30}
SETTLE_SECONDS=${SETTLE_SECONDS:-60}
SAMPLE_SECONDS=${SAMPLE_SECONDS:-60}
BUILD_LOCK=/tmp/estuary-build.lock
BENCH_NAME=bench-soak
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

pids=()
server_pid=""
tmp=""
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  pkill -f "estuary-bench-soak.*audio.flv" 2>/dev/null || true
  if [[ -n $server_pid ]]; then stop_pid "$server_pid"; fi
  if [[ -n $tmp && -z ${KEEP_TMP:-} ]]; then rm -rf "$tmp"; fi
  if [[ -n $tmp && -n ${KEEP_TMP:-} ]]; then log "kept $tmp"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scripts/install-deps.sh --test
build_release estuary fanout-bench
node=.build/release/estuary
bench=.build/release/fanout-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"

# Every viewer is a socket in the generator and in the node.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)
((nofile > SOAK_VIEWERS + 1024)) || log "warning: open-file limit $nofile is low for $SOAK_VIEWERS viewers"

RTMP_PORT=$(free_port 29651)
HTTP_PORT=$(free_port 29181)
tmp=$(mktemp -d /tmp/estuary-bench-soak.XXXXXX)
log "encoding the 30 s, 64 kbit/s audio source"
ffmpeg -nostdin -loglevel error -y -f lavfi -i sine=frequency=440:sample_rate=44100 \
  -c:a aac -b:a 64k -ac 2 -t 30 "$tmp/audio.flv"

# Limits sized for the run: the defaults (10,000 a listener) would refuse the last viewers
# plus the publisher and the scrapes.
cat >"$tmp/soak.json" <<EOF
{ "maxConnections": $((SOAK_VIEWERS + 1000)), "maxStreams": 1000 }
EOF
mkdir -p "$tmp/data"
"$node" --bind 127.0.0.1 --rtmp-port "$RTMP_PORT" --http-port "$HTTP_PORT" --admin-port 0 --data-dir "$tmp/data" \
  --log-level warning --config "$tmp/soak.json" >"$tmp/node.log" 2>&1 &
server_pid=$!
wait_port "$RTMP_PORT" && wait_port "$HTTP_PORT" || die "the node did not listen (see $tmp/node.log)"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status" 2>/dev/null || echo 0; }
fds() { ls "/proc/$server_pid/fd" 2>/dev/null | wc -l; }
samples="$tmp/samples.tsv"
sampler() { # phase label written by the main loop into $tmp/phase
  local start=$SECONDS
  while kill -0 "$server_pid" 2>/dev/null; do
    printf '%s\t%d\t%s\t%s\n' "$(cat "$tmp/phase" 2>/dev/null || echo -)" $(((SECONDS - start) / 60)) "$(rss_kib)" "$(fds)" >>"$samples"
    sleep "$SAMPLE_SECONDS"
  done
}
echo idle >"$tmp/phase"
sampler &
pids+=($!)
idle_rss=$(rss_kib)

publish_loop() { # stream seconds-min seconds-max end-epoch
  while ((SECONDS < $4)); do
    local length=$(($2 + RANDOM % ($3 - $2 + 1)))
    ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/audio.flv" -t "$length" -c copy -f flv \
      "rtmp://127.0.0.1:$RTMP_PORT/live/$1" >>"$tmp/publishers.log" 2>&1 || true
    sleep 1
  done
}

# --- 1. scale ------------------------------------------------------------------------------
echo scale >"$tmp/phase"
ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/audio.flv" -c copy -f flv \
  "rtmp://127.0.0.1:$RTMP_PORT/live/soak" >>"$tmp/publishers.log" 2>&1 &
pids+=($!)
sleep 3
rtmp_viewers=$((SOAK_VIEWERS / 2))
flv_viewers=$((SOAK_VIEWERS - rtmp_viewers))
log "scale: $rtmp_viewers RTMP + $flv_viewers HTTP-FLV viewers for $SOAK_MINUTES min"
"$bench" --rtmp-url "rtmp://127.0.0.1:$RTMP_PORT/live/soak" --flv-url "http://127.0.0.1:$HTTP_PORT/live/soak.flv" \
  --rtmp-viewers "$rtmp_viewers" --flv-viewers "$flv_viewers" --ramp-ms 0.5 --first-frame-timeout 60 --first-frame audio \
  --duration $((SOAK_MINUTES * 60)) --server-pid "$server_pid" --threads 1 --label scale --json \
  >"$tmp/scale.json" 2>"$tmp/scale.log" || log "fanout-bench ended with an error (see $tmp/scale.log)"
scale_peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$server_pid/status")
kill "${pids[-1]}" 2>/dev/null || true
echo settle-1 >"$tmp/phase"
sleep "$SETTLE_SECONDS"
baseline_rss=$(rss_kib)
log "baseline after scale: $baseline_rss KiB"

# --- 2. churn ------------------------------------------------------------------------------
echo churn >"$tmp/phase"
end=$((SECONDS + CHURN_MINUTES * 60))
for i in $(seq 1 "$CHURN_PUBLISHERS"); do
  publish_loop "churn$i" 20 60 "$end" &
  pids+=($!)
done
sleep 3
viewer_loop() { # viewers
  while ((SECONDS < end)); do
    local stream="churn$((1 + RANDOM % CHURN_PUBLISHERS))"
    "$bench" --rtmp-url "rtmp://127.0.0.1:$RTMP_PORT/live/$stream" --flv-url "http://127.0.0.1:$HTTP_PORT/live/$stream.flv" \
      --rtmp-viewers $(($1 / 2)) --flv-viewers $(($1 - $1 / 2)) --ramp-ms 2 --first-frame-timeout 5 --first-frame audio \
      --duration 20 --server-pid "$server_pid" --label churn --json >>"$tmp/churn.json" 2>>"$tmp/churn.log" || true
  done
}
log "churn: $CHURN_PUBLISHERS publishers and $CHURN_VIEWERS viewers coming and going for $CHURN_MINUTES min"
viewer_loop $((CHURN_VIEWERS / 2)) &
pids+=($!)
viewer_loop $((CHURN_VIEWERS - CHURN_VIEWERS / 2)) &
pids+=($!)
while ((SECONDS < end)); do sleep 5; done
sleep 25 # the last generator runs finish their 20 s
for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
pkill -f "$tmp/audio.flv" 2>/dev/null || true

# --- 3. settle -----------------------------------------------------------------------------
echo settle-2 >"$tmp/phase"
sleep "$SETTLE_SECONDS"
final_rss=$(rss_kib)
final_fds=$(fds)

# --- report --------------------------------------------------------------------------------
field() { sed -n "s/.*\"$1\" *: *\\([0-9.]*\\).*/\\1/p" "$2" | head -1; }
churn_runs=$(grep -c '"label"' "$tmp/churn.json" 2>/dev/null || echo 0)
echo
echo "### Soak: $(date +%F), $SOAK_VIEWERS viewers for $SOAK_MINUTES min, then $CHURN_PUBLISHERS publishers + $CHURN_VIEWERS viewers churning for $CHURN_MINUTES min"
echo
echo "Command: \`SOAK_VIEWERS=$SOAK_VIEWERS SOAK_MINUTES=$SOAK_MINUTES CHURN_VIEWERS=$CHURN_VIEWERS CHURN_PUBLISHERS=$CHURN_PUBLISHERS CHURN_MINUTES=$CHURN_MINUTES make bench-soak\`"
echo
echo "| phase | figure |"
echo "| --- | --- |"
echo "| scale | connect failures $(field connectFailures "$tmp/scale.json"), viewers without a first frame $(field viewersWithoutFirstFrame "$tmp/scale.json"), closed early $(field viewersClosedEarly "$tmp/scale.json") (of $SOAK_VIEWERS) |"
echo "| scale | stalls in the window $(field stallsInWindow "$tmp/scale.json") (all $(field stallsTotal "$tmp/scale.json")), longest gap $(field maxGapMilliseconds "$tmp/scale.json") ms; delivered $(field deliveredMbitPerSecond "$tmp/scale.json") Mbit/s; node CPU $(field serverCPUPercent "$tmp/scale.json") %; RSS per viewer $(field rssPerViewerKiB "$tmp/scale.json") KiB |"
echo "| scale | node RSS idle $idle_rss KiB, peak $scale_peak KiB |"
echo "| churn | $churn_runs generator runs of $((CHURN_VIEWERS / 2)) viewers, 20 s each |"
echo "| settle | RSS baseline (after scale) $baseline_rss KiB, after churn $final_rss KiB ($(awk -v a="$final_rss" -v b="$baseline_rss" 'BEGIN { if (b > 0) printf "%+.1f %%", 100 * (a - b) / b; else print "n/a" }')); open descriptors $final_fds |"
echo
echo "RSS each $SAMPLE_SECONDS s (phase, minute, KiB, descriptors):"
echo
echo '```'
cat "$samples"
echo '```'
