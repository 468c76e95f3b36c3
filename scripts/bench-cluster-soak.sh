#!/usr/bin/env bash
# Cluster soak (issue 23, item 7): a whole cluster under churn and faults for DURATION.
#
# Topology, every part its own process on loopback: nats-server, a coordinator, an ingest,
# two transcoders (transcode-1, transcode-2) and two relays (relay-1, relay-2); the `abr`
# application's default ladder (a 640x360 source gets 360p and 240p).
#
# Load (scripts/lib/cluster_soak.py run):
#   - 3 publishers into abr/soak1..3: a 60 s 640x360 30 fps clip (x264 veryfast, 2 s GOPs,
#     AAC) looped with `ffmpeg -re -stream_loop -1 -c copy`, each publishing a random
#     PUBLISH_MIN–PUBLISH_MAX s, pausing PAUSE_MIN–PAUSE_MAX s and coming back; the random
#     numbers come from SEED, so runs are comparable. (The clip is encoded once: three live
#     x264 encoders beside three ladders would take the two cores the cluster needs.)
#   - VIEWERS HTTP-FLV viewers spread evenly over the streams, the source and every rung,
#     and both relays. A viewer whose stream ends asks for it again (polls) until it is back.
# Faults (this script):
#   - every KILL_EVERY s, `kill -9` of the transcoder that runs most renditions (from the
#     coordinator's admin API), restarted at once (after KILL_RESTART_DELAY s, default 0) with
#     the same node id and ports, so there is always one to fail over to; 5 s later the
#     placement is asked again, to show who took the killed one's streams;
#   - once, at RELAY_RESTART_AT s (default: the midpoint between two kills nearest the middle
#     of the run), relay-1 gets SIGTERM (it drains, then exits) and starts again on its ports.
# Records, in RESULTS (a new directory under /tmp, kept): events.tsv (every start, kill,
# restart), rss.tsv (every SAMPLE_SECONDS: VmRSS and CPU ticks of every Estuary process, of
# nats-server and of the load generator), machine.tsv (/proc/stat), publishers.json,
# viewers.json (every connection, gap, failover), every process's log, and summary.md: ends
# ("drops") and gaps over 500 ms by cause (publisher pause, transcoder kill, relay restart,
# unexplained), failover times, the RSS table, and the verdict.
#
# Pass (exit 0): no viewer's stream ended except by its publisher's pause, a transcoder kill
# or the relay restart; no process exited on its own; every process's RSS flat after warm-up
# (last third against minutes 5–10, +10 % or 2 MiB allowed: scripts/lib/cluster_soak.py).
#
# Environment: DURATION=1800 KILL_EVERY=300 KILL_RESTART_DELAY=0 VIEWERS=50 SAMPLE_SECONDS=60 SEED=23
# PUBLISH_MIN=120 PUBLISH_MAX=300 PAUSE_MIN=10 PAUSE_MAX=30 RELAY_RESTART_AT=… SOURCE_SIZE=640x360
# LOG_LEVEL=info NODE=.build/release/estuary (the binary; SKIP_BUILD=1 to use it as it is,
# otherwise `swift build -c release --product estuary` first) RESULTS=/tmp/… (must not exist).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

DURATION=${DURATION:-1800}
KILL_EVERY=${KILL_EVERY:-300}
KILL_RESTART_DELAY=${KILL_RESTART_DELAY:-0}
VIEWERS=${VIEWERS:-50}
SAMPLE_SECONDS=${SAMPLE_SECONDS:-60}
SEED=${SEED:-23}
PUBLISH_MIN=${PUBLISH_MIN:-120}
PUBLISH_MAX=${PUBLISH_MAX:-300}
PAUSE_MIN=${PAUSE_MIN:-10}
PAUSE_MAX=${PAUSE_MAX:-30}
SOURCE_SIZE=${SOURCE_SIZE:-640x360}
LOG_LEVEL=${LOG_LEVEL:-info}
node=${NODE:-.build/release/estuary}
BUILD_LOCK=/tmp/estuary-build.lock
BUSY_PATTERN='swift-build|swift-test|swift-frontend|xctest|/Fuzz[A-Z]|fanout-bench|transcode-bench'
BENCH_NAME=bench-cluster-soak
# shellcheck source=lib/bench.sh
source "$(dirname "$0")/lib/bench.sh"

