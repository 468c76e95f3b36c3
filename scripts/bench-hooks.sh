#!/usr/bin/env bash
# Admission through a webhook: what hooks on a local backend add to plays and publishes.
#
# One node, two applications: `open` (no hooks) and `hooked` (on_play, on_stop, on_publish
# and on_unpublish to Tests/Peers/hook_server.py on loopback, which admits). Each in turn
# gets RATE plays and RATE publishes a second for DURATION seconds, each its own connection:
# a play is an HTTP-FLV request of the application's live stream, timed from the connect to
# the response head; a publish is RTMP (handshake, connect, createStream, publish of a name
# of its own), timed from the connect to NetStream.Publish.Start. Both are then closed, so
# the hook server sees 4 × RATE calls a second. Reports p50 / p95 / p99 of each with and
# without hooks, what the hooks add (target: ≤ 10 ms at p99), and the node's own
# `estuary_hook_latency_seconds`.
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
hooks_pid=$started
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
    onPublish: {url: "http://$hook/admit/on_publish", timeoutSeconds: 2, retries: 0}
    onUnpublish: {url: "http://$hook/admit/on_unpublish", timeoutSeconds: 2, retries: 0}
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

# The load: RATE plays and RATE publishes a second, each its own connection, in one
# process. A play is an HTTP-FLV request timed to its response head; a publish is RTMP
# (handshake, connect, createStream, publish) timed to its onStatus, then closed: a
# publisher's admission as OBS or ffmpeg meets it, on_publish and on_unpublish included.
cat >"$tmp/load.py" <<'PY'
import asyncio, json, os, resource, struct, sys, time
http_port, rtmp_port, app, rate, duration = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])

def amf_string(s):
    b = s.encode(); return b"\x02" + struct.pack(">H", len(b)) + b
def amf_number(n): return b"\x00" + struct.pack(">d", n)
def amf_object(fields):
    out = b"\x03"
    for k, v in fields.items():
        kb = k.encode(); out += struct.pack(">H", len(kb)) + kb + amf_string(v)
    return out + b"\x00\x00\x09"
def message(csid, type_id, stream, payload):
    # One chunk each: the chunk size is raised to 4096 first.
    return bytes([csid]) + struct.pack(">I", 0)[1:] + struct.pack(">I", len(payload))[1:] + bytes([type_id]) + struct.pack("<I", stream) + payload

async def play(times, statuses):
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", http_port), 5)
        writer.write(f"GET /{app}/s.flv HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 10)
        times.append(time.perf_counter() - start)
        status = line.split(b" ")[1].decode() if b" " in line else "?"
        statuses[status] = statuses.get(status, 0) + 1
        writer.close()
    except Exception as error:
        statuses[type(error).__name__] = statuses.get(type(error).__name__, 0) + 1

async def publish(index, times, statuses):
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", rtmp_port), 5)
        writer.write(b"\x03" + bytes(8) + os.urandom(1528))
        s0s1s2 = await asyncio.wait_for(reader.readexactly(1 + 1536 + 1536), 5)
        writer.write(s0s1s2[1:1537])
        writer.write(message(2, 1, 0, struct.pack(">I", 4096)))
        writer.write(message(3, 20, 0, amf_string("connect") + amf_number(1) + amf_object(
            {"app": app, "type": "nonprivate", "tcUrl": f"rtmp://127.0.0.1:{rtmp_port}/{app}"})))
        writer.write(message(3, 20, 0, amf_string("createStream") + amf_number(2) + b"\x05"))
        # 500 names in turn: a name comes back 5 s later, within the node's publisher grace
        # (a closed publisher's stream is kept 10 s for it to reconnect), as an encoder's would.
        writer.write(message(4, 20, 1, amf_string("publish") + amf_number(3) + b"\x05" + amf_string(f"p{index % 500}") + amf_string("live")))
        await writer.drain()
        seen, status = b"", None
        deadline = time.perf_counter() + 10
        while status is None and time.perf_counter() < deadline:
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            if not chunk: status = "closed"; break
            seen += chunk
            for code in (b"NetStream.Publish.Start", b"NetStream.Publish.BadName", b"NetStream.Publish.Denied", b"NetStream.Publish.Rejected"):
                if code in seen: status = code.decode().split(".")[-1]
        if status == "Start": times.append(time.perf_counter() - start)
        statuses[status or "timeout"] = statuses.get(status or "timeout", 0) + 1
        writer.close()
    except Exception as error:
        statuses[type(error).__name__] = statuses.get(type(error).__name__, 0) + 1

def summary(times, statuses, count):
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000 if times else float("nan")
    return {"requests": count, "answered": len(times), "statuses": statuses,
            "p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "max": times[-1] * 1000 if times else None}

async def main():
    plays, play_statuses, pubs, pub_statuses, tasks = [], {}, [], {}, []
    begin = time.perf_counter()
    count = int(rate * duration)
    for i in range(count):
        delay = begin + i / rate - time.perf_counter()
        if delay > 0: await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(play(plays, play_statuses)))
        tasks.append(asyncio.create_task(publish(i, pubs, pub_statuses)))
    await asyncio.gather(*tasks)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"play": summary(plays, play_statuses, count), "publish": summary(pubs, pub_statuses, count),
                      "cpu": round((usage.ru_utime + usage.ru_stime) / (time.perf_counter() - begin) * 100)}))
