#!/usr/bin/env bash
# Runs real clients' own test suites, redis-py's tests at v4.3.4 and ioredis's at v5.11.1, against
# redis-server and then through Corral, and prints both pass/fail counts and the tests that fail
# only through Corral (each with its first error line).
# Usage: scripts/client-suites.sh [--only redis-py|ioredis]
# Env: CORRAL_BIN (default build/release/src/corral, built when missing), SUITES_DIR (where the
#      suites are fetched and results written; /tmp/corral-client-suites), REDIS_PY_GIT, IOREDIS_GIT
#      (a repository URL or a local bare git dir; GitHub by default), REDIS_PY_TESTS (pytest's
#      arguments selecting tests, default `tests`). The fetched suites stay in
#      SUITES_DIR for the next run (delete it to fetch again).
#
# Third-party code is fetched into SUITES_DIR at run time, never into this tree. Both suites expect
# Redis on 127.0.0.1:6379 (ioredis's tests hard-code it), so each run happens in a network namespace
# of its own (unshare -n, as root) where that port is free: redis-server listens there for the
# direct run; for the Corral run Corral listens there, with redis-server behind it on 6380.
# redis-py's cluster tests need a cluster and skip themselves; its module tests (RedisJSON & co.,
# not installed) fail alike both ways. A test that leaves the Redis behind Corral demanding a
# password (it set one through Corral and its teardown failed) would fail every later test: through
# Corral the password is removed after such a test (scripts/lib/upstream_reset_plugin.py, as an
# admin user that only that Redis has) and the test is named at the end of the output.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REDIS_PY_TAG=v4.3.4
IOREDIS_TAG=v5.11.1
REDIS_PY_GIT=${REDIS_PY_GIT:-https://github.com/redis/redis-py.git}
IOREDIS_GIT=${IOREDIS_GIT:-https://github.com/redis/ioredis.git}
SUITES_DIR=${SUITES_DIR:-/tmp/corral-client-suites}
PYTHON=/usr/bin/python3  # Debian's, with the packages install_packages adds below
ADMIN_PASSWORD=client-suites-admin

# The corral configuration of the Corral run: a plain proxy (no cache policy) that lets the
# suites' admin tests run.
ALLOW='[CONFIG, DEBUG, FLUSHALL, FLUSHDB, FUNCTION, SCRIPT, "CLIENT KILL", "CLIENT PAUSE",
        "CLIENT UNPAUSE", MODULE, REPLICAOF, MONITOR, SAVE, BGSAVE, SWAPDB, MIGRATE,
        "ACL SETUSER", "ACL DELUSER", "ACL LOG"]'

# --- inside the namespace ---------------------------------------------------------------------
pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}

wait_for_port() {  # wait_for_port PORT WHAT
  local deadline=$((SECONDS + 15))
  until redis-cli -p "$1" ping >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "$2 did not answer PING on $1" >&2; return 1; }
    sleep 0.1
  done
}

start_redis() {  # start_redis PORT DIR [ARGS...]
  local port=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --enable-debug-command yes --enable-module-command yes --logfile "$dir/redis.log" "$@" &
  pids+=($!)
  wait_for_port "$port" redis-server
}

start_corral() {  # start_corral DIR
  cat >"$1/corral.yaml" <<EOF
listen: 127.0.0.1:6379
metrics: 127.0.0.1:9121
threads: 2
log_level: warn
upstream:
  address: redis://127.0.0.1:6380
client:
  allow_commands: $ALLOW
EOF
  "$CORRAL_BIN" -c "$1/corral.yaml" >"$1/corral.log" 2>&1 &
  pids+=($!)
  wait_for_port 6379 corral
}