for var in DURATION KILL_EVERY KILL_RESTART_DELAY VIEWERS SAMPLE_SECONDS SEED PUBLISH_MIN PUBLISH_MAX PAUSE_MIN PAUSE_MAX; do
  [[ ${!var} =~ ^[0-9]+$ ]] || die "$var must be a whole number (is '${!var}')"
done
((DURATION >= 60 && DURATION <= 86400)) || die "DURATION must be 60…86400 s"
((KILL_EVERY >= 30)) || die "KILL_EVERY must be at least 30 s"
((KILL_RESTART_DELAY <= KILL_EVERY / 2)) || die "KILL_RESTART_DELAY must be at most KILL_EVERY / 2"
((VIEWERS >= 1 && VIEWERS <= 1000)) || die "VIEWERS must be 1…1000"
((SAMPLE_SECONDS >= 5)) || die "SAMPLE_SECONDS must be at least 5"
((PUBLISH_MIN >= 10 && PUBLISH_MIN <= PUBLISH_MAX && PAUSE_MIN <= PAUSE_MAX)) || die "need 10 ≤ PUBLISH_MIN ≤ PUBLISH_MAX and PAUSE_MIN ≤ PAUSE_MAX"
[[ $SOURCE_SIZE =~ ^([0-9]+)x([0-9]+)$ ]] || die "SOURCE_SIZE must be WIDTHxHEIGHT"
source_height=${BASH_REMATCH[2]}

