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

TRACE_SECONDS=$STRACE
prepare_traced_fanout strace

trace_hook() { # name pid
  timeout -s INT "$STRACE" strace -c -f -p "$2" -o "$tmp/$1.strace" 2>/dev/null || true
}
measure_three_servers

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
