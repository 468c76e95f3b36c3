#!/usr/bin/env bash
# Runs the cluster of docker/docker-compose.yml as local processes, for machines without a
# Docker engine: its nats-servers (three, routed into one cluster), then every Estuary
# service with the arguments of its compose `command:` list. Ctrl-C (or any exit) stops
# everything this script started.
#
#   scripts/cluster-local.sh            start, wait for every /readyz, print endpoints, run until Ctrl-C
#   scripts/cluster-local.sh --check    start, wait for readiness, stop; exit 0 if all became ready
#   scripts/cluster-local.sh --print    print the local command of every service, start nothing
#   scripts/cluster-local.sh --print-compose   the compose commands as parsed: "service<TAB>argument" lines
#   scripts/cluster-local.sh --print-args      the local commands:             "service<TAB>argument" lines
#
# The compose file is the single source of the commands. This script reads it with a small
# parser (no PyYAML): a service's `command:` must be a block list, one argument a line
# (`      - --role`), its `environment:` a block map, one variable a line (`      KEY: value`),
# and its healthcheck a `test:` line with `http://localhost:PORT/PATH`.
#
# The services named `nats` or `nats-<n>` are nats-servers; the others are Estuary nodes.
#
# Substitutions, applied mechanically (k = the service's position in the compose file,
# nats-1 = 0, nats-2 = 1, nats-3 = 2, coordinator = 3, ...; SHIFT = $CLUSTER_PORT_SHIFT,
# default 20000):
#   * `${NAME}`, `${NAME:-default}` and `${NAME:?message}` in a command argument or an
#     `environment:` value are interpolated as compose does (a missing required one stops
#     the script with compose's message);
#   * a service's `environment:` map is its process's environment, as in its container:
#     ESTUARY_ADMIN_TOKEN for the coordinator, ESTUARY_NATS_TOKEN_QUOTED for the nats-servers
#     (the secrets themselves are not passed on to other processes);
#   * a container port P of service k becomes the loopback port P + SHIFT + 100*k
#     (nats-1 4222 -> 24222, 6222 -> 26222 and 8222 -> 28222; nats-2 -> 24322, 26322, 28322;
#     nats-3 -> 24422, 26422, 28422; coordinator 8090 -> 28390, ingest 1935 -> 22335 and
#     8080 -> 28480, transcode-1 8080 -> 28580, transcode-2 -> 28680, relay-1 -> 28780,
#     relay-2 -> 28880, edge -> 28980; keep SHIFT + 8980 below 32768, the first ephemeral port);
#   * in a `--nats` list, `nats://[TOKEN@]<service>:<port>` becomes
#     `nats://[TOKEN@]127.0.0.1:<that service's mapped port>` (a nats-server this run does not
#     start, see CLUSTER_NATS_SERVERS, is left out of the list);
#   * `--advertise-host <service>` becomes `--advertise-host 127.0.0.1`;
#   * in an `--upstream` list, `http://<service>:<port>` and `rtmp://<service>:<port>`
#     become `…://127.0.0.1:<that service's mapped port>`;
#   * a `--http-port` / `--rtmp-port` value is mapped as a port of its own service;
#   * a path under `/data` becomes the same path under $CLUSTER_DIR/<service>
#     (the service's volume); a nats-server's `/etc/nats/FILE` is docker/FILE (its bind mount);
#   * in a nats-server's `--routes` list, `nats-route://[USER:PASSWORD@]<service>:<port>`
#     becomes `…@127.0.0.1:<mapped port>` (routes to servers this run does not start are
#     left out);
#   * options a container does not need, because it has its own network namespace and
#     filesystem, are appended when the command lacks them: `--bind 127.0.0.1`,
#     `--rtmp-port`, `--http-port` (the mapped defaults 1935 and 8080), `--data-dir`;
#     a nats-server gets `--addr 127.0.0.1 --port --http_port` (its mapped 4222 and 8222)
#     and, when it has `--routes`, `--cluster_listen nats-route://USER:PASSWORD@127.0.0.1:<its
#     mapped route port>` with the credentials of its routes: a listen flag without them would
#     clear nats-cluster.conf's route authorization.
#
# NATS: the nats-servers start first. The script waits (bounded) until each answers /healthz
# and reports `"auth_required": true` in /varz, until each route port asks for credentials
# too (its INFO says `"auth_required": true`), and until every server's /routez lists routes
# to all the others; only then does it start a node. Every node is given every server's
# URL. CLUSTER_NATS_SERVERS=1 runs only the first nats-server (its routes reduced to
# itself) and gives the nodes that one URL, as before the bus was a cluster.
#
# Secrets: no defaults. ESTUARY_ADMIN_TOKEN (the admin API's bearer token) and
# ESTUARY_NATS_TOKEN (the token nats.conf requires of every client) come from the
# environment when set there; otherwise from $CLUSTER_DIR/secrets/admin-token and
# $CLUSTER_DIR/secrets/nats-token, which the first run in that directory creates (32 random
# bytes as hex, mode 600) and whose paths it prints. The NATS token must be letters, digits,
# `.`, `_`, `~` or `-` (it goes into nats:// URLs). The script checks that nats-server
# requires authentication before it starts any node. Everything it creates is private
# (umask 077): commands.txt and the nodes' logs hold nats:// URLs with the token.
# --print and --print-args create nothing: they use the secrets of the environment or of
# existing files, else the placeholders <ESTUARY_ADMIN_TOKEN> and <ESTUARY_NATS_TOKEN>.
#
# Environment: ESTUARY_NODE (node binary; default .build/debug/estuary, else .build/release/estuary),
# NATS_SERVER (default: nats-server on PATH), CLUSTER_DIR (data, logs and secrets; default a
# new temporary directory, so new secrets each run), CLUSTER_PORT_SHIFT,
# CLUSTER_NATS_SERVERS (how many of the compose file's nats-servers to run, in its order;
# default all of them, 3), CLUSTER_READY_TIMEOUT (seconds, default 45), ESTUARY_ADMIN_TOKEN,
# ESTUARY_NATS_TOKEN.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
compose="${CLUSTER_COMPOSE_FILE:-$repo/docker/docker-compose.yml}"
shift_ports="${CLUSTER_PORT_SHIFT:-20000}"
ready_timeout="${CLUSTER_READY_TIMEOUT:-45}"
stop_timeout=10
# Secrets, commands.txt (nats:// URLs with the token) and logs: readable by this user only.
umask 077

