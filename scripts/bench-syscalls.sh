#!/usr/bin/env bash
# Syscalls per delivered MB (issue 15): `strace -c -f` on the serving process for STRACE
# seconds in the middle of a fan-out run, Estuary (RTMP viewers, then HTTP-FLV viewers)
# beside nginx-rtmp (RTMP viewers), N viewers of one 600 kbit/s stream each, in one run.
# strace slows the traced process: the counts are what matter, not the CPU.
#
# Environment: N=200 DURATION=20 STRACE=10 SKIP_BUILD=1 KEEP_TMP=1
#              RESULTS=path (default /tmp/syscalls-bench-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N=${N:-200}
DURATION=${DURATION:-20}
STRACE=${STRACE:-10}
RESULTS=${RESULTS:-/tmp/syscalls-bench-results.md}
STREAM=live/syscalls
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|transcode-bench'
BENCH_NAME=bench-syscalls
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

for tool in ffmpeg nginx strace flock pgrep; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh --bench)"; done
find_rtmp_module
((STRACE + 4 < DURATION)) || die "STRACE must leave at least 4 s of DURATION"
build_release node fanout-bench
node=.build/release/node
bench=.build/release/fanout-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d /tmp/estuary-bench-syscalls.XXXXXX)
chmod 755 "$tmp" # nginx workers run as nobody when started by root

encode_fanout_source "$tmp/src.flv"

RTMP=$(free_port 29361)
HTTP=$(free_port 29091)
NGINX=$(free_port 29461)

measure() { # name server-pid traced-pid rtmp-url bench-args…
  local name=$1 server=$2 traced=$3 url=$4
  shift 4
  start "publisher-$name" ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/src.flv" -c copy -f flv "$url"
  local publisher=$started
  sleep 4
  wait_quiet
  log "$name: $N viewers for ${DURATION}s; strace of pid $traced for ${STRACE}s"
  timeout $((DURATION + 120)) "$bench" --rtmp-url "$url" "$@" --duration "$DURATION" --ramp-ms 2 \
    --server-pid "$server" --label "$name" --json >"$tmp/$name.json" 2>"$tmp/$name.log" &
  local generator=$!
  sleep 3
  timeout -s INT "$STRACE" strace -c -f -p "$traced" -o "$tmp/$name.strace" 2>/dev/null || true
  wait "$generator" || log "warning: $name: fanout-bench failed: $(tail -2 "$tmp/$name.log")"
  stop_pid "$publisher"
  stop_pid "$server"
}

# Estuary, RTMP viewers; then Estuary, HTTP-FLV viewers.
for kind in rtmp flv; do
  start "estuary-$kind" "$node" --bind 127.0.0.1 --rtmp-port "$RTMP" --http-port "$HTTP" --data-dir "$tmp/data-$kind" --log-level warning
  server=$started
  wait_port "$RTMP" && wait_port "$HTTP" || die "Estuary did not listen"
  if [[ $kind == rtmp ]]; then viewers=(--rtmp-viewers "$N"); else viewers=(--rtmp-viewers 0 --flv-url "http://127.0.0.1:$HTTP/$STREAM.flv" --flv-viewers "$N"); fi
  measure "estuary-$kind" "$server" "$server" "rtmp://127.0.0.1:$RTMP/$STREAM" "${viewers[@]}"
done

# nginx-rtmp, RTMP viewers: its one worker process serves them.
mkdir -p "$tmp/nginx/logs"
chmod 755 "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<EOF
load_module $rtmp_module;
worker_processes 1;
worker_rlimit_nofile $((2 * N + 256));
daemon off;
master_process on;
error_log $tmp/nginx/logs/error.log warn;
pid $tmp/nginx/nginx.pid;
events { worker_connections $((2 * N + 256)); }
rtmp { server { listen 127.0.0.1:$NGINX; chunk_size 4096; application live { live on; } } }
EOF
start nginx nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/logs/error.log"
server=$started
wait_port "$NGINX" || die "nginx did not listen"
worker=$(pgrep -P "$server" | head -1)
[[ -n $worker ]] || die "no nginx worker"
measure nginx "$server" "$worker" "rtmp://127.0.0.1:$NGINX/$STREAM" --rtmp-viewers "$N"

python=$(project_python)
"$python" - "$tmp" "$STRACE" "$N" <<'PY' >"$RESULTS"
import json, os, re, sys
tmp, seconds, viewers = sys.argv[1], float(sys.argv[2]), sys.argv[3]
print(f"### Syscalls per delivered MB ({viewers} viewers, strace -c -f for {seconds:.0f} s)")
print()
print("| server, viewers | delivered MB in the trace | syscalls | per MB | writes (write, writev, sendmsg) per MB | epoll_wait per MB | top syscalls |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name in ["estuary-rtmp", "estuary-flv", "nginx"]:
    try:
        report = json.load(open(os.path.join(tmp, f"{name}.json")))
        lines = open(os.path.join(tmp, f"{name}.strace")).read().splitlines()
    except OSError as error:
        print(f"| {name} | n/a ({error}) | | | | | |")
        continue
    calls = {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 5 and re.match(r"^[0-9.]+$", parts[0]) and parts[-1] != "total":
            count = int(parts[3]) if parts[3].isdigit() else 0
            calls[parts[-1]] = count
    total = sum(calls.values())
    megabytes = report.get("deliveredMbitPerSecond", 0) * seconds / 8
    per = lambda n: n / megabytes if megabytes else float("nan")
    writes = sum(calls.get(k, 0) for k in ("write", "writev", "sendmsg", "sendto"))
    top = ", ".join(f"{k} {v}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:4])
    print(f"| {name} | {megabytes:.1f} | {total} | **{per(total):.0f}** | {per(writes):.0f} | {per(calls.get('epoll_wait', 0)):.0f} | {top} |")
PY
cat "$RESULTS"
log "written to $RESULTS"