# run_target direct|corral SUITE: the suite against one target, results in $SUITES_DIR/results.
run_target() {
  local target=$1 suite=$2 dir="$SUITES_DIR/run-$2-$1"
  rm -rf "$dir" && mkdir -p "$dir"
  if [ "$target" = direct ]; then
    start_redis 6379 "$dir/redis"
  else
    # An admin user of the harness's own, for upstream_reset_plugin.py.
    start_redis 6380 "$dir/redis" --user admin on ">$ADMIN_PASSWORD" "~*" "&*" "+@all"
    start_corral "$dir"
  fi
  local plugin=()
  [ "$target" = direct ] || plugin=(-p upstream_reset_plugin)
  echo "== $suite against $target" >&2
  if [ "$suite" = redis-py ]; then
    (cd "$SUITES_DIR/redis-py" && PYTHONPATH=".:$CORRAL_ROOT/scripts/lib" \
      SUITES_ADMIN_PASSWORD=$ADMIN_PASSWORD timeout 1800 "$PYTHON" -m pytest ${REDIS_PY_TESTS:-tests} "${plugin[@]}" \
      -p no:cacheprovider -q --timeout=60 \
      --redis-url=redis://127.0.0.1:6379/9 --junitxml="$SUITES_DIR/results/redis-py-$target.xml" \
      >"$dir/output.txt" 2>&1) || true
  else
    # One mocha per spec file: a failed root-level afterEach hook (ioredis's helpers/global.ts)
    # ends a mocha run, and would leave every later file unrun.
    local results="$SUITES_DIR/results/ioredis-$target" spec n=0
    rm -rf "$results" && mkdir -p "$results"
    for spec in $(cd "$SUITES_DIR/ioredis" && find test/unit test/functional -name '*.ts' | sort); do
      n=$((n + 1))
      (cd "$SUITES_DIR/ioredis" && TS_NODE_TRANSPILE_ONLY=true NODE_ENV=test timeout 600 \
        node_modules/.bin/mocha --no-experimental-strip-types "test/helpers/*.ts" "$spec" \
        --reporter json --reporter-option output="$results/$n.json" >>"$dir/output.txt" 2>&1) || true
    done
  fi
  stop_all
}

if [ "${CLIENT_SUITES_INSIDE:-}" = 1 ]; then
  trap stop_all EXIT
  ip link set lo up
  run_target "$1" "$2"
  exit 0
fi

# --- outside: fetch, then each run in a namespace of its own ----------------------------------
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || { echo "--only needs redis-py or ioredis" >&2; exit 2; }; only=$2; shift 2 ;;
    -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
case "$only" in ""|redis-py|ioredis) ;; *) echo "--only: redis-py or ioredis, not $only" >&2; exit 2 ;; esac

fetch() {  # fetch SOURCE TAG DEST: a tag's tree, without its docs/ (not needed, and large)
  local source=$1 tag=$2 dest=$3
  rm -rf "$dest" && mkdir -p "$dest"
  if [ -d "$source" ]; then
    git --git-dir="$source" archive "$tag" -- . ':(exclude)docs' | tar -x -C "$dest"
  else
    git clone -q --depth 1 --branch "$tag" "$source" "$dest"
  fi
}

[ "$(id -u)" -eq 0 ] || { echo "needs root for unshare -n (a private 127.0.0.1:6379)" >&2; exit 1; }
install_packages python3-pytest-timeout python3-pytest-asyncio iproute2 git
command -v node >/dev/null && command -v npm >/dev/null || { echo "ioredis needs node and npm" >&2; exit 1; }
CORRAL_BIN=${CORRAL_BIN:-$CORRAL_ROOT/build/release/src/corral}
[ -x "$CORRAL_BIN" ] || build_preset release
export CORRAL_BIN SUITES_DIR
mkdir -p "$SUITES_DIR/results"

suites=(redis-py ioredis)
[ -z "$only" ] || suites=("$only")
for suite in "${suites[@]}"; do
  if [ "$suite" = redis-py ]; then
    [ -f "$SUITES_DIR/redis-py/.fetched-$REDIS_PY_TAG" ] || {
      fetch "$REDIS_PY_GIT" "$REDIS_PY_TAG" "$SUITES_DIR/redis-py"
      touch "$SUITES_DIR/redis-py/.fetched-$REDIS_PY_TAG"
    }
  else
    [ -f "$SUITES_DIR/ioredis/.fetched-$IOREDIS_TAG" ] || {
      fetch "$IOREDIS_GIT" "$IOREDIS_TAG" "$SUITES_DIR/ioredis"
      (cd "$SUITES_DIR/ioredis" && npm ci --no-audit --no-fund >/dev/null)
      touch "$SUITES_DIR/ioredis/.fetched-$IOREDIS_TAG"
    }
  fi
  for target in direct corral; do
    unshare -n env CLIENT_SUITES_INSIDE=1 bash "$0" "$target" "$suite"
  done
done

for suite in "${suites[@]}"; do
  extension=.xml
  [ "$suite" = ioredis ] && extension=""  # a directory of mocha JSON reports
  "$PYTHON" "$CORRAL_ROOT/scripts/lib/suite_results.py" "$suite" \
    "$SUITES_DIR/results/$suite-direct$extension" "$SUITES_DIR/results/$suite-corral$extension"
done
