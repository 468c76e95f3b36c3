#!/usr/bin/env bash
# Fan-out benchmark: one published stream, N viewers, Estuary against nginx-rtmp in one run.
#
# For each N in N_LIST it measures, each time on a freshly started server:
#   1. Estuary, N RTMP + N HTTP-FLV viewers
#   2. Estuary, N RTMP viewers
#   3. Estuary, N HTTP-FLV viewers
#   4. nginx-rtmp (Debian libnginx-mod-rtmp), N RTMP viewers
#   5. Estuary, N RTMPS viewers (RTMP over TLS; `rtmps`)
#   6. Estuary, N HTTPS-FLV viewers (`https`)
# and prints a markdown table (see docs/benchmarks.md for how to read it), with the TLS cost
# (CPU per Gbit over TLS / without) when 5 or 6 ran beside 2 or 3. The TLS runs use a
# certificate made for the run with openssl; the publisher still pushes plain RTMP.
#
# Environment (all optional):
#   N_LIST="100 500 1000"  viewer counts          DURATION=20   measurement window, seconds
#   RAMP_MS=2              delay between connects GEN_THREADS=1 load generator event loops
#   SKIP_BUILD=1           use the existing .build/release binaries
#   RESULTS_DIR=dir        also keep the JSON results and the table there
#   KEEP_TMP=1             keep the temporary directory (logs, nginx.conf)
#   RUNS="mixed rtmp flv nginx"  which configurations (1–6 above: mixed rtmp flv nginx rtmps https), in this order
#   RTMP_PORT HTTP_PORT NGINX_PORT   loopback ports (default: the first free ones from 29351, 29081, 29451)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N_LIST=${N_LIST:-"100 500 1000"}
DURATION=${DURATION:-20}
RUNS=${RUNS:-"mixed rtmp flv nginx"}
RAMP_MS=${RAMP_MS:-2}
GEN_THREADS=${GEN_THREADS:-1}
STREAM=live/bench
BUILD_LOCK=/tmp/estuary-build.lock
# Processes whose CPU use would distort the figures: builds, test runs, fuzzers.
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]'
BENCH_NAME=bench-fanout
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"


