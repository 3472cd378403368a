#!/usr/bin/env bash
# Memory per idle client connection: RSS growth of the process serving N connections that each sent
# one GET and then stay open (tests/bench/idle_clients.py), for Corral, predixy (PREDIXY_BIN),
# twemproxy and redis-server itself, each target started afresh for every run (freed memory is not
# given back to the kernel, so a second measurement in one process would read low).
# Usage: scripts/bench-idle.sh [--out FILE]
# Env: CORRAL_BIN (skip the build), BASELINE_BIN (another corral build, as "baseline"), PREDIXY_BIN,
#      CORRAL_THREADS (1; predixy gets as many), BENCH_IDLE_CLIENTS (5000), BENCH_RUNS (3)
# Progress goes to stderr; the report (markdown) to stdout.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

out_file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "--out needs a FILE" >&2; exit 2; }; out_file=$(realpath -m "$2"); shift 2 ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
threads=${CORRAL_THREADS:-1}
clients=${BENCH_IDLE_CLIENTS:-5000}
runs=${BENCH_RUNS:-3}
host=127.0.0.1
for n in "$threads" "$clients" "$runs"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "not a whole number in CORRAL_THREADS/BENCH_: $n" >&2; exit 2; }
done

install_packages nutcracker >&2
if [ -n "${CORRAL_BIN:-}" ]; then
  corral_bin=$(realpath "$CORRAL_BIN")
else
  echo "== release build" >&2
  (cd "$CORRAL_ROOT" && cmake --preset release >/dev/null && cmake --build --preset release --target corral) >&2
  corral_bin=$CORRAL_ROOT/build/release/src/corral
fi
ulimit -n $((clients + 1000)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# shellcheck source=scripts/lib/processes.sh
source "$CORRAL_ROOT/scripts/lib/processes.sh"
track_processes corral-bench-idle

redis_port=$(free_port)
redis-server --bind "$host" --port "$redis_port" --save '' --appendonly no --maxclients $((clients + 100)) \
  --dir "$workdir" >"$workdir/redis.log" 2>&1 &
redis_pid=$!
pids+=("$redis_pid")
for _ in $(seq 50); do [ "$(redis-cli -h "$host" -p "$redis_port" PING 2>/dev/null)" = PONG ] && break; sleep 0.1; done

# start TARGET: starts the target's process in front of redis (redis itself: a second redis-server,
# so the upstream's own clients are not counted); sets target_port and target_pid.
start() {
  local target=$1
  target_port=$(free_port)
  case "$target" in
    corral | baseline)
      local bin=$corral_bin
      [ "$target" = corral ] || bin=$(realpath "$BASELINE_BIN")
      printf 'listen: %s:%s\nthreads: %s\nlog_level: warn\nclient: { max_clients: %s }\nupstream: { address: redis://%s:%s }\n' \
        "$host" "$target_port" "$threads" $((clients + 100)) "$host" "$redis_port" >"$workdir/$target.yml"
      "$bin" -c "$workdir/$target.yml" >"$workdir/$target.log" 2>&1 &
      ;;
    predixy)
      printf 'Bind %s:%s\nWorkerThreads %s\nClientTimeout 0\nLogVerbSample 0\nLogDebugSample 0\nLogInfoSample 0\nAuthority {\n  Auth {\n    Mode write\n  }\n}\nStandaloneServerPool {\n  RefreshMethod fixed\n  Hash crc16\n  Distribution modula\n  Group shard001 {\n    + %s:%s\n  }\n}\n' \
        "$host" "$target_port" "$threads" "$host" "$redis_port" >"$workdir/predixy.conf"
      "$PREDIXY_BIN" "$workdir/predixy.conf" >"$workdir/predixy.log" 2>&1 &
      ;;
    twemproxy)
      printf 'idle:\n  listen: %s:%s\n  redis: true\n  server_connections: 1\n  servers:\n   - %s:%s:1\n' \
        "$host" "$target_port" "$host" "$redis_port" >"$workdir/nutcracker.yml"
      nutcracker -c "$workdir/nutcracker.yml" -s "$(free_port)" -a "$host" -o "$workdir/nutcracker.log" &
      ;;
    redis)
      redis-server --bind "$host" --port "$target_port" --save '' --appendonly no \
        --maxclients $((clients + 100)) --dir "$workdir" >"$workdir/redis-direct.log" 2>&1 &
      ;;
  esac
  target_pid=$!
  pids+=("$target_pid")
  for _ in $(seq 100); do
    kill -0 "$target_pid" 2>/dev/null || { echo "$target exited at start" >&2; return 1; }
    redis-cli -h "$host" -p "$target_port" GET corral:idle:probe >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$target did not answer on $target_port" >&2
  return 1
}

targets="corral"
[ -z "${BASELINE_BIN:-}" ] || targets+=" baseline"
[ -z "${PREDIXY_BIN:-}" ] || targets+=" predixy"
targets+=" twemproxy redis"
declare -A lines=()
for run in $(seq "$runs"); do
  for target in $targets; do
    echo "== run $run/$runs: $target, $clients idle clients" >&2
    start "$target" || continue
    line=$(python3 "$CORRAL_ROOT/tests/bench/idle_clients.py" "$host" "$target_port" "$target_pid" "$clients")
    echo "   $line" >&2
    lines[$target]+="${line##*per_client_bytes=} "
    kill "$target_pid" 2>/dev/null || true
    wait "$target_pid" 2>/dev/null || true
    forget_pid "$target_pid"
  done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int(NR / 2) + 1] : "n/a") }'; }
report() {
  echo "# Memory per idle client connection ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "$clients connections that each sent one GET, then stay open; RSS growth / $clients, median of $runs"
  echo "runs, each target started afresh. Threads: $threads. Corral: $corral_bin."
  echo
  echo "| target | bytes per idle client (median) | runs |"
  echo "|---|---|---|"
  local target
  for target in $targets; do
    echo "| $target | $(echo "${lines[$target]:-}" | median) | ${lines[$target]:-n/a}|"
  done
  echo
  echo "Reproduce: \`scripts/bench-idle.sh\` (PREDIXY_BIN=..., BASELINE_BIN=... for those rows)."
}
report_text=$(report)
echo "$report_text"
[ -z "$out_file" ] || echo "$report_text" >"$out_file"