# Kills at KILL_EVERY, 2·KILL_EVERY, … that leave 20 s to watch the failover.
kill_times=()
for ((t = KILL_EVERY; t <= DURATION - 20; t += KILL_EVERY)); do kill_times+=("$t"); done
# The relay restart: the midpoint between two faults (or the run's ends) nearest the middle.
if [[ -z ${RELAY_RESTART_AT:-} ]]; then
  bounds=(0 "${kill_times[@]}" "$DURATION")
  RELAY_RESTART_AT=$((DURATION / 2))
  best=$DURATION
  for ((i = 0; i + 1 < ${#bounds[@]}; i++)); do
    mid=$(((bounds[i] + bounds[i + 1]) / 2))
    dist=$((mid > DURATION / 2 ? mid - DURATION / 2 : DURATION / 2 - mid))
    if ((dist < best)); then best=$dist; RELAY_RESTART_AT=$mid; fi
  done
fi
[[ $RELAY_RESTART_AT =~ ^[0-9]+$ ]] && ((RELAY_RESTART_AT > 0 && RELAY_RESTART_AT < DURATION - 20)) ||
  die "RELAY_RESTART_AT must be within (0, DURATION − 20) s"

# The default abr ladder's rungs a source of this height gets (no upscaling: Ladder.plan).
rungs=""
for rung in 720 480 360 240; do ((rung <= source_height)) && rungs+="${rungs:+,}${rung}p"; done
[[ -n $rungs ]] || die "SOURCE_SIZE $SOURCE_SIZE is below every rung of the default ladder"

python=$(project_python)
for tool in ffmpeg flock pgrep nats-server curl "$python"; do command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh)"; done
if [[ -z ${SKIP_BUILD:-} ]]; then
  wait_quiet
  log "building the release node (holding $BUILD_LOCK)"
  flock -w 3600 "$BUILD_LOCK" swift build -c release --product estuary >&2
fi
[[ -x $node ]] || die "missing $node (build it, unset SKIP_BUILD, or point NODE at a binary)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

if [[ -n ${RESULTS:-} ]]; then
  [[ ! -e $RESULTS ]] || die "RESULTS=$RESULTS exists; name a new directory"
  mkdir -p "$RESULTS"
  tmp=$RESULTS
else
  tmp=$(mktemp -d /tmp/estuary-cluster-soak.XXXXXX)
fi
KEEP_TMP=1 # the results directory is the point of the run

# The load stops first (so its viewers see no ends; on SIGTERM it still writes its records),
# then the other processes in the reverse of their start order, nats-server last. A run that
# failed half-way still gets a report of what it recorded.
load_pid=""
cleanup() {
  local status=$? i
  if [[ -n $load_pid ]]; then stop_pid "$load_pid"; fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
  pids=()
  if ((status != 0)) && [[ -s $tmp/viewers.json && -s $tmp/rss.tsv && ! -e $tmp/summary.md ]]; then
    log "the run stopped early (exit $status); the report of what it recorded:"
    "$python" scripts/lib/cluster_soak.py report "$tmp" >"$tmp/summary.md" 2>&1 || true
    cat "$tmp/summary.md"
  fi
  (exit "$status")
  stop_all_on_exit
}
trap cleanup EXIT
trap 'exit 130' INT TERM

forget_pid() { # pid: no longer ours to stop (reaped), so a recycled pid is never signalled
  local i
  for i in "${!pids[@]}"; do [[ ${pids[i]} == "$1" ]] && unset 'pids[i]'; done
  pids=("${pids[@]}")
}

event() { # kind node pid extra: one line of events.tsv, stamped with the wall clock
  printf '%s\t%s\t%s\t%s\t%s\n' "$EPOCHREALTIME" "$1" "${2:-}" "${3:-}" "${4:-}" >>"$tmp/events.tsv"
}

alive() { # pid: running (not exited, not a zombie)
  [[ -r /proc/$1/stat ]] && [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# --- the cluster -----------------------------------------------------------------------------
declare -A node_pid=() node_http=() node_admin=() node_rtmp=() node_role=() node_runs=() node_env=() node_log=()
node_ids=(coordinator ingest-1 transcode-1 transcode-2 relay-1 relay-2)

# soak_node ID [ROLE [ENV…]]: starts (or restarts) node ID; its ports are picked once and kept
# across restarts; its log is ID.log, then ID.run2.log, …; waits (30 s) for /readyz.
soak_node() {
  local id=$1 log pid
  if [[ -z ${node_role[$id]:-} ]]; then
    node_role[$id]=$2
    node_env[$id]="${*:3}"
    pick_port "node_http[$id]" 29800
    pick_port "node_rtmp[$id]" 29900
    pick_port "node_admin[$id]" 29700
  fi
  node_runs[$id]=$((${node_runs[$id]:-0} + 1))
  log=$id
  ((node_runs[$id] == 1)) || log=$id.run${node_runs[$id]}
  node_log[$id]=$log
  # shellcheck disable=SC2086 # node_env holds VAR=value words without spaces
  start "$log" env ${node_env[$id]} "$node" --role "${node_role[$id]}" --node-id "$id" \
    --http-port "${node_http[$id]}" --rtmp-port "${node_rtmp[$id]}" --admin-port "${node_admin[$id]}" --data-dir "$tmp/data-$id" "${bus[@]}"
  pid=$started
  node_pid[$id]=$pid
  event start "$id" "$pid" "run=${node_runs[$id]}"
  wait_http "$log" "http://127.0.0.1:${node_http[$id]}/readyz" "$pid" 30
  event ready "$id" "$pid"
}

pick_port nats_port 29722
start nats nats-server -a 127.0.0.1 -p "$nats_port"
nats_pid=$started
event start nats "$nats_pid"
wait_port "$nats_port" || die "nats-server did not listen (see $tmp/nats.log)"
bus=(--nats "nats://127.0.0.1:$nats_port" --log-level "$LOG_LEVEL" --bind 127.0.0.1 --advertise-host 127.0.0.1)
admin_token=$(od -An -v -tx1 -N16 /dev/urandom | tr -d ' \n')
# The admin token in the coordinator's environment, as in docker-compose.yml, not on its command line.
soak_node coordinator coordinator "ESTUARY_ADMIN_TOKEN=$admin_token"
soak_node ingest-1 ingest
soak_node transcode-1 transcode
soak_node transcode-2 transcode
soak_node relay-1 relay
soak_node relay-2 relay
log "cluster up: nats :$nats_port, coordinator :${node_http[coordinator]}, ingest rtmp :${node_rtmp[ingest-1]}, relays :${node_http[relay-1]} :${node_http[relay-2]} (logs in $tmp)"

encode_failover_source "$tmp/clip.flv" 60 "$SOURCE_SIZE"

# --- samples -------------------------------------------------------------------------------
sample_round=0
sample() { # VmRSS (KiB) and utime+stime (ticks) of every process, and the machine's /proc/stat
  local id pid rss ticks
  for id in nats "${node_ids[@]}" viewers; do
    case $id in
      nats) pid=$nats_pid ;;
      viewers) pid=$load_pid ;;
      *) pid=${node_pid[$id]} ;;
    esac
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$EPOCHREALTIME" "$sample_round" "$id" "$pid" "${rss:-0}" "${ticks:-0}" >>"$tmp/rss.tsv"
  done
  # The publishers (the load generator's ffmpeg children): their RSS summed; their CPU time, that
  # of the finished ones included (the generator's cutime + cstime).
  local kid kids=() rss_sum=0 tick_sum
  tick_sum=$(awk '{ print $16 + $17 }' "/proc/$load_pid/stat" 2>/dev/null || echo 0)
  mapfile -t kids < <(pgrep -P "$load_pid" 2>/dev/null || true)
  for kid in "${kids[@]}"; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$kid/status" 2>/dev/null || true)
    ticks=$(awk '{ print $14 + $15 }' "/proc/$kid/stat" 2>/dev/null || true)
    rss_sum=$((rss_sum + ${rss:-0}))
    tick_sum=$((tick_sum + ${ticks:-0}))
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$EPOCHREALTIME" "$sample_round" publishers "$load_pid" "$rss_sum" "$tick_sum" >>"$tmp/rss.tsv"
  awk -v now="$EPOCHREALTIME" '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; print now "\t" busy "\t" busy + $5 + $6; exit }' /proc/stat >>"$tmp/machine.tsv"
  sample_round=$((sample_round + 1))
}

# --- faults --------------------------------------------------------------------------------
prefer=transcode-1
placement() { # prints `victim<TAB>known=…;streams=…;unplaced=…<TAB>placement` (cluster_soak.py placement)
  local line
  line=$(ESTUARY_ADMIN_TOKEN=$admin_token timeout 10 "$python" scripts/lib/cluster_soak.py placement \
    "http://127.0.0.1:${node_admin[coordinator]}/api/v1/streams" --transcoders transcode-1,transcode-2 --prefer "$prefer" \
    2>>"$tmp/placement.log" || true)
  printf '%s %s\n' "$(date +%T)" "$line" >>"$tmp/placement.log"
  printf '%s\n' "$line"
}

kill_transcoder() {
  local line victim extra pid
  line=$(placement)
  IFS=$'\t' read -r victim extra _ <<<"$line"
  [[ $victim == transcode-1 || $victim == transcode-2 ]] || victim=$prefer
  [[ $victim == transcode-1 ]] && prefer=transcode-2 || prefer=transcode-1
  pid=${node_pid[$victim]}
  kill -KILL "$pid"
  event kill "$victim" "$pid" "${extra:-known=0}"
  wait "$pid" 2>/dev/null || true
  forget_pid "$pid"
  log "killed $victim (pid $pid; ${extra:-placement unknown}); restarting it after ${KILL_RESTART_DELAY} s"
  sleep "$KILL_RESTART_DELAY"
  soak_node "$victim"
}

placement_event() { # the placement now, as an event (the report shows who took a killed transcoder's streams)
  local summary
  IFS=$'\t' read -r _ _ summary <<<"$(placement)"
  event placement "" "" "${summary:-unknown}"
}

restart_relay() { # id: SIGTERM (the node drains), up to 30 s for it to exit, then the same ports again
  local id=$1 pid=${node_pid[$1]} i t0
  log "restarting $id (SIGTERM: it drains, then exits)"
  t0=$EPOCHREALTIME
  event relay-stop "$id" "$pid"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    event relay-exit "$id" "$pid" "killed after 30 s"
  else
    event relay-exit "$id" "$pid" "exited"
  fi
  wait "$pid" 2>/dev/null || true
  forget_pid "$pid"
  log "$id exited $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s after SIGTERM"
  soak_node "$id"
}

# --- the run -------------------------------------------------------------------------------
wait_quiet
t0=$EPOCHREALTIME
t0s=${t0%.*}
command="SKIP_BUILD=${SKIP_BUILD:-} DURATION=$DURATION KILL_EVERY=$KILL_EVERY KILL_RESTART_DELAY=$KILL_RESTART_DELAY VIEWERS=$VIEWERS SAMPLE_SECONDS=$SAMPLE_SECONDS SEED=$SEED PUBLISH_MIN=$PUBLISH_MIN PUBLISH_MAX=$PUBLISH_MAX PAUSE_MIN=$PAUSE_MIN PAUSE_MAX=$PAUSE_MAX scripts/bench-cluster-soak.sh"
build="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- Sources 2>/dev/null || echo ' + uncommitted Sources changes'), binary of $(date -r "$node" '+%F %H:%M')"
"$python" - "$tmp/run.json" <<PY
import json, sys
json.dump({"t0": $t0, "duration": $DURATION, "killEvery": $KILL_EVERY, "killRestartDelay": $KILL_RESTART_DELAY, "relayRestartAt": $RELAY_RESTART_AT,
           "viewers": $VIEWERS, "seed": $SEED, "publish": "$PUBLISH_MIN–$PUBLISH_MAX", "pause": "$PAUSE_MIN–$PAUSE_MAX",
           "source": "$SOURCE_SIZE", "rungs": "$rungs", "node": "$node", "build": """$build""",
           "command": """$command"""}, open(sys.argv[1], "w"))
PY
log "soak: ${DURATION}s; kills at ${kill_times[*]:-none} s; relay-1 restart at ${RELAY_RESTART_AT}s; $VIEWERS viewers; results in $tmp"
# Two malloc arenas: fifty threads' 64 KiB reads otherwise spread over 16 arenas that only grow.
start viewers env MALLOC_ARENA_MAX=2 "$python" scripts/lib/cluster_soak.py run --dir "$tmp" --t0 "$t0" --duration "$DURATION" \
  --ingest "rtmp://127.0.0.1:${node_rtmp[ingest-1]}" \
  --relays "relay-1=http://127.0.0.1:${node_http[relay-1]},relay-2=http://127.0.0.1:${node_http[relay-2]}" \
  --clip "$tmp/clip.flv" --viewers "$VIEWERS" --rungs "$rungs" --seed "$SEED" \
  --publish "$PUBLISH_MIN:$PUBLISH_MAX" --pause "$PAUSE_MIN:$PAUSE_MAX"
load_pid=$started
event start viewers "$load_pid"

next_sample=0
next_kill=0
relay_restarted=""
placement_at=""
while true; do
  now=$((${EPOCHREALTIME%.*} - t0s))
  ((now < DURATION)) || break
  alive "$load_pid" || die "the load generator exited early (see $tmp/viewers.log): $(tail -3 "$tmp/viewers.log")"
  if ((now >= next_sample)); then
    sample
    placement_event # what each transcoder runs now: their RSS is compared at equal load
    next_sample=$((next_sample + SAMPLE_SECONDS))
  fi
  if ((next_kill < ${#kill_times[@]} && now >= kill_times[next_kill])); then
    kill_transcoder
    next_kill=$((next_kill + 1))
    placement_at=$((now + 5))
  fi
  if [[ -n $placement_at ]] && ((now >= placement_at)); then
    placement_at=""
    placement_event
  fi
  if [[ -z $relay_restarted ]] && ((now >= RELAY_RESTART_AT)); then
    relay_restarted=1
    restart_relay relay-1
  fi
  for id in "${node_ids[@]}"; do
    if ! alive "${node_pid[$id]}"; then
      log "warning: $id (pid ${node_pid[$id]}) exited on its own: $(tail -3 "$tmp/${node_log[$id]}.log" 2>/dev/null)"
      event died "$id" "${node_pid[$id]}"
      wait "${node_pid[$id]}" 2>/dev/null || true
      forget_pid "${node_pid[$id]}"
      soak_node "$id"
    fi
  done
  alive "$nats_pid" || die "nats-server exited (see $tmp/nats.log)"
  sleep 1
done
sample
placement_event

# The load stops by itself at the end (its viewers first, then its publishers); 60 s at most.
for ((i = 0; i < 600; i++)); do
  alive "$load_pid" || break
  sleep 0.1
done
stop_pid "$load_pid"
forget_pid "$load_pid"
load_pid=""
[[ -s $tmp/viewers.json ]] || die "the load generator wrote no results (see $tmp/viewers.log)"

status=0
"$python" scripts/lib/cluster_soak.py report "$tmp" >"$tmp/summary.md" || status=$?
cat "$tmp/summary.md"
log "results in $tmp (summary.md, events.tsv, rss.tsv, viewers.json, logs)"
exit "$status"
