#!/usr/bin/env bash
# Edge benchmark (issue 14): what an edge tier adds, and what an edge costs, in one run.
#
#   1. Latency per tier: publish to an origin (`estuary`, --role all); edge-1 pulls from the
#      origin over HTTP-FLV, edge-2 from edge-1, each hop through a delay proxy of DELAY_MS
#      each way when DELAY_MS > 0 (Tests/Peers/delay_proxy.py). One measuring HTTP-FLV
#      viewer on each of the three; a tier's added latency is, per frame, its viewer's
#      arrival minus the previous tier's viewer's arrival (p50, p99), less the proxy's delay.
#   2. CPU per delivered Gbit, side by side: nats-server, an ingest and a relay, and an edge
#      pulling from the relay. VIEWERS load viewers (plus one measuring viewer) play from the
#      relay directly, then the same from the edge; the serving process's CPU (/proc) over
#      the window, per Gbit its viewers received; the ratio edge / relay.
#
# Each run publishes the same 30 s source in real time with hls-latency-bench's publisher,
# which notes when it wrote each video frame.
#
# Environment: DURATION=30 SKIP=4 TAIL=4 VIEWERS=300 DELAY_MS=0 SKIP_BUILD=1 KEEP_TMP=1
#              RESULTS=path (default /tmp/edge-bench-results.md)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

DURATION=${DURATION:-30}
SKIP=${SKIP:-4}
TAIL=${TAIL:-4}
VIEWERS=${VIEWERS:-300}
DELAY_MS=${DELAY_MS:-0}
RESULTS=${RESULTS:-/tmp/edge-bench-results.md}
STREAM=live/edgebench
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-edge
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

python=$(project_python)
for tool in ffmpeg flock pgrep nats-server "$python"; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
[[ $DELAY_MS =~ ^[0-9]+$ ]] || die "DELAY_MS must be a whole number of milliseconds"
build_release estuary hls-latency-bench
node=.build/release/estuary
bench=.build/release/hls-latency-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d /tmp/estuary-bench-edge.XXXXXX)

encode_latency_source "$tmp/src.flv"

# The port at which the next tier reaches `upstream-port`: through a delay proxy when
# DELAY_MS > 0. Sets $hop_port (not echoed: the proxy must be started in this shell).
hop() { # name upstream-port
  hop_port=$2
  ((DELAY_MS > 0)) || return 0
  hop_port=$(free_port "$(($2 + 1000))")
  start "proxy-$1" "$python" Tests/Peers/delay_proxy.py --listen "127.0.0.1:$hop_port" --connect "127.0.0.1:$2" --delay-ms "$DELAY_MS"
  wait_port "$hop_port" || die "the delay proxy $1 did not listen"
}

common=(--bind 127.0.0.1 --log-level warning --admin-port 0)

# --- 1. latency per tier: origin → edge-1 → edge-2 --------------------------------------------
ORIGIN_RTMP=$(free_port 29471)
ORIGIN_HTTP=$(free_port 29201)
start origin "$node" --rtmp-port "$ORIGIN_RTMP" --http-port "$ORIGIN_HTTP" --data-dir "$tmp/origin" "${common[@]}"
wait_port "$ORIGIN_RTMP" && wait_port "$ORIGIN_HTTP" || die "the origin did not listen"
EDGE1_HTTP=$(free_port 29211)
EDGE1_RTMP=$(free_port 29481)
hop origin "$ORIGIN_HTTP"
start edge-1 "$node" --role edge --upstream "http://127.0.0.1:$hop_port" \
  --rtmp-port "$EDGE1_RTMP" --http-port "$EDGE1_HTTP" --data-dir "$tmp/edge-1" "${common[@]}"
wait_port "$EDGE1_HTTP" || die "edge-1 did not listen"
EDGE2_HTTP=$(free_port 29221)
EDGE2_RTMP=$(free_port 29491)
hop edge-1 "$EDGE1_HTTP"
start edge-2 "$node" --role edge --upstream "http://127.0.0.1:$hop_port" \
  --rtmp-port "$EDGE2_RTMP" --http-port "$EDGE2_HTTP" --data-dir "$tmp/edge-2" "${common[@]}"