asyncio.run(main())
PY
# CPU seconds (user + system) a process has used so far.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
run_load() { # application
  local node_before hooks_before
  node_before=$(cpu_seconds "$node_pid"); hooks_before=$(cpu_seconds "$hooks_pid")
  "$python" "$tmp/load.py" "$http" "$rtmp" "$1" "$RATE" "$DURATION" >"$tmp/$1.json"
  awk -v a="$node_before" -v b="$(cpu_seconds "$node_pid")" -v c="$hooks_before" -v d="$(cpu_seconds "$hooks_pid")" -v t="$DURATION" \
    'BEGIN { printf "%.0f %.0f\n", (b - a) / t * 100, (d - c) / t * 100 }' >"$tmp/$1.cpu"
}
wait_quiet
log "open: $RATE plays/s and $RATE publishes/s for ${DURATION}s"
run_load open
sleep 12   # the open run's publishers' grace runs out
wait_quiet
log "hooked: $RATE plays/s and $RATE publishes/s for ${DURATION}s (on_play, on_stop, on_publish, on_unpublish: $((4 * RATE)) hook calls/s)"
run_load hooked
metrics=$(curl -s -m 5 "http://127.0.0.1:$admin/metrics")

echo "$RATE plays (HTTP-FLV, timed to the response head) and $RATE publishes (RTMP, timed from the connect to NetStream.Publish.Start) a second for $DURATION s per run, each its own connection; $(nproc) cores; $(date -u +%Y-%m-%d)."
echo
"$python" - "$tmp" <<'PY'
import json, sys
runs = {name: json.load(open(f"{sys.argv[1]}/{name}.json")) for name in ("open", "hooked")}
cpu = {name: open(f"{sys.argv[1]}/{name}.cpu").read().split() for name in ("open", "hooked")}
print("| application | action | requests (admitted) | statuses | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) | node CPU % | hook server CPU % | load CPU % |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for run, result in runs.items():
    for action in ("play", "publish"):
        r = result[action]
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(r["statuses"].items()))
        print(f"| {run} | {action} | {r['requests']} ({r['answered']}) | {statuses} | {r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | {r['max'] or float('nan'):.1f} | {cpu[run][0]} | {cpu[run][1]} | {result['cpu']} |")
print()
for action in ("play", "publish"):
    h, o = runs["hooked"][action], runs["open"][action]
    print(f"What the hook adds to a {action}: p50 {h['p50'] - o['p50']:.1f} ms, p99 **{h['p99'] - o['p99']:.1f} ms** (target ≤ 10 ms at p99)")
PY
echo
echo "The node's view (estuary_hook_latency_seconds, every attempt):"
echo
grep '^estuary_hook_latency_seconds_\(count\|sum\){action="on_\(play\|publish\)"' <<<"$metrics" | sed 's/^/    /' || true
