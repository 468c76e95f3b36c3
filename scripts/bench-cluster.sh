#!/usr/bin/env bash
# Cluster-hop benchmark (issue 5): what going through NATS costs a viewer, in one run.
#
#   1. embedded: one `estuary` (--role all); publish to it, play HTTP-FLV from it;
#   2. cluster:  nats-server + `estuary --role ingest` + `estuary --role relay`; publish to the
#      ingest, play HTTP-FLV from the relay (media crosses the bus);
#   3. failover: nats-server, a coordinator, an ingest, two transcoders and a relay; a 360p
#      source published in a loop to abr/fo; `kill -9` of the transcoder that runs its
#      ladder, ROUNDS times (the killed one restarted between rounds).
#
# Stages 1 and 2 ("hop") publish the same source in real time (hls-latency-bench's
# publisher, which notes when it wrote each video frame) to one measuring HTTP-FLV viewer,
# which notes when each frame arrived, plus VIEWERS load viewers. Latency = arrival − write,
# p50 and p99 over the window; the cluster's added latency is the difference. The serving
# node's CPU (the relay in the cluster) is read from /proc over the window, per Gbit delivered.
#
# Stage 3 ("failover") plays the 240p and 360p rungs and the source from the relay with
# scripts/lib/failover_probe.py for FO_SECONDS, kills the owner FO_KILL_AFTER s in, and
# reports per round and the median: recovery (kill → the first new keyframe), the longest
# gap between video tags, timestamp regressions, and whether a viewer's connection dropped
# (the probes reconnect, so a dropped rung still gets a recovery figure).
#
# Environment: STAGES=hop,failover DURATION=30 SKIP=4 TAIL=4 VIEWERS=200 ROUNDS=3
# FO_SECONDS=25 FO_KILL_AFTER=8 FO_SETTLE=8 FO_LOG_LEVEL=info SKIP_BUILD=1 KEEP_TMP=1 RESULTS=path
# (the temporary directory, with every log, is also kept when the script fails)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

DURATION=${DURATION:-30}
SKIP=${SKIP:-4}
TAIL=${TAIL:-4}
VIEWERS=${VIEWERS:-200}
STAGES=${STAGES:-hop,failover}
ROUNDS=${ROUNDS:-3}
FO_SECONDS=${FO_SECONDS:-25}
FO_KILL_AFTER=${FO_KILL_AFTER:-8}
FO_SETTLE=${FO_SETTLE:-8}
RESULTS=${RESULTS:-/tmp/cluster-bench-results.md}
STREAM=live/clusterbench
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-cluster
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

# On failure keep $tmp (every process's log) for a look; stop_all_on_exit reads the status from $?.
trap 'status=$?; ((status == 0)) || KEEP_TMP=1; (exit "$status"); stop_all_on_exit' EXIT
trap 'exit 130' INT TERM

has_stage() { [[ ,$STAGES, == *,$1,* ]]; }
for stage in ${STAGES//,/ }; do [[ $stage == hop || $stage == failover ]] || die "unknown stage '$stage' in STAGES (hop, failover)"; done
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || die "ROUNDS must be 1…99"
[[ $FO_SECONDS =~ ^[0-9]+$ && $FO_KILL_AFTER =~ ^[0-9]+$ && $FO_SETTLE =~ ^[0-9]+$ ]] || die "FO_SECONDS, FO_KILL_AFTER and FO_SETTLE are whole seconds"
((FO_KILL_AFTER >= 3 && FO_KILL_AFTER + 8 <= FO_SECONDS)) || die "the kill (FO_KILL_AFTER=$FO_KILL_AFTER) must be ≥ 3 s in and leave ≥ 8 s of FO_SECONDS=$FO_SECONDS"

python=$(project_python)
for tool in ffmpeg flock pgrep nats-server curl "$python"; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
if [[ -z ${SKIP_BUILD:-} ]]; then
  wait_quiet
  log "building the release node and hls-latency-bench (holding $BUILD_LOCK)"
  flock -w 3600 "$BUILD_LOCK" swift build -c release --product estuary >&2
  if has_stage hop; then flock -w 3600 "$BUILD_LOCK" swift build -c release --product hls-latency-bench >&2; fi
fi
node=.build/release/estuary
bench=.build/release/hls-latency-bench
[[ -x $node ]] || die "missing $node (build it or unset SKIP_BUILD)"
if has_stage hop; then [[ -x $bench ]] || die "missing $bench (build it or unset SKIP_BUILD)"; fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d /tmp/estuary-bench-cluster.XXXXXX)
results_written=""

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