wait_port "$EDGE2_HTTP" || die "edge-2 did not listen"

wait_quiet
log "tiers: publishing ${DURATION}s to the origin; one measuring viewer on the origin, edge-1 and edge-2 (delay ${DELAY_MS} ms per hop)"
timeout $((DURATION + 120)) "$bench" run --no-hls \
  --rtmp-url "rtmp://127.0.0.1:$ORIGIN_RTMP/$STREAM" --http-url "http://127.0.0.1:$ORIGIN_HTTP" \
  --tier-url "http://127.0.0.1:$ORIGIN_HTTP" --tier-url "http://127.0.0.1:$EDGE1_HTTP" --tier-url "http://127.0.0.1:$EDGE2_HTTP" \
  --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" --label tiers \
  --json-out "$tmp/tiers.json" 2>"$tmp/tiers.bench.log" ||
  log "warning: tiers: hls-latency-bench failed (exit $?): $(tail -3 "$tmp/tiers.bench.log")"
tail -1 "$tmp/tiers.bench.log" >&2
[[ -s $tmp/tiers.json ]] || die "the tier run produced no result (see $tmp/tiers.bench.log)"
for pid in "${pids[@]}"; do stop_pid "$pid"; done
pids=()

# --- 2. CPU per Gbit: the relay serving viewers directly, then an edge of it ------------------
NATS=$(free_port 29423)
start nats nats-server -a 127.0.0.1 -p "$NATS"
wait_port "$NATS" || die "nats-server did not listen"
bus=(--nats "nats://127.0.0.1:$NATS")
INGEST_RTMP=$(free_port 29571)
INGEST_HTTP=$(free_port 29301)
start ingest "$node" --role ingest --node-id ingest-1 --rtmp-port "$INGEST_RTMP" --http-port "$INGEST_HTTP" --data-dir "$tmp/ingest" "${bus[@]}" "${common[@]}"
RELAY_RTMP=$(free_port 29671)
RELAY_HTTP=$(free_port 29401)
start relay "$node" --role relay --node-id relay-1 --rtmp-port "$RELAY_RTMP" --http-port "$RELAY_HTTP" --data-dir "$tmp/relay" "${bus[@]}" "${common[@]}"
relay_pid=$started
EDGE_RTMP=$(free_port 29771)
EDGE_HTTP=$(free_port 29501)
start edge "$node" --role edge --upstream "http://127.0.0.1:$RELAY_HTTP" --rtmp-port "$EDGE_RTMP" --http-port "$EDGE_HTTP" --data-dir "$tmp/edge" "${common[@]}"
edge_pid=$started
wait_port "$INGEST_RTMP" && wait_port "$RELAY_HTTP" && wait_port "$EDGE_HTTP" || die "the cluster nodes did not listen"
# No coordinator: the ingest and the relay need only the bus to carry the stream.
sleep 2

serve() { # name http-port server-pid
  wait_quiet
  log "$1: publishing ${DURATION}s to the ingest; 1 measuring + $VIEWERS load HTTP-FLV viewers on the $1"
  timeout $((DURATION + 120)) "$bench" run --no-hls \
    --rtmp-url "rtmp://127.0.0.1:$INGEST_RTMP/$STREAM" --http-url "http://127.0.0.1:$2" --flv-url "http://127.0.0.1:$2" \
    --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" \
    --flv-viewers "$VIEWERS" --server-pid "$3" --label "$1" \
    --json-out "$tmp/$1.json" 2>"$tmp/$1.bench.log" ||
    log "warning: $1: hls-latency-bench failed (exit $?): $(tail -3 "$tmp/$1.bench.log")"
  tail -1 "$tmp/$1.bench.log" >&2
  [[ -s $tmp/$1.json ]] || die "$1 produced no result (see $tmp/$1.bench.log)"
  sleep 7 # the edge lets its pull go 5 s after the last viewer
}
serve relay "$RELAY_HTTP" "$relay_pid"
serve edge "$EDGE_HTTP" "$edge_pid"

