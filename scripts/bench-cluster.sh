#!/usr/bin/env bash
# Cluster-hop benchmark (issue 5): what going through NATS costs a viewer, in one run.
#
#   1. embedded: one `node` (--role all); publish to it, play HTTP-FLV from it;
#   2. cluster:  nats-server + `node --role ingest` + `node --role relay`; publish to the
#      ingest, play HTTP-FLV from the relay (media crosses the bus).
#
# Each run publishes the same source in real time (hls-latency-bench's publisher, which
# notes when it wrote each video frame) to one measuring HTTP-FLV viewer, which notes when
# each frame arrived, plus VIEWERS load viewers. Latency = arrival − write, p50 and p99 over
# the window; the cluster's added latency is the difference. The serving node's CPU (the
# relay in the cluster) is read from /proc over the window, per Gbit delivered.
#
# Environment: DURATION=30 SKIP=4 TAIL=4 VIEWERS=200 SKIP_BUILD=1 KEEP_TMP=1 RESULTS=path
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

DURATION=${DURATION:-30}
SKIP=${SKIP:-4}
TAIL=${TAIL:-4}
VIEWERS=${VIEWERS:-200}
RESULTS=${RESULTS:-/tmp/cluster-bench-results.md}
STREAM=live/clusterbench
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-cluster
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

python=$(project_python)
for tool in ffmpeg flock pgrep nats-server "$python"; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
if [[ -z ${SKIP_BUILD:-} ]]; then
  wait_quiet
  log "building the release node and hls-latency-bench (holding $BUILD_LOCK)"
  flock -w 3600 "$BUILD_LOCK" swift build -c release --product node >&2
  flock -w 3600 "$BUILD_LOCK" swift build -c release --product hls-latency-bench >&2
fi
node=.build/release/node
bench=.build/release/hls-latency-bench
[[ -x $node && -x $bench ]] || die "missing $node or $bench (build them or unset SKIP_BUILD)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d /tmp/estuary-bench-cluster.XXXXXX)

encode_latency_source "$tmp/src.flv"

measure() { # name rtmp-port http-port server-pid
  local name=$1
  wait_quiet
  log "$name: publishing ${DURATION}s, 1 measuring + $VIEWERS load HTTP-FLV viewers"
  timeout $((DURATION + 120)) "$bench" run --no-hls \
    --rtmp-url "rtmp://127.0.0.1:$2/$STREAM" --http-url "http://127.0.0.1:$3" --flv-url "http://127.0.0.1:$3" \
    --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" \
    --flv-viewers "$VIEWERS" --server-pid "$4" --label "$name" \
    --json-out "$tmp/$name.json" 2>"$tmp/$name.bench.log" ||
    log "warning: $name: hls-latency-bench failed (exit $?): $(tail -3 "$tmp/$name.bench.log")"
  tail -1 "$tmp/$name.bench.log" >&2
  [[ -s $tmp/$name.json ]] || die "$name produced no result (see $tmp/$name.bench.log)"
}

# --- 1. embedded ----------------------------------------------------------------------------
RTMP=$(free_port 29461)
HTTP=$(free_port 29191)
start embedded "$node" --bind 127.0.0.1 --rtmp-port "$RTMP" --http-port "$HTTP" --data-dir "$tmp/embedded" --log-level warning
embedded_pid=$started
wait_port "$RTMP" && wait_port "$HTTP" || die "the embedded node did not listen"
measure embedded "$RTMP" "$HTTP" "$embedded_pid"
stop_pid "$embedded_pid"

