# Shared helpers of the benchmark scripts (sourced, not run). The including script sets
# BENCH_NAME (log prefix), BUILD_LOCK, BUSY_PATTERN and DURATION first.

log() { printf '[%s %s] %s\n' "$BENCH_NAME" "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

stop_pid() { # pid: TERM, wait up to 5 s, then KILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # port: up to 10 s
  local i
  for ((i = 0; i < 100; i++)); do
    port_free "$1" || return 0
    sleep 0.1
  done
  return 1
}

free_port() { # first free port from $1 (tries 100)
  local port
  for ((port = $1; port < $1 + 100; port++)); do
    if port_free "$port"; then echo "$port"; return 0; fi
  done
  die "no free port in $1..$(($1 + 99))"
}

# Builds and other benchmarks distort CPU figures: wait (up to 10 min) until none runs and
# the build lock is free.
wait_quiet() {
  local i
  for ((i = 0; i < 120; i++)); do
    if ! pgrep -f "$BUSY_PATTERN" >/dev/null && flock -n "$BUILD_LOCK" true 2>/dev/null; then return 0; fi
    if ((i == 0)); then log "a build or another benchmark is running; waiting (up to 10 min)"; fi
    sleep 5
  done
  log "warning: the machine is still busy; the figures of this run are not trustworthy"
}

# Notes in file $1 whether anything from BUSY_PATTERN runs while a run measures.
watch_builds() {
  local i
  : >"$1"
  for ((i = 0; i < DURATION + 120; i++)); do
    if pgrep -f "$BUSY_PATTERN" >/dev/null; then echo busy >"$1"; fi
    sleep 1
  done
}

# Builds release products, one at a time, holding $BUILD_LOCK (unless SKIP_BUILD is set).
build_release() { # product...
  if [[ -n ${SKIP_BUILD:-} ]]; then return 0; fi
  log "building release $* (holding $BUILD_LOCK)"
  local product
  for product in "$@"; do flock -w 3600 "$BUILD_LOCK" swift build -c release --product "$product"; done
}

# --- for scripts that run several background processes at once -----------------------------
# `start NAME ARGS…` runs ARGS in the background with its output in $tmp/NAME.log, keeps its
# pid in `pids` (stopped on exit) and in $started; `tmp` is removed on exit unless KEEP_TMP.
pids=()
tmp=""
started=""
stop_all_on_exit() {
  local status=$? pid
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
  if [[ -n $tmp && -z ${KEEP_TMP:-} ]]; then rm -rf "$tmp"; fi
  if [[ -n $tmp && -n ${KEEP_TMP:-} ]]; then log "kept $tmp"; fi
  exit "$status"
}
start() { # name args…
  local name=$1
  shift
  "$@" >"$tmp/$name.log" 2>&1 &
  started=$!
  pids+=("$started")
}

# The project virtualenv's python (scripts/install-deps.sh makes .venv/), else python3 from PATH.
project_python() {
  if [[ -x $PWD/.venv/bin/python3 ]]; then echo "$PWD/.venv/bin/python3"; else echo python3; fi
}

# The latency benchmarks' source: 30 s of 640x360 30 fps H.264 at 600 kbit/s in 2 s GOPs,
# with AAC, published in real time by hls-latency-bench.
encode_latency_source() { # file
  log "encoding the 30 s source"
  ffmpeg -nostdin -loglevel error -y \
    -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=frequency=440:sample_rate=44100 \
    -c:v libx264 -preset veryfast -tune zerolatency -g 60 -keyint_min 60 -sc_threshold 0 -b:v 600k \
    -c:a aac -b:a 64k -t 30 "$1"
}

# The cluster benchmarks' ABR source: SECONDS (default 12) of SIZE (default 640x360) 30 fps
# H.264 at 600 kbit/s in 2 s GOPs (a keyframe every 60 frames, no scene cuts), with AAC, for
# `ffmpeg -re -stream_loop -1 -c copy` (the default abr ladder makes 360p and 240p of 640x360).
encode_failover_source() { # file [seconds] [size]
  local seconds=${2:-12} size=${3:-640x360}
  log "encoding the ${seconds} s ${size} source"
  ffmpeg -nostdin -loglevel error -y \
    -f lavfi -i "testsrc2=size=$size:rate=30" -f lavfi -i sine=frequency=440:sample_rate=44100 \
    -c:v libx264 -preset veryfast -g 60 -keyint_min 60 -sc_threshold 0 -b:v 600k \
    -c:a aac -b:a 64k -t "$seconds" "$1"
}

# The fan-out benchmarks' source: 30 s of 640x360 30 fps H.264 at 520 kbit/s in 2 s GOPs,
# with AAC, about 600 kbit/s in all, published in a loop with `ffmpeg -re -c copy`.
encode_fanout_source() { # file [video kbit/s, 520 unless given]
  local kbps=${2:-520}
  log "encoding the 30 s source (video ${kbps} kbit/s)"
  ffmpeg -nostdin -loglevel error -y \
    -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=frequency=440:sample_rate=44100 \
    -c:v libx264 -preset veryfast -b:v "${kbps}k" -maxrate "${kbps}k" -bufsize "$((kbps * 2))k" -g 60 \
    -c:a aac -b:a 64k -t 30 "$1"
}

# Sets rtmp_module to Debian's nginx-rtmp module (libnginx-mod-rtmp), the reference server.
find_rtmp_module() {
  rtmp_module=""
  local candidate
  for candidate in /usr/lib/nginx/modules/ngx_rtmp_module.so /usr/share/nginx/modules/ngx_rtmp_module.so; do
    if [[ -f $candidate ]]; then rtmp_module=$candidate; break; fi
  done
  [[ -n $rtmp_module ]] || die "ngx_rtmp_module.so not found (apt-get install libnginx-mod-rtmp)"
}

# nginx-rtmp's configuration for the fan-out benchmarks: one worker, 4096-byte chunks, live
# application "live", room for `viewers` connections. Writes $1/nginx.conf (and $1/logs).
write_nginx_rtmp_conf() { # dir port viewers
  local dir=$1 port=$2 viewers=$3
  mkdir -p "$dir/logs"
  chmod 755 "$dir"
  cat >"$dir/nginx.conf" <<CONF
load_module $rtmp_module;
worker_processes 1;
worker_rlimit_nofile $((2 * viewers + 256));
daemon off;
master_process on;
error_log $dir/logs/error.log warn;
pid $dir/nginx.pid;
events { worker_connections $((2 * viewers + 256)); }
rtmp { server { listen 127.0.0.1:$port; chunk_size 4096; application live { live on; } } }
CONF
}

# Runs one traced fan-out measurement: a looping publisher to `url`, `fanout-bench` with the
# given viewer arguments for DURATION s, and `trace_hook name pid` (defined by the caller)
# 3 s in; then stops the publisher and the server. Needs $tmp, $bench, DURATION.
measure_traced() { # name server-pid traced-pid rtmp-url bench-args…
  local name=$1 server=$2 traced=$3 url=$4
  shift 4
  start "publisher-$name" ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/src.flv" -c copy -f flv "$url"
  local publisher=$started
  sleep 4
  wait_quiet
  log "$name: fanout-bench $* for ${DURATION}s; tracing pid $traced"
  timeout $((DURATION + 120)) "$bench" --rtmp-url "$url" "$@" --duration "$DURATION" --ramp-ms 2 \
    --server-pid "$server" --label "$name" --json >"$tmp/$name.json" 2>"$tmp/$name.log" &
  local generator=$!
  sleep 3
  trace_hook "$name" "$traced"
  wait "$generator" || log "warning: $name: fanout-bench failed: $(tail -2 "$tmp/$name.log")"
  stop_pid "$publisher"
  stop_pid "$server"
}

# Estuary with RTMP viewers, Estuary with HTTP-FLV viewers, then nginx-rtmp's worker with
# RTMP viewers, each measured by `measure_traced` (N viewers; ports RTMP, HTTP, NGINX).
measure_three_servers() {
  local kind server viewers worker
  for kind in rtmp flv; do
    start "estuary-$kind" "$node" --bind 127.0.0.1 --rtmp-port "$RTMP" --http-port "$HTTP" --data-dir "$tmp/data-$kind" --log-level warning
    server=$started
    wait_port "$RTMP" && wait_port "$HTTP" || die "Estuary did not listen"
    if [[ $kind == rtmp ]]; then viewers=(--rtmp-viewers "$N"); else viewers=(--rtmp-viewers 0 --flv-url "http://127.0.0.1:$HTTP/$STREAM.flv" --flv-viewers "$N"); fi
    measure_traced "estuary-$kind" "$server" "$server" "rtmp://127.0.0.1:$RTMP/$STREAM" "${viewers[@]}"
  done
  write_nginx_rtmp_conf "$tmp/nginx" "$NGINX" "$N"
  start nginx nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/logs/error.log"
  server=$started
  wait_port "$NGINX" || die "nginx did not listen"
  worker=$(pgrep -P "$server" | head -1)
  [[ -n $worker ]] || die "no nginx worker"
  measure_traced nginx "$server" "$worker" "rtmp://127.0.0.1:$NGINX/$STREAM" --rtmp-viewers "$N"
}

# The setup shared by the traced fan-out benchmarks (bench-syscalls, bench-profile): checks
# `tool`, builds, makes $tmp, encodes the source and picks the ports RTMP, HTTP and NGINX.
# Needs N, DURATION, TRACE_SECONDS (the tracer's window) and BENCH_NAME.
prepare_traced_fanout() { # tool
  local tool
  for tool in ffmpeg nginx "$1" flock pgrep; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh --bench)"; done
  find_rtmp_module
  ((TRACE_SECONDS + 4 < DURATION)) || die "the trace ($TRACE_SECONDS s) must leave at least 4 s of DURATION"
  build_release estuary fanout-bench
  node=.build/release/estuary
  bench=.build/release/fanout-bench
  [[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  tmp=$(mktemp -d "/tmp/estuary-$BENCH_NAME.XXXXXX")
  chmod 755 "$tmp" # nginx workers run as nobody when started by root
  encode_fanout_source "$tmp/src.flv"
  RTMP=$(free_port 29361)
  HTTP=$(free_port 29091)
  NGINX=$(free_port 29461)
}

# --- for scripts that run a cluster of nodes -------------------------------------------------
# pick_port VAR BASE: sets VAR to the first free port from BASE that no earlier pick_port
# handed out (nodes start one after another, and some do not listen on every port).
picked_ports=" "
pick_port() {
  local port
  for ((port = $2; port < $2 + 100; port++)); do
    if [[ $picked_ports != *" $port "* ]] && port_free "$port"; then
      picked_ports+="$port "
      printf -v "$1" '%s' "$port"
      return 0
    fi
  done
  die "no free port in $2..$(($2 + 99))"
}

http_code() { # url: the status of a GET (000 when none), within 1 s; a live body is cut off
  curl -s -o /dev/null -m 1 -w '%{http_code}' "$1" 2>/dev/null || true
}

wait_http() { # name url pid seconds: until GET url answers 200; dies if pid exits or time runs out
  local deadline=$((SECONDS + $4))
  until [[ $(http_code "$2") == 200 ]]; do
    kill -0 "$3" 2>/dev/null || die "$1 exited (see $tmp/$1.log): $(tail -3 "$tmp/$1.log" 2>/dev/null)"
    ((SECONDS < deadline)) || die "$1: no 200 from $2 within $4 s (logs in $tmp)"
    sleep 0.2
  done
}