# Stages 1 and 2, and their table (which starts $RESULTS).
hop_stage() {
  encode_latency_source "$tmp/src.flv"

  # --- 1. embedded ----------------------------------------------------------------------------
  RTMP=$(free_port 29461)
  HTTP=$(free_port 29191)
  start embedded "$node" --bind 127.0.0.1 --rtmp-port "$RTMP" --http-port "$HTTP" --admin-port 0 --data-dir "$tmp/embedded" --log-level warning
  embedded_pid=$started
  wait_port "$RTMP" && wait_port "$HTTP" || die "the embedded node did not listen"
  measure embedded "$RTMP" "$HTTP" "$embedded_pid"
  stop_pid "$embedded_pid"

  # --- 2. cluster: nats → ingest → relay --------------------------------------------------------
  NATS=$(free_port 29422)
  start nats nats-server -a 127.0.0.1 -p "$NATS"
  local nats_pid=$started
  wait_port "$NATS" || die "nats-server did not listen"
  bus=(--nats "nats://127.0.0.1:$NATS" --log-level warning --bind 127.0.0.1)
  INGEST_RTMP=$(free_port 29561)
  INGEST_HTTP=$(free_port 29291)
  start ingest "$node" --role ingest --node-id ingest-1 --rtmp-port "$INGEST_RTMP" --http-port "$INGEST_HTTP" --admin-port 0 --data-dir "$tmp/ingest" "${bus[@]}"
  local ingest_pid=$started
  RELAY_RTMP=$(free_port 29661)
  RELAY_HTTP=$(free_port 29391)
  start relay "$node" --role relay --node-id relay-1 --rtmp-port "$RELAY_RTMP" --http-port "$RELAY_HTTP" --admin-port 0 --data-dir "$tmp/relay" "${bus[@]}"
  relay_pid=$started
  wait_port "$INGEST_RTMP" && wait_port "$RELAY_HTTP" || die "the cluster nodes did not listen"
  measure_cluster
  local pid
  for pid in "$relay_pid" "$ingest_pid" "$nats_pid"; do stop_pid "$pid"; done

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
  results_written=1
}

# --- 3. failover: kill -9 the transcoder of a ladder ---------------------------------------------
# The source: encode_failover_source (scripts/lib/bench.sh), 12 s published in a loop with
# `ffmpeg -re -stream_loop -1 -c copy` (the default ladder makes 360p and 240p of it). Ports
# from pick_port, readiness from wait_http (the same file).

# fo_node NAME NODE-ID ROLE [ENV…]: starts `estuary --role ROLE` on the failover bus, logs in
# $tmp/NAME.log, fresh ports each time, and waits (30 s) for its /readyz. Sets `started`
# `fo_http` (its HTTP port) and `fo_admin` (its admin plane's).
fo_node() {
  local name=$1 id=$2 role=$3 http rtmp admin pid
  shift 3
  pick_port http 29800
  pick_port rtmp 29900
  pick_port admin 29700
  start "$name" env "$@" "$node" --role "$role" --node-id "$id" --http-port "$http" --rtmp-port "$rtmp" --admin-port "$admin" \
    --data-dir "$tmp/fo-$id" "${fo_bus[@]}"
  pid=$started
  wait_http "$name" "http://127.0.0.1:$http/readyz" "$pid" 30
  started=$pid
  fo_http=$http
  fo_admin=$admin
  fo_rtmp=$rtmp
}

# fo_owner: the transcoder that runs most of abr/fo's renditions once every one of them runs
# (coordinator's admin API), or nothing; the whole placement goes to $tmp/fo-owner.log.
fo_owner() {
  FO_ADMIN_TOKEN=$fo_token timeout 10 "$python" - "http://127.0.0.1:$fo_coordinator_admin/api/v1/streams" 2>>"$tmp/fo-owner.log" <<'PY' || true
import collections, json, os, sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["FO_ADMIN_TOKEN"]})
with urllib.request.urlopen(request, timeout=3) as response:
    streams = json.load(response).get("streams", [])
renditions = [r for s in streams if s.get("app") == "abr" and s.get("name") == "fo" and s.get("state", "live") == "live"
              for r in s.get("renditions", [])]
placement = [(r.get("rung"), r.get("transcoderNode"), r.get("state")) for r in renditions]
print(f"placement: {placement}", file=sys.stderr)
if renditions and all(r.get("state") == "running" and r.get("transcoderNode") for r in renditions):
    owners = collections.Counter(r["transcoderNode"] for r in renditions)
    if len(owners) > 1:
        print(f"warning: the renditions are split: {dict(owners)}", file=sys.stderr)
    print(owners.most_common(1)[0][0])