# --- processes we start, and their cleanup -------------------------------------------------
# Only the publisher and the server run in the background, one of each at a time; a stopped
# process's id is forgotten at once so that cleanup never signals a recycled id.
publisher_pid=""
server_pid=""
watcher_pid=""
tmp=""
cleanup() {
  local status=$?
  if [[ -n $watcher_pid ]]; then stop_pid "$watcher_pid"; fi
  if [[ -n $publisher_pid ]]; then stop_pid "$publisher_pid"; fi
  if [[ -n $server_pid ]]; then stop_pid "$server_pid"; fi
  if [[ -n $tmp && -z ${KEEP_TMP:-} ]]; then rm -rf "$tmp"; fi
  if [[ -n $tmp && -n ${KEEP_TMP:-} ]]; then log "kept $tmp"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM


# --- dependencies and binaries -------------------------------------------------------------
scripts/install-deps.sh --bench
for tool in ffmpeg ffprobe nginx curl flock; do command -v "$tool" >/dev/null || die "$tool not found"; done

find_rtmp_module

build_release estuary fanout-bench
node=.build/release/estuary
bench=.build/release/fanout-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"

RTMP_PORT=${RTMP_PORT:-$(free_port 29351)}
HTTP_PORT=${HTTP_PORT:-$(free_port 29081)}
NGINX_PORT=${NGINX_PORT:-$(free_port 29451)}
RTMPS_PORT=${RTMPS_PORT:-$(free_port 29361)}
HTTPS_PORT=${HTTPS_PORT:-$(free_port 29091)}
for port in "$RTMP_PORT" "$HTTP_PORT" "$NGINX_PORT" "$RTMPS_PORT" "$HTTPS_PORT"; do port_free "$port" || die "port $port is in use"; done

# Every viewer is a socket in the generator and in the server.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)
max_n=0
for n in $N_LIST; do
  if ((n > max_n)); then max_n=$n; fi
done
((nofile > 2 * max_n + 256)) || log "warning: open-file limit $nofile is low for $max_n + $max_n viewers"

tmp=$(mktemp -d /tmp/estuary-bench-fanout.XXXXXX)
chmod 755 "$tmp" # nginx workers run as nobody when started by root

# --- the source: 600 kbit/s H.264 + AAC, made once, published in a loop --------------------
encode_fanout_source "$tmp/src.flv"
source_kbps=$(ffprobe -v error -show_entries format=bit_rate -of default=nw=1:nk=1 "$tmp/src.flv")
source_kbps=$((source_kbps / 1000))

start_publisher() { # url
  ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/src.flv" -c copy -f flv "$1" \
    >>"$tmp/publisher.log" 2>&1 &
  publisher_pid=$!
}

# The TLS runs' certificate (ECDSA P-256, as a CDN would serve), made once per run of the script.
tls_args=()
if [[ " $RUNS " == *" rtmps "* || " $RUNS " == *" https "* ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 \
    -keyout "$tmp/tls.key" -out "$tmp/tls.pem" >/dev/null 2>&1 || die "openssl could not make the TLS certificate"
  tls_args=(--rtmps-port "$RTMPS_PORT" --https-port "$HTTPS_PORT" --tls-certificate "$tmp/tls.pem" --tls-key "$tmp/tls.key")
fi

start_estuary() { # run name [tls]
  local extra=()
  if [[ ${2:-} == tls ]]; then extra=("${tls_args[@]}"); fi
  mkdir -p "$tmp/data-$1"
  "$node" --bind 127.0.0.1 --rtmp-port "$RTMP_PORT" --http-port "$HTTP_PORT" --admin-port 0 "${extra[@]}" \
    --data-dir "$tmp/data-$1" --log-level warning ${ESTUARY_ARGS:-} >"$tmp/estuary-$1.log" 2>&1 &
  server_pid=$!
  wait_port "$RTMP_PORT" && wait_port "$HTTP_PORT" || die "Estuary did not listen (see $tmp/estuary-$1.log)"
}

start_nginx() { # run name
  local prefix="$tmp/nginx-$1"
  write_nginx_rtmp_conf "$prefix" "$NGINX_PORT" "$max_n"
  nginx -p "$prefix/" -c "$prefix/nginx.conf" -e "$prefix/logs/error.log" >"$prefix/logs/stdout.log" 2>&1 &
  server_pid=$!
  wait_port "$NGINX_PORT" || die "nginx did not listen (see $prefix/logs)"
}

# Waits until the stream plays: HTTP-FLV answers 200 (Estuary), or the publisher has been up 3 s.
wait_stream() { # kind
  local i code
  sleep 1
  if [[ $1 == estuary ]]; then
    for ((i = 0; i < 50; i++)); do
      code=$(curl -s -o /dev/null -m 0.5 -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/$STREAM.flv" || true)
      [[ $code == 200 ]] && break
      sleep 0.2
    done
    [[ $code == 200 ]] || die "the stream never became playable on Estuary (HTTP $code)"
  fi
  # A full GOP (2 s) in the server's cache before the baseline RSS is read.
  sleep 3
  kill -0 "$publisher_pid" 2>/dev/null || die "the publisher exited (see $tmp/publisher.log)"
}

results=()
busy_runs=()
# A run during which a build ran is repeated (up to 3 attempts); the last attempt is kept.
run() { # server rtmp-viewers flv-viewers
  local attempt name="$1-$2-$3"
  for ((attempt = 1; attempt <= 3; attempt++)); do
    run_once "$@"
    [[ -s $tmp/$name.busy ]] || break
    if ((attempt < 3)); then log "$name: a build ran during the measurement; repeating"; fi
  done
  if [[ -s $tmp/$name.busy ]]; then busy_runs+=("$name"); fi
  if [[ -s $tmp/$name.json ]]; then results+=("$tmp/$name.json"); fi
}
run_once() { # server rtmp-viewers flv-viewers
  local server=$1 rtmp=$2 flv=$3 name="$1-$2-$3" rtmp_url view_url args=()
  wait_quiet
  if [[ $server == estuary ]]; then
    start_estuary "$name"
    rtmp_url="rtmp://127.0.0.1:$RTMP_PORT/$STREAM"
    view_url=$rtmp_url
    args=(--flv-url "http://127.0.0.1:$HTTP_PORT/$STREAM.flv" --flv-viewers "$flv")
  elif [[ $server == estuary-tls ]]; then
    start_estuary "$name" tls
    wait_port "$RTMPS_PORT" && wait_port "$HTTPS_PORT" || die "Estuary's TLS listeners did not listen (see $tmp/estuary-$name.log)"
    rtmp_url="rtmp://127.0.0.1:$RTMP_PORT/$STREAM"
    view_url="rtmps://127.0.0.1:$RTMPS_PORT/$STREAM"
    args=(--flv-url "https://127.0.0.1:$HTTPS_PORT/$STREAM.flv" --flv-viewers "$flv")
  else
    start_nginx "$name"
    rtmp_url="rtmp://127.0.0.1:$NGINX_PORT/$STREAM"
    view_url=$rtmp_url
  fi
  start_publisher "$rtmp_url"
  wait_stream "${server%-tls}"
  log "$name: measuring ${DURATION}s"
  watch_builds "$tmp/$name.busy" &
  watcher_pid=$!
  timeout $((DURATION + 120)) "$bench" --rtmp-url "$view_url" --rtmp-viewers "$rtmp" "${args[@]}" \
    --duration "$DURATION" --ramp-ms "$RAMP_MS" --threads "$GEN_THREADS" \
    --server-pid "$server_pid" --label "$server" --json >"$tmp/$name.json" 2>"$tmp/$name.log" ||
    log "warning: $name: fanout-bench failed (exit $?): $(tail -3 "$tmp/$name.log")"
  stop_pid "$watcher_pid"
  watcher_pid=""
  tail -1 "$tmp/$name.log" >&2
  stop_pid "$publisher_pid"
  publisher_pid=""
  stop_pid "$server_pid"
  server_pid=""
}

started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for n in $N_LIST; do
  for config in $RUNS; do
    case $config in
      mixed) run estuary "$n" "$n" ;;
      rtmp) run estuary "$n" 0 ;;
      flv) run estuary 0 "$n" ;;
      nginx) run nginx "$n" 0 ;;
      rtmps) run estuary-tls "$n" 0 ;;
      https) run estuary-tls 0 "$n" ;;
      *) die "unknown run '$config' in RUNS (mixed rtmp flv nginx rtmps https)" ;;
    esac
  done
