#!/usr/bin/env bash
# Runs Redis's own Tcl test suite (tag 7.0.15, external mode) against a redis-server and then
# through Corral, and prints both pass/fail counts and the tests that fail only through Corral.
# Usage: scripts/redis-tcl-suite.sh [runtest options, e.g. --single unit/type/list]
# Env: CORRAL_BIN (default build/release/src/corral, built when missing), REDIS_GIT (a local bare
#      git dir or a repository URL; default /work/.mirror/redis+redis/repo if present, else
#      GitHub), TCL_DIR (where the suite is extracted and the results written;
#      /tmp/corral-redis-tcl), TCL_ONLY (direct or corral: that run only, the other's output kept),
#      TCL_THREADS (Corral's io threads, default 1: see redis-tcl-skips-threads.txt for what more
#      than one changes).
#
# Third-party code goes to TCL_DIR at run time, never into this tree. Both runs use the same
# options and the same skip list (scripts/lib/redis-tcl-skips.txt: tests that cannot pass through
# any proxy, each with its reason); `--tags -needs:repl` leaves out what needs a replica.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REDIS_TAG=7.0.15
if [ -z "${REDIS_GIT:-}" ]; then
  REDIS_GIT=https://github.com/redis/redis.git
  [ -d /work/.mirror/redis+redis/repo ] && REDIS_GIT=/work/.mirror/redis+redis/repo
fi
TCL_DIR=${TCL_DIR:-/tmp/corral-redis-tcl}
SKIPS_WITH_REASONS=$CORRAL_ROOT/scripts/lib/redis-tcl-skips.txt
TCL_THREADS=${TCL_THREADS:-1}

# What the suite's admin tests need through Corral (issue 17: CONFIG, DEBUG, FLUSHALL, FLUSHDB,
# FUNCTION, SCRIPT, ACL SETUSER/DELUSER). Beyond the issue's list, each refused by default:
# - SAVE, BGSAVE, BGREWRITEAOF (stall or load the server's disk): unit/other's reload and
#   stream AOF rewrite tests;
# - PFDEBUG (rewrites a HyperLogLog's encoding): unit/hyperloglog;
# - SWAPDB (swaps whole databases under the cache; Corral then drops its cache):
#   unit/multi's WATCH tests, unit/type/list's blocked-client tests, unit/keyspace;
# - CLIENT KILL, CLIENT PAUSE/UNPAUSE (act on every client of the proxy; Corral answers KILL
#   about its own clients, and holds its own clients for a pause that it also sends upstream):
#   unit/introspection, unit/pause;
# - MONITOR (Corral's own feed of its clients' commands): unit/introspection, unit/other;
# - SYNC, PSYNC, REPLCONF (a replication stream relayed on a connection of the client's own):
#   attach_to_replication_stream, in unit/type/list and unit/expire.
ALLOW='[CONFIG, DEBUG, FLUSHALL, FLUSHDB, FUNCTION, SCRIPT, "ACL SETUSER", "ACL DELUSER", '
ALLOW+='SAVE, BGSAVE, BGREWRITEAOF, PFDEBUG, SWAPDB, "CLIENT KILL", "CLIENT PAUSE", '
ALLOW+='"CLIENT UNPAUSE", MONITOR, SYNC, PSYNC, REPLCONF]'

pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for_port() {  # wait_for_port PORT WHAT
  local deadline=$((SECONDS + 15))
  until redis-cli -p "$1" ping >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "$2 did not answer PING on $1" >&2; return 1; }
    sleep 0.1
  done
}

start_redis() {  # start_redis PORT DIR
  mkdir -p "$2"
  redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no --dir "$2" \
    --enable-debug-command yes --enable-protected-configs yes --enable-module-command yes \
    --logfile "$2/redis.log" &
  pids+=($!)
  wait_for_port "$1" redis-server
}

# command_timeout: Redis answers some of the suite's commands after more than the default 2 s
# (LATENCY's one EVAL of a million SADDs on a loaded machine); the test's own --timeout applies.
start_corral() {  # start_corral PORT UPSTREAM_PORT DIR
  cat >"$3/corral.yaml" <<EOF
listen: 127.0.0.1:$1
metrics: 127.0.0.1:$(free_port)
threads: $TCL_THREADS
log_level: warn
upstream:
  address: redis://127.0.0.1:$2
  command_timeout: 30s
client:
  allow_commands: $ALLOW
EOF
  "$CORRAL_BIN" -c "$3/corral.yaml" >"$3/corral.log" 2>&1 &
  pids+=($!)
  wait_for_port "$1" corral
}

run_target() {  # run_target direct|corral [runtest options...]
  local target=$1 dir="$TCL_DIR/run-$1"
  shift
  rm -rf "$dir" && mkdir -p "$dir"
  local redis_port port
  redis_port=$(free_port)
  start_redis "$redis_port" "$dir/redis"
  port=$redis_port
  if [ "$target" = corral ]; then
    port=$(free_port)
    start_corral "$port" "$redis_port" "$dir"
  fi
  echo "== Redis $REDIS_TAG Tcl suite against $target (port $port), output in $dir/output.txt" >&2
  # --durable: an exception fails its test instead of ending the whole run.
  # Each run its own --baseport (the test server's port), so that both may run at once.
  local baseport=21111
  [ "$target" = direct ] || baseport=25111
  (cd "$TCL_DIR/redis" && timeout 3600 ./runtest --host 127.0.0.1 --port "$port" \
    --baseport "$baseport" --tags -needs:repl --durable --skipfile "$SKIPS" --timeout 150 "$@" \
    >"$dir/output.txt" 2>&1) || true
  stop_all
}

CORRAL_BIN=${CORRAL_BIN:-$CORRAL_ROOT/build/release/src/corral}
[ -x "$CORRAL_BIN" ] || build_preset release
command -v tclsh >/dev/null || install_packages tcl
if [ ! -f "$TCL_DIR/redis/.fetched-$REDIS_TAG" ]; then
  rm -rf "$TCL_DIR/redis" && mkdir -p "$TCL_DIR/redis"
  if [ -d "$REDIS_GIT" ]; then
    git --git-dir="$REDIS_GIT" archive "$REDIS_TAG" -- tests runtest | tar -x -C "$TCL_DIR/redis"
  else
    git clone -q --depth 1 --branch "$REDIS_TAG" "$REDIS_GIT" "$TCL_DIR/redis"
  fi
  touch "$TCL_DIR/redis/.fetched-$REDIS_TAG"
fi
# The redis-cli tests run src/redis-cli: Debian's, whose version is the server's.
mkdir -p "$TCL_DIR/redis/src"
ln -sf "$(command -v redis-cli)" "$TCL_DIR/redis/src/redis-cli"

mkdir -p "$TCL_DIR"
SKIPS=$TCL_DIR/skips.txt  # runtest's skip file has no comments: the reasons are left out
skip_lists=("$SKIPS_WITH_REASONS")
[ "$TCL_THREADS" -le 1 ] || skip_lists+=("$CORRAL_ROOT/scripts/lib/redis-tcl-skips-threads.txt")
cat "${skip_lists[@]}" | grep -v '^#' | grep -v '^$' >"$SKIPS" || true
targets=(direct corral)
[ -z "${TCL_ONLY:-}" ] || targets=("$TCL_ONLY")
for target in "${targets[@]}"; do run_target "$target" "$@"; done
/usr/bin/python3 "$CORRAL_ROOT/scripts/lib/tcl_results.py" "$TCL_DIR/run-direct/output.txt" \
  "$TCL_DIR/run-corral/output.txt"