PY
}

wait_owner() { # seconds: prints the owner once the ladder runs; dies after `seconds`
  local deadline=$((SECONDS + $1)) owner
  while true; do
    owner=$(fo_owner)
    if [[ -n $owner ]]; then echo "$owner"; return 0; fi
    ((SECONDS < deadline)) || die "no transcoder runs abr/fo's ladder after $1 s (placement: $(tail -1 "$tmp/fo-owner.log" 2>/dev/null); logs in $tmp)"
    sleep 0.5
  done
}

# The cluster, the publisher, then ROUNDS kills; a table appended to $RESULTS.
failover_stage() {
  encode_failover_source "$tmp/fo-src.flv"
  wait_quiet
  local nats rtmp_url relay_url round owner victim mark label url probe pid status publisher
  local -A tc_pid=()
  pick_port nats 29722
  start fo-nats nats-server -a 127.0.0.1 -p "$nats"
  wait_port "$nats" || die "nats-server did not listen (see $tmp/fo-nats.log)"
  fo_bus=(--nats "nats://127.0.0.1:$nats" --log-level "${FO_LOG_LEVEL:-info}" --bind 127.0.0.1 --advertise-host 127.0.0.1)
  fo_token=$(od -An -v -tx1 -N16 /dev/urandom | tr -d ' \n')
  # The admin token in the coordinator's environment, as in docker-compose.yml, not on its command line.
  fo_node fo-coordinator coordinator coordinator "ESTUARY_ADMIN_TOKEN=$fo_token"
  fo_coordinator_admin=$fo_admin
  fo_node fo-ingest ingest-1 ingest
  rtmp_url="rtmp://127.0.0.1:$fo_rtmp/abr/fo"
  fo_node fo-transcode-1 transcode-1 transcode
  tc_pid[transcode-1]=$started
  fo_node fo-transcode-2 transcode-2 transcode
  tc_pid[transcode-2]=$started
  fo_node fo-relay relay-1 relay
  relay_url="http://127.0.0.1:$fo_http/abr/fo"

  start fo-publisher ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$tmp/fo-src.flv" -c copy -f flv "$rtmp_url"
  publisher=$started
  log "failover: publishing to $rtmp_url; waiting (60 s) for $relay_url/240p.flv, 360p.flv and .flv"
  for url in "$relay_url/240p.flv" "$relay_url/360p.flv" "$relay_url.flv"; do wait_http fo-publisher "$url" "$publisher" 60; done
  owner=$(wait_owner 30)
  log "failover: the ladder runs on $owner; settling ${FO_SETTLE}s"
  sleep "$FO_SETTLE"

  : >"$tmp/fo-rounds.tsv"
  for ((round = 1; round <= ROUNDS; round++)); do
    mark=$tmp/fo-r$round.mark
    local -a probes=()
    log "failover round $round/$ROUNDS: 3 probes for ${FO_SECONDS}s, kill -9 of the owner ${FO_KILL_AFTER}s in"
    for label in 240p 360p source; do
      url=$relay_url/$label.flv
      [[ $label == source ]] && url=$relay_url.flv
      timeout $((FO_SECONDS + 15)) "$python" scripts/lib/failover_probe.py "$url" --mark "$mark" \
        --duration "$FO_SECONDS" --label "$label" --reconnect >"$tmp/fo-r$round-$label.json" 2>"$tmp/fo-r$round-$label.log" &
      pids+=("$!")
      probes+=("$!")
    done
    sleep "$FO_KILL_AFTER"
    victim=$(wait_owner 10)
    [[ -n ${tc_pid[$victim]:-} ]] || die "the coordinator names an unknown transcoder '$victim'"
    kill -0 "$publisher" 2>/dev/null || die "the publisher exited (see $tmp/fo-publisher.log)"
    kill -KILL "${tc_pid[$victim]}"
    : >"$mark" # right after the kill: the probes take their clock's reading when it appears
    wait "${tc_pid[$victim]}" 2>/dev/null || true
    log "failover round $round: killed $victim (pid ${tc_pid[$victim]})"
    printf '%s\t%s\n' "$round" "$victim" >>"$tmp/fo-rounds.tsv"
    for probe in "${probes[@]}"; do
      status=0
      wait "$probe" || status=$?
      ((status == 0)) || log "warning: round $round: a probe failed (exit $status; logs $tmp/fo-r$round-*.log)"
    done
    owner=$(fo_owner)
    log "failover round $round: done; the ladder now runs on ${owner:-nothing (not back?)}"
    if ((round < ROUNDS)); then
      log "failover: restarting $victim; settling ${FO_SETTLE}s"
      fo_node "fo-$victim-r$((round + 1))" "$victim" transcode
      tc_pid[$victim]=$started
      sleep "$FO_SETTLE"
      owner=$(wait_owner 30)
    fi
  done
  for pid in "${tc_pid[@]}"; do stop_pid "$pid"; done
  stop_pid "$publisher"

  if [[ -n $results_written ]]; then echo >>"$RESULTS"; else : >"$RESULTS"; fi
  "$python" - "$tmp" "$ROUNDS" "$FO_SECONDS" "$FO_KILL_AFTER" >>"$RESULTS" <<'PY'
import json, os, statistics, sys, time
tmp, rounds, seconds, kill_after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
killed = dict(line.rstrip("\n").split("\t") for line in open(os.path.join(tmp, "fo-rounds.tsv")) if line.strip())
labels = [("240p", "240p rung"), ("360p", "360p rung"), ("source", "source (control)")]
def load(round_, label):
    try:
        with open(os.path.join(tmp, f"fo-r{round_}-{label}.json")) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None
def ms(value):
    return "—" if value is None else f"{value:.0f}"
def dropped(r):
    if not r["dropped"]:
        return "no"
    return f"**yes** at {ms(r['droppedAtMs'])} ms, {r['connections']} connections"
results = {(n, label): load(n, label) for n in range(1, rounds + 1) for label, _ in labels}
print(f"### Transcoder failover ({time.strftime('%Y-%m-%d')})")
print()
print(f"Command: `make bench-cluster` (ROUNDS={rounds} FO_SECONDS={seconds} FO_KILL_AFTER={kill_after}); "
      "coordinator, ingest, two transcoders, relay over NATS; 640x360 30 fps source (2 s GOPs) looped to `abr/fo`; "
      f"three HTTP-FLV probes on the relay; `kill -9` of the ladder's transcoder {kill_after} s in. "
      "Recovery: kill → the first keyframe newer than anything before it (the source's is only its next keyframe, up to 2 s: "
      "a control). Gap: longest wall-clock wait between video tags over the run. Probes reconnect after a drop.")
print()
print("| round | killed | viewer | recovery ms | first frame ms | longest gap ms | ts regressions | max ts step ms | dropped |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
errors = []
for n in range(1, rounds + 1):
    for label, name in labels:
        r = results[(n, label)]
        if r is None:
            print(f"| {n} | {killed.get(str(n), '?')} | {name} | no result | | | | | |")
            continue
        note = "" if r["framesBeforeMark"] > 0 and r["markSeen"] else " (no frames before the kill)"
        print(f"| {n} | {killed.get(str(n), '?')} | {name}{note} | {ms(r['recoveryMs'])}"
              f"{' (reconnect)' if r['recoveredOn'] == 'reconnect' else ''} | {ms(r['firstFrameMs'])} | "
              f"{ms(r['longestGapMs'])} | {r['regressions']} | {r['maxTsJumpMs']} | {dropped(r)} |")
        errors += [f"round {n} {label}: {e}" for e in r.get("errors", [])]
def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
verdict = []
for label, name in labels:
    runs = [results[(n, label)] for n in range(1, rounds + 1)]
    got = [r for r in runs if r is not None]
    recovered = [r["recoveryMs"] for r in got if r["recoveryMs"] is not None]
    drops = sum(1 for r in got if r["dropped"])
    regressions = sum(r["regressions"] for r in got)
    print(f"| median | | {name} | {ms(median(recovered))} ({len(recovered)}/{rounds} recovered, max {ms(max(recovered) if recovered else None)}) | "
          f"{ms(median([r['firstFrameMs'] for r in got]))} | {ms(median([r['longestGapMs'] for r in got]))} "
          f"(max {ms(max((r['longestGapMs'] or 0) for r in got) if got else None)}) | {regressions} in all | "
          f"{ms(median([r['maxTsJumpMs'] for r in got]))} | {drops}/{rounds} |")
    if label != "source":
        ok = len(recovered) == rounds and max(recovered) <= 2000 and drops == 0 and regressions == 0
        verdict.append(f"{name}: {'meets' if ok else '**misses**'}")
print()
print("Target (issue): rungs back within 2 s of the kill, viewers stay connected, timestamps monotonic. " + "; ".join(verdict) + ".")
if errors:
    print()
    print("Probe notes: " + "; ".join(errors[:8]) + ("; …" if len(errors) > 8 else ""))
PY
  results_written=1
}

if has_stage hop; then hop_stage; fi
if has_stage failover; then failover_stage; fi
cat "$RESULTS"
log "written to $RESULTS"