done

# --- the table -------------------------------------------------------------------------------
# A number or string of a result: top level, or of one viewer kind (rtmp, http-flv) in byKind.
field() { # file key [kind]
  local text
  if [[ -n ${3:-} ]]; then
    text=$({ grep -o "\"$3\":{[^}]*}" "$1" || true; } | head -1)
  else
    text=$(sed -E 's/"byKind":\{("[^"]*":\{[^}]*\},?)*\},?//' "$1")
  fi
  { grep -o "\"$2\":[^,}]*" <<<"$text" || true; } | head -1 | cut -d: -f2- | tr -d '"'
}
num() { # value digits
  if [[ -z $1 || $1 == null ]]; then printf 'n/a'; else printf "%.${2}f" "$1"; fi
}
table() {
  echo "Source: ${source_kbps} kbit/s (H.264 640x360 30 fps, GOP 2 s, + AAC); window ${DURATION} s;" \
    "$(nproc) cores; $(date -u +%Y-%m-%d); started $started_at."
  echo
  echo "| server | viewers (rtmp/flv) | delivered Mbit/s (expected) | server CPU % | CPU-s per Gbit | RSS per viewer (KiB) | TTFF p50 / p95 (ms) | TTFF p95 rtmp / flv (ms) | stalls (window / all) | no frame / closed | generator / other CPU % |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  local file rtmp flv
  for file in "${results[@]}"; do
    rtmp=$(field "$file" rtmpViewers)
    flv=$(field "$file" flvViewers)
    printf '| %s | %s/%s | %s (%s) | %s | %s | %s | %s / %s | %s | %s / %s | %s / %s | %s / %s |\n' \
      "$(field "$file" label)" "$rtmp" "$flv" \
      "$(num "$(field "$file" deliveredMbitPerSecond)" 1)" "$(((rtmp + flv) * source_kbps / 1000))" \
      "$(num "$(field "$file" serverCPUPercent)" 0)" \
      "$(num "$(field "$file" serverCPUSecondsPerGbit)" 3)" \
      "$(num "$(field "$file" rssPerViewerKiB)" 1)" \
      "$(num "$(field "$file" ttffP50Milliseconds)" 0)" "$(num "$(field "$file" ttffP95Milliseconds)" 0)" \
      "$(num "$(field "$file" ttffP95Milliseconds rtmp)" 0) / $(num "$(field "$file" ttffP95Milliseconds http-flv)" 0)" \
      "$(field "$file" stallsInWindow)" "$(field "$file" stallsTotal)" \
      "$(field "$file" viewersWithoutFirstFrame)" "$(field "$file" viewersClosedEarly)" \
      "$(num "$(field "$file" generatorCPUPercent)" 0)" "$(num "$(field "$file" otherCPUPercent)" 0)"
  done
  if ((${#busy_runs[@]} > 0)); then
    echo
    echo "Warning: a swift build ran during ${busy_runs[*]}; their CPU figures are not trustworthy."
  fi
  echo
  echo "CPU per delivered Gbit, Estuary / nginx-rtmp's RTMP (targets: RTMP ≤ 0.33, HTTP-FLV ≤ 0.4):"
  echo
  local n kind estuary nginx
  for n in $N_LIST; do
    nginx=$tmp/nginx-$n-0.json
    for kind in RTMP HTTP-FLV; do
      if [[ $kind == RTMP ]]; then estuary=$tmp/estuary-$n-0.json; else estuary=$tmp/estuary-0-$n.json; fi
      if [[ -s $estuary && -s $nginx ]]; then
        awk -v n="$n" -v k="$kind" -v a="$(field "$estuary" serverCPUSecondsPerGbit)" -v b="$(field "$nginx" serverCPUSecondsPerGbit)" \
          -v m="$(field "$estuary" rssPerViewerKiB)" \
          'BEGIN { if (b > 0 && a != "") printf "- N = %d, %s: %.3f / %.3f = **%.2f**; %.1f KiB per viewer\n", n, k, a, b, a / b, m; else printf "- N = %d, %s: n/a\n", n, k }'
      else
        echo "- N = $n, $kind: n/a (a run failed)"
      fi
    done
  done
  local tls plain kind
  if [[ " $RUNS " == *" rtmps "* || " $RUNS " == *" https "* ]]; then
    echo
    echo "TLS cost, CPU per delivered Gbit over TLS / without, in this run (target ≤ 1.5), and the burst of TLS viewers (RAMP_MS=$RAMP_MS):"
    echo
    for n in $N_LIST; do
      for kind in RTMPS HTTPS-FLV; do
        if [[ $kind == RTMPS ]]; then tls=$tmp/estuary-tls-$n-0.json plain=$tmp/estuary-$n-0.json; else tls=$tmp/estuary-tls-0-$n.json plain=$tmp/estuary-0-$n.json; fi
        if [[ -s $tls && -s $plain ]]; then
          awk -v n="$n" -v k="$kind" -v a="$(field "$tls" serverCPUSecondsPerGbit)" -v b="$(field "$plain" serverCPUSecondsPerGbit)" \
            -v p="$(field "$tls" ttffMaxMilliseconds)" -v m="$(field "$tls" rssPerViewerKiB)" \
            'BEGIN { if (b > 0 && a != "") printf "- N = %d, %s: %.3f / %.3f = **%.2f**; %.1f KiB per viewer; the slowest of %d viewers had its first frame (TLS and RTMP or HTTP handshakes done) %.0f ms after its connect: (with RAMP_MS=0, all connecting at once: ≥ %.0f handshakes/s)\n", n, k, a, b, a / b, m, n, p, (p > 0 ? n * 1000 / p : 0); else printf "- N = %d, %s: n/a\n", n, k }'
        else
          echo "- N = $n, $kind: n/a (a run failed, or its plain run was not in RUNS)"
        fi
      done
    done
  fi
}
table | tee "$tmp/table.md"
for file in "${results[@]}"; do
  if grep -q '"failureReasons":{"' "$file"; then
    log "$(basename "$file" .json) failures: $(grep -o '"failureReasons":{[^}]*}' "$file")"
  fi
done
if [[ -n ${RESULTS_DIR:-} ]]; then
  mkdir -p "$RESULTS_DIR"
  cp "$tmp"/*.json "$tmp/table.md" "$RESULTS_DIR"/
  log "results in $RESULTS_DIR"
fi
