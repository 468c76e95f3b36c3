#!/usr/bin/env bash
# Admission through a webhook: what an on_play hook on a local backend adds to a play.
#
# One node, two live streams: `open/s` (no hook) and `hooked/s` (an on_play hook to
# Tests/Peers/hook_server.py on loopback, which admits). A load of RATE plays a second for
# DURATION seconds (HTTP-FLV requests, each timed from the connect to the response head and
# closed) is put on each stream in turn, the hooked one also with RATE publishes' worth of
# hook traffic: the hook server sees 2 × RATE calls a second. Reports p50 / p95 / p99 of the
# plays' admission time with and without the hook, the difference (target: ≤ 10 ms at p99),
# and the node's own `estuary_hook_latency_seconds`.
#
# Environment (all optional): RATE=100  DURATION=30  SKIP_BUILD=1  KEEP_TMP=1
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

RATE=${RATE:-100}
DURATION=${DURATION:-30}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]'
BENCH_NAME=bench-hooks
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"
trap stop_all_on_exit EXIT
trap 'exit 130' INT TERM

scripts/install-deps.sh --bench
build_release estuary
node=.build/release/estuary
[[ -x $node ]] || die "missing $node (build it or unset SKIP_BUILD)"
python=$(project_python)
tmp=$(mktemp -d /tmp/estuary-bench-hooks.XXXXXX)
encode_fanout_source "$tmp/src.flv"

start hooks "$python" Tests/Peers/hook_server.py --log "$tmp/hook-requests.jsonl" --ready-file "$tmp/hook.ready"
for ((i = 0; i < 50; i++)); do [[ -s $tmp/hook.ready ]] && break; sleep 0.1; done
hook=$(cut -d' ' -f2 "$tmp/hook.ready")
[[ -n $hook ]] || die "the hook server did not start (see $tmp/hooks.log)"
pick_port rtmp 29651
pick_port http 29281
pick_port admin 29291
cat >"$tmp/estuary.yaml" <<EOF
hooks:
  hooked:
    onPlay: {url: "http://$hook/admit/on_play", timeoutSeconds: 2, retries: 0}
    onStop: {url: "http://$hook/admit/on_stop", timeoutSeconds: 2, retries: 0}
EOF
start estuary "$node" --bind 127.0.0.1 --rtmp-port "$rtmp" --http-port "$http" --admin-port "$admin" \
  --data-dir "$tmp/data" --log-level warning --config "$tmp/estuary.yaml"
node_pid=$started
wait_http estuary "http://127.0.0.1:$http/healthz" "$node_pid" 20
for app in open hooked; do
  start "publisher-$app" ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/src.flv" -c copy -f flv "rtmp://127.0.0.1:$rtmp/$app/s"
done
for app in open hooked; do
  for ((i = 0; i < 50; i++)); do
    [[ $(http_code "http://127.0.0.1:$http/$app/s.flv") == 200 ]] && break
    sleep 0.2
  done
done
sleep 2

# The load: RATE requests a second, each its own connection, timed to the response head.
cat >"$tmp/load.py" <<'PY'
import asyncio, json, sys, time
port, path, rate, duration = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
async def one(times, statuses):
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 10)
        times.append(time.perf_counter() - start)
        statuses[line.split(b" ")[1].decode() if b" " in line else "?"] = statuses.get(line.split(b" ")[1].decode() if b" " in line else "?", 0) + 1
        writer.close()
    except Exception as error:
        statuses[type(error).__name__] = statuses.get(type(error).__name__, 0) + 1
async def main():
    times, statuses, tasks = [], {}, []
    begin = time.perf_counter()
    count = int(rate * duration)
    for i in range(count):
        delay = begin + i / rate - time.perf_counter()
        if delay > 0: await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(times, statuses)))
    await asyncio.gather(*tasks)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000 if times else float("nan")
    print(json.dumps({"requests": count, "answered": len(times), "statuses": statuses,
                      "p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "max": times[-1] * 1000 if times else None}))
asyncio.run(main())
PY
wait_quiet
log "open/s: $RATE plays/s for ${DURATION}s"
"$python" "$tmp/load.py" "$http" /open/s.flv "$RATE" "$DURATION" >"$tmp/open.json"
wait_quiet
log "hooked/s: $RATE plays/s for ${DURATION}s (on_play and on_stop: $((2 * RATE)) hook calls/s)"
"$python" "$tmp/load.py" "$http" /hooked/s.flv "$RATE" "$DURATION" >"$tmp/hooked.json"
metrics=$(curl -s -m 5 "http://127.0.0.1:$admin/metrics")

field() { grep -o "\"$2\": [^,}]*" "$1" | head -1 | cut -d' ' -f2; }
echo "$RATE plays a second for $DURATION s per run, HTTP-FLV, each play its own connection, timed from the connect to the response head; $(nproc) cores; $(date -u +%Y-%m-%d)."
echo
echo "| stream | requests (answered) | statuses | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for run in open hooked; do
  printf '| %s | %s (%s) | %s | %.1f | %.1f | %.1f | %.1f |\n' "$run/s" "$(field "$tmp/$run.json" requests)" "$(field "$tmp/$run.json" answered)" \
    "$(grep -o '"statuses": {[^}]*}' "$tmp/$run.json" | cut -d' ' -f2- | tr -d '"')" \
    "$(field "$tmp/$run.json" p50)" "$(field "$tmp/$run.json" p95)" "$(field "$tmp/$run.json" p99)" "$(field "$tmp/$run.json" max)"
done
echo
awk -v a="$(field "$tmp/hooked.json" p99)" -v b="$(field "$tmp/open.json" p99)" -v c="$(field "$tmp/hooked.json" p50)" -v d="$(field "$tmp/open.json" p50)" \
  'BEGIN { printf "What the hook adds: p50 %.1f ms, p99 **%.1f ms** (target ≤ 10 ms at p99); p99 hooked / open = %.2f\n", c - d, a - b, (b > 0 ? a / b : 0) }'
echo
echo "The node's view (estuary_hook_latency_seconds{action=\"on_play\"}, every attempt):"
echo
grep '^estuary_hook_latency_seconds_\(count\|sum\){action="on_play"' <<<"$metrics" | sed 's/^/    /' || true
grep '^estuary_hook_latency_seconds_bucket{action="on_play"' <<<"$metrics" | awk -F'[ "]' '{ print "    " $0 }' | head -20 || true