# --- 2. cluster: nats → ingest → relay --------------------------------------------------------
NATS=$(free_port 29422)
start nats nats-server -a 127.0.0.1 -p "$NATS"
wait_port "$NATS" || die "nats-server did not listen"
bus=(--nats "nats://127.0.0.1:$NATS" --log-level warning --bind 127.0.0.1)
INGEST_RTMP=$(free_port 29561)
INGEST_HTTP=$(free_port 29291)
start ingest "$node" --role ingest --node-id ingest-1 --rtmp-port "$INGEST_RTMP" --http-port "$INGEST_HTTP" --data-dir "$tmp/ingest" "${bus[@]}"
RELAY_RTMP=$(free_port 29661)
RELAY_HTTP=$(free_port 29391)
start relay "$node" --role relay --node-id relay-1 --rtmp-port "$RELAY_RTMP" --http-port "$RELAY_HTTP" --data-dir "$tmp/relay" "${bus[@]}"
relay_pid=$started
wait_port "$INGEST_RTMP" && wait_port "$RELAY_HTTP" || die "the cluster nodes did not listen"
# Publish to the ingest, play from the relay.
measure_cluster() {
  wait_quiet
  log "cluster: publishing ${DURATION}s to the ingest, 1 measuring + $VIEWERS load viewers on the relay"
  timeout $((DURATION + 120)) "$bench" run --no-hls \
    --rtmp-url "rtmp://127.0.0.1:$INGEST_RTMP/$STREAM" --http-url "http://127.0.0.1:$RELAY_HTTP" --flv-url "http://127.0.0.1:$RELAY_HTTP" \
    --flv "$tmp/src.flv" --duration "$DURATION" --skip "$SKIP" --tail "$TAIL" \
    --flv-viewers "$VIEWERS" --server-pid "$relay_pid" --label cluster \
    --json-out "$tmp/cluster.json" 2>"$tmp/cluster.bench.log" ||
    log "warning: cluster: hls-latency-bench failed (exit $?): $(tail -3 "$tmp/cluster.bench.log")"
  tail -1 "$tmp/cluster.bench.log" >&2
  [[ -s $tmp/cluster.json ]] || die "the cluster run produced no result (see $tmp/cluster.bench.log)"
}
measure_cluster

"$python" - "$tmp/embedded.json" "$tmp/cluster.json" "$DURATION" "$VIEWERS" >"$RESULTS" <<'PY'
import json, sys
embedded, cluster = (json.load(open(path)) for path in sys.argv[1:3])
duration, viewers = sys.argv[3], sys.argv[4]
def row(name, run, server):
    flv = run.get("flv") or {}
    cpu = run.get("cpu") or {}
    window = cpu.get("windowSeconds") or run.get("windowSeconds") or 1
    total_bytes = run.get("flvViewerBytes") or 0
    # Bytes over the whole run; the CPU window is the middle of it: scale the bytes to it.
    gbit = total_bytes * 8 / 1e9 * (window / float(run.get("publishSeconds") or window))
    per_gbit = cpu.get("serverCPUSeconds", 0) / gbit if gbit > 0 else float("nan")
    return (f"| {name} | {server} | {flv.get('framesMatched', 0)}/{flv.get('framesInWindow', 0)} | "
            f"{flv.get('p50Milliseconds', 0):.0f} | {flv.get('p99Milliseconds', 0):.0f} | {flv.get('maxMilliseconds', 0):.0f} | "
            f"{cpu.get('serverCores', 0):.3f} | {per_gbit:.2f} |"), flv
print(f"### Cluster hop over NATS ({embedded.get('date', '')[:10]})")
print()
print(f"Command: `make bench-cluster` (DURATION={duration} VIEWERS={viewers}); publish → one measuring HTTP-FLV viewer, plus {viewers} load viewers.")
print()
print("| setup | serving process | frames matched | p50 ms | p99 ms | max ms | serving CPU (cores) | CPU-s per Gbit delivered |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
line_e, flv_e = row("embedded (`--role all`)", embedded, "node")
line_c, flv_c = row("cluster (ingest → NATS → relay)", cluster, "relay")
print(line_e)
print(line_c)
print()
print(f"Added by the cluster hop: p50 **{flv_c.get('p50Milliseconds', 0) - flv_e.get('p50Milliseconds', 0):+.0f} ms**, "
      f"p99 **{flv_c.get('p99Milliseconds', 0) - flv_e.get('p99Milliseconds', 0):+.0f} ms** (target: p99 ≤ 50 ms).")
errors = embedded.get("errors", []) + cluster.get("errors", [])
if errors:
    print()
    print("Errors: " + "; ".join(errors[:5]))
PY
cat "$RESULTS"
log "written to $RESULTS"
