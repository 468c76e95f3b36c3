#!/usr/bin/env bash
# Where a fan-out's CPU goes (issue 15): `perf record` of the serving process for PERF
# seconds in the middle of a fan-out run, Estuary (RTMP viewers, then HTTP-FLV viewers)
# beside nginx-rtmp's worker (RTMP viewers), N viewers of one 600 kbit/s stream each, in one
# run. Reports, per server: CPU per delivered Gbit, the share of kernel and user time, the
# share of each binary and library, and the functions with the most samples.
#
# Environment: N=1000 DURATION=20 PERF=10 SKIP_BUILD=1 KEEP_TMP=1
#              RESULTS=path (default /tmp/profile-bench-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

N=${N:-1000}
DURATION=${DURATION:-20}
PERF=${PERF:-10}
RESULTS=${RESULTS:-/tmp/profile-bench-results.md}
STREAM=live/profile
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|transcode-bench'
BENCH_NAME=bench-profile
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

TRACE_SECONDS=$PERF
prepare_traced_fanout perf

trace_hook() { # name pid
  perf record -F 999 -g -p "$2" -o "$tmp/$1.perf" -- sleep "$PERF" >/dev/null 2>&1 || log "warning: perf record of $1 failed"
  perf report -i "$tmp/$1.perf" --no-children --sort dso --stdio 2>/dev/null >"$tmp/$1.dso" || true
  perf report -i "$tmp/$1.perf" --no-children --sort sym --stdio -g none 2>/dev/null >"$tmp/$1.sym" || true
}
measure_three_servers

python=$(project_python)
"$python" - "$tmp" "$PERF" "$N" <<'PY' >"$RESULTS"
import json, os, re, subprocess, sys
tmp, seconds, viewers = sys.argv[1], float(sys.argv[2]), sys.argv[3]

def shares(path):
    """(percent, name) rows of a `perf report --stdio` listing."""
    rows = []
    for line in open(path, errors="replace"):
        match = re.match(r"^\s+([0-9.]+)%\s+(.*\S)\s*$", line)
        if match:
            rows.append((float(match.group(1)), match.group(2)))
    return rows

def demangle(names):
    try:
        out = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                             capture_output=True, text=True, timeout=60).stdout.splitlines()
        return out if len(out) == len(names) else names
    except (OSError, subprocess.SubprocessError):
        return names

print(f"### Where the CPU goes ({viewers} viewers, perf record -g for {seconds:.0f} s)")
print()
print("| server, viewers | CPU-s per Gbit | kernel | by binary (share of samples) |")
print("| --- | --- | --- | --- |")
tops = {}
for name in ["estuary-rtmp", "estuary-flv", "nginx"]:
    try:
        report = json.load(open(os.path.join(tmp, f"{name}.json")))
        dsos = shares(os.path.join(tmp, f"{name}.dso"))
        syms = shares(os.path.join(tmp, f"{name}.sym"))
    except OSError as error:
        print(f"| {name} | n/a ({error}) | | |")
        continue
    kernel = sum(p for p, d in dsos if "kernel" in d)
    binaries = ", ".join(f"{d} {p:.0f} %" for p, d in dsos[:5])
    print(f"| {name} | {report.get('serverCPUSecondsPerGbit', float('nan')):.3f} | {kernel:.0f} % | {binaries} |")
    tops[name] = syms[:15]
for name, syms in tops.items():
    print()
    print(f"{name}, the functions with the most samples (self):")
    print()
    names = demangle([re.sub(r"^\[[.k]\]\s+", "", s) for _, s in syms])
    for (percent, raw), pretty in zip(syms, names):
        where = "kernel" if raw.startswith("[k]") else "user"
        print(f"- {percent:.1f} % ({where}) `{pretty[:160]}`")
PY
cat "$RESULTS"
log "written to $RESULTS"
