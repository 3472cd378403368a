#!/usr/bin/env bash
# A throwaway Redis Cluster on loopback for tests and benchmarks: N primaries + N*R replicas built
# with `redis-cli --cluster create`, every node bound to 127.0.0.1 on a free port (and free bus port).
#
# Usage: scripts/cluster.sh start [DIR] [--primaries N] [--replicas R] [--node-timeout MS]
#                                 [--requirepass PW] [--tls CERTDIR] [--conf LINE]...
#        scripts/cluster.sh stop DIR [--clean]
#        scripts/cluster.sh run [start options] -- COMMAND...   (start, run COMMAND, always stop)
#        scripts/cluster.sh status DIR | ports DIR
#        scripts/cluster.sh kill DIR PORT [SIGNAL] | restart DIR PORT | wait DIR
#   start    prints one line: the node ports, space-separated (progress goes to stderr); DIR (a new
#            temp dir when omitted) holds per node PORT/{redis.conf,redis.log,redis.pid,nodes.conf}
#            and DIR/ports. Returns once every node says cluster_state:ok, knows every other node, and
#            every replica has master_link_status:up.
#            --requirepass: every node gets requirepass and masterauth PW. --tls: CERTDIR holds
#            ca.pem, redis.pem and redis.key; nodes speak TLS only (tls-port = the node's port,
#            port 0), on the cluster bus and to their primary too; clients need no certificate.
#            Either is kept in DIR, so the other commands talk to the nodes the same way.
#            --conf: a redis.conf line every node gets (e.g. "rename-command GET GETX").
#   stop     stops every node of DIR (SIGTERM, SIGKILL after 5 s); --clean also removes DIR.
#   run      exports CLUSTER_DIR and CLUSTER_PORTS (comma-separated) to COMMAND.
#   kill     sends SIGNAL (default KILL) to one node; restart starts a stopped node again with its
#            nodes.conf (it rejoins, as a replica if it was failed over); wait waits for health again.
# Defaults: --primaries 3, --replicas 1, --node-timeout 2000 (or $CLUSTER_NODE_TIMEOUT).
# The cluster outlives `start` but not its caller: a watcher stops it when the process
# $CLUSTER_OWNER_PID (default: the caller of this script) exits, so a killed test leaves nothing.
set -euo pipefail

readonly HOST=127.0.0.1
SELF=$(realpath "${BASH_SOURCE[0]}")
readonly SELF
# Ports below the ephemeral range (32768+) with their bus ports (+10000) below it too, so neither
# collides with the kernel's outgoing connections nor with the harness's free_port() listeners.
readonly PORT_MIN=10000
readonly PORT_MAX=22767
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}

die() { echo "cluster.sh: $*" >&2; exit 2; }
log() { echo "cluster.sh: $*" >&2; }
# redis-cli options that AUTH and/or TLS need (load_security fills them from a cluster's DIR).
CLI_SECURITY=()
cli() { local port=$1; shift; "$REDIS_CLI" -h "$HOST" -p "$port" --no-auth-warning "${CLI_SECURITY[@]}" "$@"; }

# save_security DIR PW CERTDIR: records the start options the other commands need.
save_security() {
  local dir=$1 password=$2 tls=$3
  if [ -n "$password" ]; then (umask 077; printf '%s\n' "$password" >"$dir/requirepass"); fi
  if [ -n "$tls" ]; then printf '%s\n' "$tls" >"$dir/tls-dir"; fi
  load_security "$dir"
}

load_security() {
  local dir=$1
  CLI_SECURITY=()
  if [ -f "$dir/requirepass" ]; then CLI_SECURITY+=(-a "$(cat "$dir/requirepass")"); fi
  if [ -f "$dir/tls-dir" ]; then CLI_SECURITY+=(--tls --cacert "$(cat "$dir/tls-dir")/ca.pem"); fi
}