"$python" - "$tmp/tiers.json" "$tmp/relay.json" "$tmp/edge.json" "$DURATION" "$VIEWERS" "$DELAY_MS" >"$RESULTS" <<'PY'
import json, sys
tiers_run, relay, edge = (json.load(open(path)) for path in sys.argv[1:4])
duration, viewers, delay = sys.argv[4], sys.argv[5], int(sys.argv[6])
print(f"### Edges ({tiers_run.get('date', '')[:10]})")
print()
print(f"Command: `make bench-edge` (DURATION={duration} VIEWERS={viewers} DELAY_MS={delay}).")
print()
print("Latency per tier (one measuring HTTP-FLV viewer per tier; added = per frame, this tier's arrival − the previous tier's, less the hop's added delay):")
print()
print("| tier | frames matched | latency p50 / p99 ms | added p50 ms | added p99 ms | added max ms |")
print("| --- | --- | --- | --- | --- | --- |")
names = ["origin (publish → viewer)", "edge-1 (pulls the origin)", "edge-2 (pulls edge-1)"]
for index, tier in enumerate(tiers_run.get("tiers") or []):
    latency = tier.get("latency") or {}
    less = delay if index > 0 else 0
    added = lambda key: (tier.get(key) if tier.get(key) is not None else float("nan")) - less
    print(f"| {names[index] if index < len(names) else tier['url']} | {latency.get('framesMatched', 0)}/{latency.get('framesInWindow', 0)} | "
          f"{latency.get('p50Milliseconds', 0):.0f} / {latency.get('p99Milliseconds', 0):.0f} | "
          f"{added('addedP50Milliseconds'):.0f} | **{added('addedP99Milliseconds'):.0f}** | {added('addedMaxMilliseconds'):.0f} |")
print()
print("Target: added p99 ≤ 20 ms per tier (not counting the added delay).")
print()
def row(name, run):
    flv = run.get("flv") or {}
    cpu = run.get("cpu") or {}
    window = cpu.get("windowSeconds") or run.get("windowSeconds") or 1
    total_bytes = run.get("flvViewerBytes") or 0
    # Bytes over the whole run; the CPU window is the middle of it: scale the bytes to it.
    gbit = total_bytes * 8 / 1e9 * (window / float(run.get("publishSeconds") or window))
    per_gbit = cpu.get("serverCPUSeconds", 0) / gbit if gbit > 0 else float("nan")
    print(f"| {name} | {flv.get('framesMatched', 0)}/{flv.get('framesInWindow', 0)} | {flv.get('p50Milliseconds', 0):.0f} / {flv.get('p99Milliseconds', 0):.0f} | "
          f"{cpu.get('serverCores', 0):.3f} | {cpu.get('rssMaxKiB', 0) / 1024:.1f} | {per_gbit:.3f} |")
    return per_gbit
print(f"CPU per delivered Gbit, {viewers} load HTTP-FLV viewers + 1 measuring viewer:")
print()
print("| serving process | frames matched | latency p50 / p99 ms | CPU (cores) | RSS max MiB | CPU-s per Gbit |")
print("| --- | --- | --- | --- | --- | --- |")
relay_gbit = row("relay (ingest → NATS → relay)", relay)
edge_gbit = row("edge (pulls the relay over HTTP-FLV)", edge)
ratio = edge_gbit / relay_gbit if relay_gbit and relay_gbit == relay_gbit and relay_gbit > 0 else float("nan")
print()
print(f"Edge / relay CPU per Gbit: **{ratio:.2f}** (target ≤ 1.10).")
errors = tiers_run.get("errors", []) + relay.get("errors", []) + edge.get("errors", [])
if errors:
    print()
    print("Errors: " + "; ".join(errors[:5]))
PY
cat "$RESULTS"
log "written to $RESULTS"
