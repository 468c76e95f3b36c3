#!/usr/bin/env bash
# Reload under load: 10 publishers and N viewers (N/2 RTMP of one stream, N/2 HTTP-FLV of
# another) on one node, measured twice in one run: once as they are, once while the
# configuration file is changed and reloaded RELOADS times (a write, then SIGHUP; limits,
# capacities, hooks and tokens of another application, the viewer queue bound). It reports,
# for both: viewers dropped, the longest gap any viewer saw, stalls, server CPU; and for the
# reloads: how many the node applied, and whether every publisher kept its session.
# Target (issue 25): 0 viewers dropped and no gap over 500 ms with 10 reloads.
#
# Environment (all optional):
#   N=1000  viewers     RELOADS=10   DURATION=40 (seconds; the reloads are spread over it)
#   SKIP_BUILD=1  use the existing .build/release binaries     KEEP_TMP=1  keep logs
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N=${N:-1000}
RELOADS=${RELOADS:-10}
DURATION=${DURATION:-40}
PUBLISHERS=10
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]'
BENCH_NAME=bench-reload
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"
trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

scripts/install-deps.sh --bench
for tool in ffmpeg ffprobe curl flock; do command -v "$tool" >/dev/null || die "$tool not found"; done
build_release estuary fanout-bench
node=.build/release/estuary
bench=.build/release/fanout-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

tmp=$(mktemp -d /tmp/estuary-bench-reload.XXXXXX)
encode_fanout_source "$tmp/src.flv"
token=$(od -An -v -tx1 -N16 /dev/urandom | tr -d ' \n')

# The configuration, version K: what a reload changes, none of it about the watched streams'
# admission (they are admitted; a reload must not disturb them).
write_config() { # version
  local k=$1
  cat >"$tmp/estuary.yaml.new" <<EOF
# bench-reload, version $k
adminToken: "$token"
drainGraceSeconds: 0
maxStreams: $((100 + k))
maxTranscodes: $((2 + k % 3))
subscriberQueueBytes: $((4194304 + 65536 * (k % 2)))
admissionTimeoutSeconds: $((4 + k % 2))
maxConnectionsPerAddress: $((5000 + k))
hooks:
  other$((k % 2)):
    onPublish: {url: "http://127.0.0.1:9/publish", timeoutSeconds: 1, retries: 0}
tokens:
  private:
    hmacSecret: "reload-secret-$k-0123456789"
EOF
  mv "$tmp/estuary.yaml.new" "$tmp/estuary.yaml"
}

sessions() { # admin-port: the publishers' session ids, sorted
  curl -s -m 5 -H "Authorization: Bearer $token" "http://127.0.0.1:$1/api/v1/sessions?kind=publish" |
    { grep -o '"id":"p-[0-9a-f]*"' || true; } | sort | tr '\n' ' '
}

metric() { # admin-port name labels
  curl -s -m 5 "http://127.0.0.1:$1/metrics" | { grep "^$2{$3}" || true; } | awk '{ s += $2 } END { print s + 0 }'
}

measure() { # label reloads
  local label=$1 reloads=$2 rtmp http admin pid before after applied i
  wait_quiet
  pick_port rtmp 29551
  pick_port http 29181
  pick_port admin 29191
  write_config 0
  start "estuary-$label" "$node" --bind 127.0.0.1 --rtmp-port "$rtmp" --http-port "$http" --admin-port "$admin" \
    --data-dir "$tmp/data-$label" --log-level notice --config "$tmp/estuary.yaml"
  pid=$started
  wait_http "estuary-$label" "http://127.0.0.1:$http/healthz" "$pid" 20
  for ((i = 0; i < PUBLISHERS; i++)); do
    start "publisher-$label-$i" ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/src.flv" -c copy -f flv "rtmp://127.0.0.1:$rtmp/live/s$i"
  done
  for ((i = 0; i < 50; i++)); do
    [[ $(http_code "http://127.0.0.1:$http/live/s1.flv") == 200 ]] && break
    sleep 0.2
  done
  sleep 3
  before=$(sessions "$admin")
  [[ $(wc -w <<<"$before") -eq $PUBLISHERS ]] || die "$label: $(wc -w <<<"$before") of $PUBLISHERS publishers are live"
  log "$label: $N viewers for ${DURATION}s, $reloads reloads"
  timeout $((DURATION + 120)) "$bench" --rtmp-url "rtmp://127.0.0.1:$rtmp/live/s0" --rtmp-viewers $((N / 2)) \
    --flv-url "http://127.0.0.1:$http/live/s1.flv" --flv-viewers $((N - N / 2)) \
    --duration "$DURATION" --ramp-ms 2 --server-pid "$pid" --label "$label" --json >"$tmp/$label.json" 2>"$tmp/$label.log" &
  local generator=$!
  if ((reloads > 0)); then
    # Wait for the viewers to be on (the generator's ramp and first frames), then spread the
    # reloads over the measurement window.
    sleep $((N * 2 / 1000 + 4))
    for ((i = 1; i <= reloads; i++)); do
      write_config "$i"
      kill -HUP "$pid"
      sleep $((DURATION / (reloads + 1)))
    done
  fi
  wait "$generator" || log "warning: $label: fanout-bench failed: $(tail -3 "$tmp/$label.log")"
  after=$(sessions "$admin")
  applied=$(metric "$admin" estuary_config_reloads_total 'result="applied"')
  printf '%s\t%s\t%s\n' "$label" "$applied" "$([[ $before == "$after" ]] && echo kept || echo changed)" >>"$tmp/summary.tsv"
  kill -0 "$pid" 2>/dev/null || die "$label: the node died (see $tmp/estuary-$label.log)"
  for p in "${pids[@]}"; do stop_pid "$p"; done
  pids=()
}

measure steady 0
measure reloading "$RELOADS"

field() { # file key
  grep -o "\"$2\":[^,}]*" "$1" | head -1 | cut -d: -f2- | tr -d '"'
}
echo "Node with $PUBLISHERS publishers; $((N / 2)) RTMP viewers of one stream and $((N - N / 2)) HTTP-FLV viewers of another; window ${DURATION} s; $(nproc) cores; $(date -u +%Y-%m-%d)."
echo
echo "| run | reloads applied | viewers dropped | no first frame | longest gap (ms) | stalls > 1 s | publishers' sessions | server CPU % |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
while IFS=$'\t' read -r label applied kept; do
  file=$tmp/$label.json
  printf '| %s | %s | %s | %s | %.0f | %s | %s | %.0f |\n' "$label" "$applied" \
    "$(field "$file" viewersClosedEarly)" "$(field "$file" viewersWithoutFirstFrame)" \
    "$(field "$file" maxGapMilliseconds)" "$(field "$file" stallsTotal)" "$kept" "$(field "$file" serverCPUPercent)"
done <"$tmp/summary.tsv"
echo
awk -v a="$(field "$tmp/reloading.json" serverCPUPercent)" -v b="$(field "$tmp/steady.json" serverCPUPercent)" \
  'BEGIN { if (b > 0) printf "Server CPU while reloading / steady: %.0f / %.0f = **%.2f**\n", a, b, a / b }'