port_free() {
  # Bash's /dev/tcp connect: a refused connection means nothing listens there.
  ! (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

# pick_port USED...: a port whose bus port is free too, neither one a port or bus port of USED.
pick_port() {
  local taken=" " port _
  for port in "$@"; do taken+="$port $((port + 10000)) "; done
  for _ in $(seq 200); do
    port=$((PORT_MIN + RANDOM % (PORT_MAX - PORT_MIN + 1)))
    [[ "$taken" == *" $port "* || "$taken" == *" $((port + 10000)) "* ]] && continue
    if port_free "$port" && port_free $((port + 10000)); then
      echo "$port"
      return 0
    fi
  done
  die "no free port pair (port, port+10000) in $PORT_MIN..$PORT_MAX"
}

write_conf() {
  local dir=$1 port=$2 timeout=$3
  mkdir -p "$dir/$port"
  {
    if [ -f "$dir/tls-dir" ]; then
      local certs
      certs=$(cat "$dir/tls-dir")
      # The bus port stays tls-port + 10000; tls-cluster makes the bus TLS too (nodes present
      # redis.pem to each other, so the bus always checks the peer's certificate against ca.pem).
      printf '%s\n' "port 0" "tls-port $port" "tls-cert-file $certs/redis.pem" \
        "tls-key-file $certs/redis.key" "tls-ca-cert-file $certs/ca.pem" "tls-cluster yes" \
        "tls-replication yes" "tls-auth-clients no"
    else
      echo "port $port"
    fi
    if [ -f "$dir/requirepass" ]; then
      local password
      password=$(cat "$dir/requirepass")
      printf '%s\n' "requirepass \"$password\"" "masterauth \"$password\""
    fi
    # --conf lines, for every node alike (rename-command ...).
    if [ -f "$dir/extra.conf" ]; then cat "$dir/extra.conf"; fi
  } >"$dir/$port/redis.conf"
  cat >>"$dir/$port/redis.conf" <<EOF
bind $HOST
protected-mode no
daemonize yes
dir $dir/$port
pidfile $dir/$port/redis.pid
logfile $dir/$port/redis.log
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout $timeout
save ""
appendonly no
# A replica's first sync starts at once instead of after the default 5 s wait for more replicas.
repl-diskless-sync yes
repl-diskless-sync-delay 0
EOF
}

node_pid() { cat "$1/$2/redis.pid" 2>/dev/null || true; }
node_alive() { local pid; pid=$(node_pid "$1" "$2"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

start_node() {
  local dir=$1 port=$2
  rm -f "$dir/$port/redis.pid"
  (cd "$dir/$port" && "$REDIS_SERVER" "$dir/$port/redis.conf") >/dev/null
  for _ in $(seq 100); do
    [ "$(cli "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  return 1
}

# Checks every live node: cluster_state:ok, knows all nodes as connected, replicas in sync.
healthy() {
  local dir=$1 total port info nodes
  total=$(wc -l <"$dir/ports")
  while read -r port; do
    info=$(cli "$port" cluster info 2>/dev/null) || return 1
    grep -q '^cluster_state:ok' <<<"$info" || return 1
    nodes=$(cli "$port" cluster nodes 2>/dev/null) || return 1
    [ "$(grep -c ' connected' <<<"$nodes")" -eq "$total" ] || return 1
    grep -qE 'fail|handshake|noaddr' <<<"$nodes" && return 1
    info=$(cli "$port" info replication 2>/dev/null) || return 1
    if grep -q '^role:slave' <<<"$info"; then
      grep -q '^master_link_status:up' <<<"$info" || return 1
      grep -q '^master_sync_in_progress:0' <<<"$info" || return 1
    fi
  done <"$dir/ports"
  return 0
}

wait_healthy() {
  local dir=$1 seconds=${2:-60}
  local deadline=$((SECONDS + seconds))
  until healthy "$dir"; do
    [ "$SECONDS" -lt "$deadline" ] || { log "cluster in $dir not healthy after ${seconds}s"; status "$dir" >&2; return 1; }
    sleep 0.2
  done
}

stop_all() {
  local dir=$1 port pid
  [ -f "$dir/ports" ] || return 0
  while read -r port; do
    pid=$(node_pid "$dir" "$port")
    [ -n "$pid" ] || continue
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true  # a SIGSTOPped node must run to see the SIGTERM
  done <"$dir/ports"
  for _ in $(seq 50); do
    local alive=0
    while read -r port; do node_alive "$dir" "$port" && alive=1; done <"$dir/ports"
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  while read -r port; do
    pid=$(node_pid "$dir" "$port")
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
  done <"$dir/ports"
}

cmd_stop() {
  local dir=${1:-} clean=${2:-}
  [ -n "$dir" ] || die "stop needs the cluster's DIR"
  [ -d "$dir" ] || die "no cluster directory $dir"
  local watcher
  watcher=$(cat "$dir/watcher.pid" 2>/dev/null || true)
  # The watcher runs `stop` itself when its owner exits; it must not kill itself mid-stop.
  if [ -n "$watcher" ] && [ "$watcher" != "${CLUSTER_WATCHER_SELF:-}" ]; then
    kill "$watcher" 2>/dev/null || true
  fi
  stop_all "$dir"
  rm -f "$dir/watcher.pid"
  if [ "$clean" = --clean ]; then rm -rf "$dir"; fi
}

start_watcher() {
  local dir=$1 owner=$2
  # setsid + closed stdio: the watcher neither holds the caller's pipes open nor dies with its
  # process group; it polls the owner because a non-child cannot be wait()ed for.
  # shellcheck disable=SC2016 # the inner script expands its own positional parameters.
  CLUSTER_WATCHER_SELF="" setsid bash -c '
    echo $$ >"$1/watcher.pid"
    while kill -0 "$2" 2>/dev/null; do sleep 0.5; done
    CLUSTER_WATCHER_SELF=$$ "$3" stop "$1"' watcher "$dir" "$owner" "$SELF" \
    </dev/null >/dev/null 2>&1 &
}

cmd_start() {
  local dir="" primaries=3 replicas=1 timeout=${CLUSTER_NODE_TIMEOUT:-2000} password="" tls=""
  local extra_conf=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --conf) [ $# -ge 2 ] || die "$1 needs a value"; extra_conf+=("$2"); shift 2 ;;
      --primaries) [ $# -ge 2 ] || die "$1 needs a value"; primaries=$2; shift 2 ;;
      --replicas) [ $# -ge 2 ] || die "$1 needs a value"; replicas=$2; shift 2 ;;
      --node-timeout) [ $# -ge 2 ] || die "$1 needs a value"; timeout=$2; shift 2 ;;
      --requirepass) [ $# -ge 2 ] || die "$1 needs a value"; password=$2; shift 2 ;;
      --tls) [ $# -ge 2 ] || die "$1 needs a value"; tls=$2; shift 2 ;;
      -*) die "unknown option $1" ;;
      *) [ -z "$dir" ] || die "one DIR only (got $dir and $1)"; dir=$1; shift ;;
    esac
  done
  [[ "$primaries" =~ ^[0-9]+$ && "$primaries" -ge 3 ]] || die "--primaries must be >= 3 (Redis Cluster's minimum), got $primaries"
  [[ "$replicas" =~ ^[0-9]+$ ]] || die "--replicas must be a whole number, got $replicas"
  [[ "$timeout" =~ ^[0-9]+$ && "$timeout" -ge 100 ]] || die "--node-timeout must be >= 100 (ms), got $timeout"
  [[ "$password" != *[[:space:]\"\\]* ]] || die "--requirepass: no spaces, quotes or backslashes"
  if [ -n "$tls" ]; then
    tls=$(realpath "$tls")
    local f
    for f in ca.pem redis.pem redis.key; do [ -r "$tls/$f" ] || die "--tls: no readable $tls/$f"; done
  fi
  command -v "$REDIS_SERVER" >/dev/null || die "$REDIS_SERVER not found (Debian: redis-server)"
  command -v "$REDIS_CLI" >/dev/null || die "$REDIS_CLI not found (Debian: redis-tools)"
  if [ -z "$dir" ]; then dir=$(mktemp -d -t corral-cluster.XXXXXX); fi
  mkdir -p "$dir"
  dir=$(realpath "$dir")
  [ ! -f "$dir/ports" ] || die "$dir already holds a cluster (stop it, or use another DIR)"
  rm -f "$dir/requirepass" "$dir/tls-dir" "$dir/extra.conf"
  save_security "$dir" "$password" "$tls"
  if [ ${#extra_conf[@]} -gt 0 ]; then printf '%s\n' "${extra_conf[@]}" >"$dir/extra.conf"; fi

  local count=$((primaries * (1 + replicas))) ports=() port attempt ok
  : >"$dir/ports"
  start_watcher "$dir" "${CLUSTER_OWNER_PID:-$PPID}"
  for _ in $(seq "$count"); do
    ok=0
    for attempt in 1 2 3; do
      port=$(pick_port "${ports[@]}")
      write_conf "$dir" "$port" "$timeout"
      echo "$port" >>"$dir/ports"
      if start_node "$dir" "$port"; then ok=1; break; fi
      # Lost a race for the port (or the bus port): forget this one and pick another.
      log "node on $port did not start (attempt $attempt): $(tail -n 2 "$dir/$port/redis.log" 2>/dev/null)"
      kill -KILL "$(node_pid "$dir" "$port")" 2>/dev/null || true
      sed -i "/^$port\$/d" "$dir/ports"
      rm -rf "${dir:?}/$port"
    done
    [ "$ok" -eq 1 ] || { cmd_stop "$dir"; die "could not start a node"; }
    ports+=("$port")
  done
  log "nodes up on ${ports[*]} (node timeout ${timeout} ms); creating the cluster"
  local addrs=()
  for port in "${ports[@]}"; do addrs+=("$HOST:$port"); done
  if ! "$REDIS_CLI" --no-auth-warning "${CLI_SECURITY[@]}" --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes \
      >"$dir/create.log" 2>&1; then
    cat "$dir/create.log" >&2
    cmd_stop "$dir"
    die "redis-cli --cluster create failed"
  fi
  if ! wait_healthy "$dir" 60; then cmd_stop "$dir"; die "cluster did not become healthy"; fi
  log "cluster ok in $dir"
  echo "${ports[*]}"
}

status() {
  local dir=$1 port
  while read -r port; do
    if node_alive "$dir" "$port"; then
      echo "$port pid $(node_pid "$dir" "$port"): $(cli "$port" cluster info 2>/dev/null | grep cluster_state | tr -d '\r') $(cli "$port" info replication 2>/dev/null | grep -E '^(role|master_link_status):' | tr -d '\r' | tr '\n' ' ')"
    else
      echo "$port down"
    fi
  done <"$dir/ports"
}

cmd_run() {
  local start_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do start_args+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || die "run needs -- COMMAND"
  local dir
  dir=$(mktemp -d -t corral-cluster.XXXXXX)
  # shellcheck disable=SC2064 # $dir is expanded now: the trap fires after this function returned.
  trap "cmd_stop '$dir' --clean" EXIT
  trap 'exit 130' INT TERM HUP
  local ports
  ports=$(CLUSTER_OWNER_PID=$$ cmd_start "$dir" "${start_args[@]}")
  CLUSTER_DIR=$dir CLUSTER_PORTS=${ports// /,} "$@"
}

need_dir() {
  if [ -z "${1:-}" ] || [ ! -f "$1/ports" ]; then die "${2:-command} needs the DIR of a started cluster"; fi
}
need_port() { grep -qx "${2:-}" "$1/ports" || die "${2:-<none>} is not a node of the cluster in $1"; }

main() {
  local sub=${1:-}
  [ $# -gt 0 ] && shift
  case "$sub" in
    start) cmd_start "$@" ;;
    stop) [ -n "${1:-}" ] || die "stop needs the cluster's DIR"; cmd_stop "$1" "${2:-}" ;;
    run) cmd_run "$@" ;;
    status) need_dir "${1:-}" status; load_security "$1"; status "$1" ;;
    ports) need_dir "${1:-}" ports; tr '\n' ' ' <"$1/ports" | sed 's/ $/\n/' ;;
    wait) need_dir "${1:-}" wait; load_security "$1"; wait_healthy "$1" "${2:-60}" ;;
    kill)
      need_dir "${1:-}" kill; need_port "$1" "${2:-}"
      kill "-${3:-KILL}" "$(node_pid "$1" "$2")" ;;
    restart)
      need_dir "${1:-}" restart; need_port "$1" "${2:-}"
      node_alive "$1" "$2" && die "node $2 is still running"
      load_security "$1"
      start_node "$(realpath "$1")" "$2" || die "node $2 did not restart: $(tail -n 3 "$1/$2/redis.log")" ;;
    -h|--help|"") sed -n '2,26s/^# \{0,1\}//p' "$SELF"; [ -n "$sub" ] ;;
    *) die "unknown command $sub (see --help)" ;;
  esac
}

main "$@"