mode=run
case "${1:-}" in
    "") ;;
    --check) mode=check ;;
    --print) mode=print ;;
    --print-compose) mode=print-compose ;;
    --print-args) mode=print-args ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "cluster-local: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac

die() { echo "cluster-local: $*" >&2; exit 1; }

[[ -r "$compose" ]] || die "cannot read $compose"

# ---- parse the compose file: "cmd<TAB>service<TAB>argument", "env<TAB>service<TAB>KEY<TAB>value"
# and "health<TAB>service<TAB>url" ----
parsed="$(awk '
    function unquote(s) {
        sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s)
        if (s ~ /^".*"$/ || s ~ /^\047.*\047$/) s = substr(s, 2, length(s) - 2)
        return s
    }
    /^[^ \t#]/ { in_services = ($0 ~ /^services:[ \t]*$/); service = ""; in_command = 0; in_env = 0; next }
    !in_services { next }
    /^  [A-Za-z0-9][A-Za-z0-9_.-]*:[ \t]*$/ {
        service = $0; sub(/^  /, "", service); sub(/:[ \t]*$/, "", service)
        print "service\t" service; in_command = 0; in_env = 0; next
    }
    service == "" { next }
    /^    [^ \t#]/ { in_command = 0; in_env = 0 }
    /^    command:[ \t]*$/ { in_command = 1; next }
    /^    command:/ { print "error\t" service "\tcommand must be a block list, one argument a line"; next }
    /^    environment:[ \t]*$/ { in_env = 1; next }
    /^    environment:/ { print "error\t" service "\tenvironment must be a block map, one variable a line"; next }
    in_command && /^      - / { arg = $0; sub(/^      - /, "", arg); print "cmd\t" service "\t" unquote(arg); next }
    in_command && /^[ \t]*#/ { next }
    in_command { in_command = 0 }
    in_env && /^      [A-Za-z_][A-Za-z0-9_]*:/ {
        key = $0; sub(/^      /, "", key); sub(/:.*$/, "", key)
        value = $0; sub(/^      [A-Za-z_][A-Za-z0-9_]*:/, "", value)
        print "env\t" service "\t" key "\t" unquote(value); next
    }
    in_env && /^[ \t]*#/ { next }
    in_env && /^      - / { print "error\t" service "\tenvironment must be a map (KEY: value), not a list"; next }
    in_env { in_env = 0 }
    /^      test:/ && match($0, /http:\/\/localhost:[0-9]+\/[A-Za-z0-9_\/-]*/) {
        print "health\t" service "\t" substr($0, RSTART, RLENGTH)
    }
' "$compose")"

if grep -q '^error' <<<"$parsed"; then
    die "$(grep '^error' <<<"$parsed" | cut -f2- | tr '\t' ' ')"
fi

services=()
while IFS=$'\t' read -r kind name _; do
    [[ "$kind" == service ]] && services+=("$name")
done <<<"$parsed"
((${#services[@]} > 0)) || die "no services in $compose"

index_of() {  # index_of SERVICE -> k
    local i
    for i in "${!services[@]}"; do [[ "${services[$i]}" == "$1" ]] && { echo "$i"; return 0; }; done
    return 1
}
map_port() {  # map_port SERVICE PORT -> loopback port
    local k
    k="$(index_of "$1")" || die "no service '$1' in $compose"
    echo $(( $2 + shift_ports + 100 * k ))
}
compose_args() {  # compose_args SERVICE -> one argument a line
    awk -F'\t' -v s="$1" '$1 == "cmd" && $2 == s { print $3 }' <<<"$parsed"
}
health_url() {  # health_url SERVICE -> the healthcheck URL, loopback-mapped
    local url port path
    url="$(awk -F'\t' -v s="$1" '$1 == "health" && $2 == s { print $3; exit }' <<<"$parsed")"
    [[ -n "$url" ]] || return 1
    port="${url#http://localhost:}"; path="/${port#*/}"; port="${port%%/*}"
    echo "http://127.0.0.1:$(map_port "$1" "$port")$path"
}
is_service() { index_of "$1" >/dev/null 2>&1; }
is_nats() { [[ "$1" =~ ^nats(-[0-9]+)?$ ]]; }  # is_nats SERVICE: a nats-server, by its name

# The nats-servers of the compose file, in its order, and the first CLUSTER_NATS_SERVERS of
# them, which this run starts; `run_services` is what it starts, in compose order.
nats_services=()
for service in "${services[@]}"; do
    if is_nats "$service"; then nats_services+=("$service"); fi
done
((${#nats_services[@]} > 0)) || die "no nats-server service (named nats or nats-<n>) in $compose"
nats_count="${CLUSTER_NATS_SERVERS:-${#nats_services[@]}}"
if ! [[ "$nats_count" =~ ^[0-9]+$ ]] || ((nats_count < 1 || nats_count > ${#nats_services[@]})); then
    die "CLUSTER_NATS_SERVERS must be 1 to ${#nats_services[@]} (the nats-servers in $compose), not '$nats_count'"
fi
running_nats=("${nats_services[@]:0:nats_count}")
runs() {  # runs SERVICE: whether this run starts it
    local n
    is_nats "$1" || return 0
    for n in "${running_nats[@]}"; do [[ "$n" == "$1" ]] && return 0; done
    return 1
}
run_services=()
for service in "${services[@]}"; do
    if runs "$service"; then run_services+=("$service"); fi
done

# interpolate TEXT -> sets `interpolated`: compose's `${NAME}`, `${NAME-default}`,
# `${NAME:-default}`, `${NAME?message}` and `${NAME:?message}` resolved from this script's
# variables (the environment and the secrets below), `$$` a literal `$`. A required variable
# that is missing stops the script with compose's message; in the print modes it becomes the
# placeholder <NAME>. It sets a variable rather than printing, so that `die` exits the script.
placeholders=0
interpolated=""
interpolate() {
    local rest="$1" out="" name op word value
    while [[ "$rest" == *'$'* ]]; do
        out+="${rest%%\$*}"
        rest="${rest#*\$}"
        if [[ "$rest" == '$'* ]]; then
            out+='$'; rest="${rest#\$}"; continue
        fi
        [[ "$rest" =~ ^\{([A-Za-z_][A-Za-z0-9_]*)((:?[-?])([^}]*))?\} ]] \
            || die "unsupported interpolation in '$1' (\${NAME}, \${NAME:-default} or \${NAME:?message})"
        name="${BASH_REMATCH[1]}"; op="${BASH_REMATCH[3]}"; word="${BASH_REMATCH[4]}"
        rest="${rest:${#BASH_REMATCH[0]}}"
        if [[ -n "${!name+set}" && ( -n "${!name}" || "$op" == - || "$op" == '?' ) ]]; then
            value="${!name}"
        elif [[ "$op" == *- ]]; then
            value="$word"
        elif [[ "$op" == *'?' ]]; then
            ((placeholders)) || die "required variable $name is missing a value: $word"
            value="<$name>"
        else
            value=""
        fi
        out+="$value"
    done
    interpolated="$out$rest"
}

# service_env SERVICE -> fills the array `envs` with the service's KEY=value, interpolated
service_env() {
    local key value
    envs=()
    while IFS=$'\t' read -r key value; do
        interpolate "$value"
        envs+=("$key=$interpolated")
    done < <(awk -F'\t' -v s="$1" '$1 == "env" && $2 == s { print $3 "\t" $4 }' <<<"$parsed")
}

# ---- secrets: never a default; from the environment, else from $dir/secrets ----
secret_names=(ESTUARY_ADMIN_TOKEN ESTUARY_NATS_TOKEN)
secret_file() {  # secret_file NAME -> its file under $dir/secrets
    case "$1" in
        ESTUARY_ADMIN_TOKEN) echo "$dir/secrets/admin-token" ;;
        ESTUARY_NATS_TOKEN) echo "$dir/secrets/nats-token" ;;
        *) die "no secret $1" ;;
    esac
}
new_token() {  # 32 random bytes as 64 hex digits
    od -An -v -tx1 -N32 /dev/urandom | tr -d ' \n'
}
# load_secrets CREATE: each secret from the environment, else from its file, else (CREATE=1)
# a new random one written to its file, mode 600; CREATE=1 also says where each came from.
load_secrets() {
    local create="$1" name file value
    for name in "${secret_names[@]}"; do
        file="$(secret_file "$name")"
        value="${!name-}"
        if [[ -n "$value" ]]; then
            if ((create)); then echo "cluster-local: $name from the environment"; fi
        elif [[ -s "$file" && -r "$file" ]]; then
            value="$(<"$file")"
            if ((create)); then chmod 600 "$file"; echo "cluster-local: $name from $file"; fi
        elif ((create)); then
            mkdir -p "$dir/secrets"
            chmod 700 "$dir/secrets"
            value="$(new_token)"
            [[ ${#value} -eq 64 ]] || die "could not read 32 random bytes from /dev/urandom"
            printf '%s\n' "$value" >"$file"
            chmod 600 "$file"
            echo "cluster-local: $name generated into $file (mode 600; reused while CLUSTER_DIR is this directory)"
        else
            continue
        fi
        printf -v "$name" '%s' "$value"
    done
    if [[ -n "${ESTUARY_NATS_TOKEN-}" && ! "$ESTUARY_NATS_TOKEN" =~ ^[A-Za-z0-9._~-]+$ ]]; then
        die "ESTUARY_NATS_TOKEN must be letters, digits, '.', '_', '~' or '-': it goes into nats:// URLs"
    fi
}

# local_command SERVICE DIR -> fills the array `cmd`
local_command() {
    local service="$1" dir="$2" arg previous="" value
    local -a args=()
    mapfile -t args < <(compose_args "$service")
    ((${#args[@]} > 0)) || die "service '$service' has no command list in $compose"
    cmd=()
    if is_nats "$service"; then
        local routes="" route_user="" route_port=6222
        cmd=("${NATS_SERVER:-nats-server}")
        for arg in "${args[@]}"; do
            interpolate "$arg"
            value="$interpolated"
            [[ "$value" == /etc/nats/* ]] && value="$repo/docker/${value#/etc/nats/}"
            if [[ "$previous" == --routes ]]; then
                map_routes "$service" "$value"
                value="$mapped_routes"; routes="$value"
                route_user="$mapped_route_user"; route_port="$mapped_route_port"
            fi
            cmd+=("$value")
            previous="$arg"
        done
        cmd+=(--addr 127.0.0.1 --port "$(map_port "$service" 4222)" --http_port "$(map_port "$service" 8222)")
        # The route port on loopback, with the routes' credentials: without them this flag
        # would clear the configuration's cluster authorization (nats-cluster.conf).
        [[ -n "$routes" ]] && cmd+=(--cluster_listen "nats-route://${route_user}127.0.0.1:$(map_port "$service" "$route_port")")
        return 0
    fi
    cmd=("$node_binary")
    for arg in "${args[@]}"; do
        interpolate "$arg"
        value="$interpolated"
        case "$previous" in
            --http-port|--rtmp-port|--admin-port) value="$(map_port "$service" "$value")" ;;
            --admin-bind) value=127.0.0.1 ;;
            --advertise-host) is_service "$value" && value=127.0.0.1 ;;
            --upstream) value="$(map_upstreams "$value")" ;;
            --nats) map_nats "$value"; value="$mapped_nats" ;;
        esac
        if [[ "$value" == /data || "$value" == /data/* ]]; then
            value="$dir/$service${value#/data}"
        fi
        cmd+=("$value")
        previous="$arg"
    done
    has() { local a; for a in "${args[@]}"; do [[ "$a" == "$1" ]] && return 0; done; return 1; }
    has --bind || cmd+=(--bind 127.0.0.1)
    has --rtmp-port || cmd+=(--rtmp-port "$(map_port "$service" 1935)")
    has --http-port || cmd+=(--http-port "$(map_port "$service" 8080)")
    has --admin-port || cmd+=(--admin-port "$(map_port "$service" 8090)")
    has --data-dir || cmd+=(--data-dir "$dir/$service")
}

# map_nats "nats://TOKEN@nats-1:4222,…" -> sets `mapped_nats`: the servers this run starts,
# loopback-mapped (a variable, not output, so that `die` exits the script)
map_nats() {
    local list="$1" item out="" user host port
    local -a items=()
    IFS=',' read -r -a items <<<"$list"
    for item in "${items[@]}"; do
        if [[ "$item" =~ ^nats://([^@/]+@)?([A-Za-z0-9_.-]+):([0-9]+)$ ]] && is_service "${BASH_REMATCH[2]}"; then
            user="${BASH_REMATCH[1]}" host="${BASH_REMATCH[2]}" port="${BASH_REMATCH[3]}"
            runs "$host" || continue
            item="nats://${user}127.0.0.1:$(map_port "$host" "$port")"
        fi
        out+="${out:+,}$item"
    done
    [[ -n "$out" ]] || die "--nats '$list' names no nats-server this run starts"
    mapped_nats="$out"
}

# map_routes SERVICE "nats-route://USER:PASSWORD@nats-1:6222,…" -> sets `mapped_routes` (the
# routes to the servers this run starts, loopback-mapped), `mapped_route_user` ("USER:PASSWORD@"
# of the routes, or empty) and `mapped_route_port` (the container port of SERVICE's own route).
map_routes() {
    local self="$1" list="$2" item scheme user host port
    local -a items=()
    mapped_routes=""; mapped_route_user=""; mapped_route_port=6222
    IFS=',' read -r -a items <<<"$list"
    for item in "${items[@]}"; do
        if [[ "$item" =~ ^(nats-route|nats)://([^@/]+@)?([A-Za-z0-9_.-]+):([0-9]+)/?$ ]] && is_service "${BASH_REMATCH[3]}"; then
            scheme="${BASH_REMATCH[1]}" user="${BASH_REMATCH[2]}" host="${BASH_REMATCH[3]}" port="${BASH_REMATCH[4]}"
            [[ -n "$mapped_route_user" ]] || mapped_route_user="$user"
            [[ "$host" != "$self" ]] || mapped_route_port="$port"
            runs "$host" || continue
            item="$scheme://${user}127.0.0.1:$(map_port "$host" "$port")"
        fi
        mapped_routes+="${mapped_routes:+,}$item"
    done
}

map_upstreams() {  # map_upstreams "http://relay-1:8080,rtmp://…" -> the same, loopback-mapped
    local list="$1" item out="" rest
    local -a items=()
    IFS=',' read -r -a items <<<"$list"
    for item in "${items[@]}"; do
        if [[ "$item" =~ ^(https?|rtmp)://([A-Za-z0-9_.-]+):([0-9]+)(/.*)?$ ]] && is_service "${BASH_REMATCH[2]}"; then
            rest="${BASH_REMATCH[4]}"
            item="${BASH_REMATCH[1]}://127.0.0.1:$(map_port "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}")$rest"
        fi
        out+="${out:+,}$item"
    done
    echo "$out"
}

role_of() {  # role_of SERVICE -> the --role value, or the service name
    local previous="" arg
    while read -r arg; do
        [[ "$previous" == --role ]] && { echo "$arg"; return; }
        previous="$arg"
    done < <(compose_args "$1")
    echo "$1"
}

if [[ -n "${ESTUARY_NODE:-}" ]]; then
    node_binary="$ESTUARY_NODE"
elif [[ -x "$repo/.build/debug/estuary" ]]; then
    node_binary="$repo/.build/debug/estuary"
else
    node_binary="$repo/.build/release/estuary"
fi

case "$mode" in
    print-compose)
        awk -F'\t' '$1 == "cmd" { print $2 "\t" $3 }' <<<"$parsed"
        exit 0 ;;
    print|print-args)
        dir="${CLUSTER_DIR:-/tmp/estuary-cluster}"
        placeholders=1
        load_secrets 0
        for service in "${run_services[@]}"; do
            local_command "$service" "$dir"
            if [[ "$mode" == print ]]; then
                printf '%-12s' "$service"; printf ' %q' "${cmd[@]}"; printf '\n'
            else
                for arg in "${cmd[@]}"; do printf '%s\t%s\n' "$service" "$arg"; done
            fi
        done
        exit 0 ;;
esac

# ---- run ----
[[ -x "$node_binary" ]] || die "no node binary at $node_binary: build it (swift build --product estuary) or set ESTUARY_NODE"
command -v "${NATS_SERVER:-nats-server}" >/dev/null || die "nats-server not found: apt-get install nats-server, or set NATS_SERVER"
command -v curl >/dev/null || die "curl not found: apt-get install curl"

if [[ -n "${CLUSTER_DIR:-}" ]]; then
    dir="$CLUSTER_DIR"
else
    dir="$(mktemp -d "${TMPDIR:-/tmp}/estuary-cluster.XXXXXX")"
fi
mkdir -p "$dir/logs"
load_secrets 1

pids=()        # parallel to started
started=()
stopping=0
stop_all() {
    ((stopping)) && return
    stopping=1
    local i pid deadline
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${pids[$i]}" 2>/dev/null || true
    done
    deadline=$((SECONDS + stop_timeout))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "cluster-local: pid $pid did not stop in ${stop_timeout}s; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
}
trap 'stop_all' EXIT
trap 'echo; echo "cluster-local: stopping"; exit 130' INT
trap 'exit 143' TERM

# exited_report SERVICE PID: explains a process that ended on its own.
exited_report() {
    local status=0
    wait "$2" 2>/dev/null || status=$?
    echo "cluster-local: service '$1' (role $(role_of "$1")) exited with status $status; last lines of $dir/logs/$1.log:" >&2
    tail -n 15 "$dir/logs/$1.log" | sed 's/^/    /' >&2
}

pid_of() {  # pid_of SERVICE -> the pid of a service this script started
    local i
    for i in "${!started[@]}"; do [[ "${started[$i]}" == "$1" ]] && { echo "${pids[$i]}"; return 0; }; done
    return 1
}

# route_info PORT -> the INFO line a route port sends on connect (empty when none in 2 s)
route_info() {
    ( exec 3<>"/dev/tcp/127.0.0.1/$1" && IFS= read -r -t 2 line <&3 && printf '%s\n' "$line" ) 2>/dev/null || true
}

# check_nats SERVICE: healthy within 10 s; clients, and routes when it has a route port, must
# present credentials. The nodes retry a failed connect, but checking here makes a broken
# configuration obvious, and no node starts against a NATS that lets anyone in.
declare -A route_ports=()
check_nats() {
    local service="$1" pid url varz info deadline
    pid="$(pid_of "$service")"
    url="$(health_url "$service")" || die "$service has no healthcheck URL"
    deadline=$((SECONDS + 10))
    until curl -fsS -m 1 -o /dev/null "$url" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || { exited_report "$service" "$pid"; exit 1; }
        ((SECONDS < deadline)) || die "$service (nats-server) not healthy at $url within 10s"
        sleep 0.1
    done
    varz="$(curl -fsS -m 2 "${url%/*}/varz" 2>/dev/null || true)"
    [[ "$varz" =~ \"auth_required\":[[:space:]]*true ]] \
        || die "$service (nats-server) does not require authentication (${url%/*}/varz): docker/nats.conf must keep its authorization block"
    if [[ -n "${route_ports[$service]-}" ]]; then
        info="$(route_info "${route_ports[$service]}")"
        [[ "$info" =~ \"auth_required\":[[:space:]]*true ]] \
            || die "$service (nats-server): its route port 127.0.0.1:${route_ports[$service]} does not require authentication${info:+ ($info)}: docker/nats-cluster.conf must keep its cluster authorization, and a --cluster_listen needs the routes' credentials"
    fi
}

# wait_for_routes: every nats-server this run started lists a route to each of the others in
# its /routez (nats-server 2.10 may hold several routes per server: distinct remote ids count).
wait_for_routes() {
    local want=$((${#running_nats[@]} - 1)) deadline service url have pid
    ((want > 0)) || return 0
    deadline=$((SECONDS + 15))
    for service in "${running_nats[@]}"; do
        url="$(health_url "$service")"; url="${url%/*}/routez"
        pid="$(pid_of "$service")"
        while true; do
            have="$(curl -fsS -m 1 "$url" 2>/dev/null | grep -o '"remote_id":[[:space:]]*"[^"]*"' | sort -u | wc -l)" || have=0
            ((have >= want)) && break
            kill -0 "$pid" 2>/dev/null || { exited_report "$service" "$pid"; exit 1; }
            if ((SECONDS >= deadline)); then
                echo "cluster-local: $service has routes to $have of the other $want nats-servers after 15s ($url); last lines of $dir/logs/$service.log:" >&2
                tail -n 10 "$dir/logs/$service.log" | sed 's/^/    /' >&2
                exit 1
            fi
            sleep 0.1
        done
        echo "cluster-local: $service routed to the other $want nats-servers ($url)"
    done
}

echo "cluster-local: data, logs and secrets in $dir"
routes_up=0
for service in "${run_services[@]}"; do
    if ! is_nats "$service" && ((!routes_up)); then
        wait_for_routes
        routes_up=1
    fi
    local_command "$service" "$dir"
    service_env "$service"
    if is_nats "$service"; then
        for i in "${!cmd[@]}"; do
            [[ "${cmd[$i]}" == --cluster_listen ]] && route_ports[$service]="${cmd[$((i + 1))]##*:}"
        done
    else
        mkdir -p "$dir/$service"
    fi
    printf '%s\t' "$service" >>"$dir/commands.txt"; printf ' %q' "${cmd[@]}" >>"$dir/commands.txt"; echo >>"$dir/commands.txt"
    (
        # As in its container: the service's own `environment:`, not every secret.
        unset "${secret_names[@]}"
        for assignment in "${envs[@]+"${envs[@]}"}"; do export "$assignment"; done
        exec "${cmd[@]}"
    ) >"$dir/logs/$service.log" 2>&1 &
    pids+=("$!")
    started+=("$service")
    if is_nats "$service"; then check_nats "$service"; fi
done
((routes_up)) || wait_for_routes

# Wait for every healthcheck URL, bounded; a process that exits is reported at once.
deadline=$((SECONDS + ready_timeout))
pending=("${started[@]}")
failed=0
while ((${#pending[@]} > 0)); do
    still=()
    for service in "${pending[@]}"; do
        pid="$(pid_of "$service")"
        url="$(health_url "$service")" || die "service '$service' has no healthcheck URL in $compose"
        if curl -fsS -m 1 -o /dev/null "$url" 2>/dev/null; then
            echo "cluster-local: $service ready ($url)"
        elif ! kill -0 "$pid" 2>/dev/null; then
            exited_report "$service" "$pid"
            failed=1
        else
            still+=("$service")
        fi
    done
    pending=("${still[@]+"${still[@]}"}")
    if ((failed)); then
        ((${#pending[@]} > 0)) && echo "cluster-local: still starting when it stopped: ${pending[*]}" >&2
        break
    fi
    ((${#pending[@]} == 0)) && break
    if ((SECONDS >= deadline)); then
        for service in "${pending[@]}"; do
            echo "cluster-local: service '$service' (role $(role_of "$service")) not ready within ${ready_timeout}s at $(health_url "$service"); last lines of $dir/logs/$service.log:" >&2
            tail -n 10 "$dir/logs/$service.log" | sed 's/^/    /' >&2
        done
        failed=1
        break
    fi
    sleep 0.25
done

if ((failed)); then
    echo "cluster-local: FAILED: the cluster did not become ready" >&2
    exit 1
fi

if [[ "$mode" == check ]]; then
    echo "cluster-local: ok: ${#started[@]} services ready"
    exit 0
fi

# Where to find the secrets, never the secrets themselves.
hint() {  # hint NAME -> a shell expression that gives the secret
    local file
    file="$(secret_file "$1")"
    if [[ -s "$file" && "$(<"$file")" == "${!1}" ]]; then printf '$(cat %q)\n' "$file"; else echo "\$$1"; fi
}
admin_token_hint="$(hint ESTUARY_ADMIN_TOKEN)"
nats_token_hint="$(hint ESTUARY_NATS_TOKEN)"
cat <<EOF

Estuary cluster is running (Ctrl-C stops it):
  publish   rtmp://127.0.0.1:$(map_port ingest 1935)/live/demo   (ingest; /abr/... for the ladder)
  relay-1   http://127.0.0.1:$(map_port relay-1 8080)/live/demo.flv  .../live/demo/index.m3u8   rtmp://127.0.0.1:$(map_port relay-1 1935)/live/demo
  relay-2   http://127.0.0.1:$(map_port relay-2 8080)/live/demo.flv  .../live/demo/index.m3u8   rtmp://127.0.0.1:$(map_port relay-2 1935)/live/demo
  edge      http://127.0.0.1:$(map_port edge 8080)/live/demo.flv  .../live/demo/index.m3u8   rtmp://127.0.0.1:$(map_port edge 1935)/live/demo
  admin     curl -H "Authorization: Bearer $admin_token_hint" http://127.0.0.1:$(map_port coordinator 8090)/api/v1/nodes
$(for service in "${running_nats[@]}"; do
    printf '  %-9s nats://<token>@127.0.0.1:%s   monitoring http://127.0.0.1:%s/varz  …/routez\n' \
        "$service" "$(map_port "$service" 4222)" "$(map_port "$service" 8222)"
done)
  nats      token $nats_token_hint; every node is given all ${#running_nats[@]} (commands.txt)
  logs      $dir/logs/
EOF

# Run until Ctrl-C, or until a process ends on its own.
while true; do
    for i in "${!started[@]}"; do
        if ! kill -0 "${pids[$i]}" 2>/dev/null; then
            exited_report "${started[$i]}" "${pids[$i]}"
            exit 1
        fi
    done
    sleep 1
done
