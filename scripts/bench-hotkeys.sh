#!/usr/bin/env bash
# Hot-key caching benchmark (issue 20): Zipf(--skew, default 1.1) GETs over --keys (100k) keys
# with 5% SETs at a fixed rate (tests/bench/zipf_load.py), no policies, through Corral with
# hot_keys.cache off and on. Prints the upstream's read rate both ways from INFO commandstats
# (GET, and GET + PTTL: a hot fill reads the key's expiry too) and the ratio, the min_rate used,
# then runs the coherence checker (tests/integration/coherence.py) with hot caching on and
# prints its stale reads. --cluster: the same on a Redis Cluster (scripts/cluster.sh: 3 primaries,
# 1 replica each), the upstream's reads summed over every node.
# Usage: scripts/bench-hotkeys.sh [--duration S] [--rate R] [--min-rate R] [--coherence S]
#                                 [--cluster]
#   --duration S    seconds of measured load per mode (default 20, after a warm-up of 2 windows)
#   --rate R        requests per second offered (default 20000)
#   --min-rate R    hot_keys.min_rate, reads/s (default 0.2)
#   --coherence S   seconds of the coherence check (default 20; 0 skips it)
#   --cluster       a Redis Cluster upstream instead of one redis-server
# Env: CORRAL_BIN (use this binary, skip the build).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

duration=20
rate=20000
min_rate=0.2
coherence=20
keys=100000
skew=1.1
window=2s
cluster=0
need_value() { [ "$2" -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) need_value "$1" $#; duration=$2; shift 2 ;;
    --rate) need_value "$1" $#; rate=$2; shift 2 ;;
    --min-rate) need_value "$1" $#; min_rate=$2; shift 2 ;;
    --coherence) need_value "$1" $#; coherence=$2; shift 2 ;;
    --cluster) cluster=1; shift ;;
    -h|--help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

install_packages >&2
if [ -n "${CORRAL_BIN:-}" ]; then
  corral_bin=$(realpath "$CORRAL_BIN")
else
  echo "== release build: corral" >&2
  (cd "$CORRAL_ROOT" && cmake --preset release >/dev/null &&
    cmake --build --preset release --target corral) >&2
  corral_bin=$CORRAL_ROOT/build/release/src/corral
fi
[ -x "$corral_bin" ] || { echo "no corral binary at $corral_bin" >&2; exit 1; }

# shellcheck source=scripts/lib/processes.sh
source "$CORRAL_ROOT/scripts/lib/processes.sh"
track_processes corral-bench-hotkeys
host=127.0.0.1
load=(/usr/bin/python3 "$CORRAL_ROOT/tests/bench/zipf_load.py" --keys "$keys" --skew "$skew")

wait_ready() {
  local port=$1 pid=$2 name=$3
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { echo "$name exited at start:" >&2; tail -20 "$workdir/$name.log" >&2; exit 1; }
    redis-cli -h "$host" -p "$port" PING >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$name did not answer on port $port" >&2
  exit 1
}

stat_ports=()
if [ "$cluster" = 1 ]; then
  cluster_dir=$workdir/cluster
  stop_cluster() {
    local status=$?
    [ ! -f "$cluster_dir/ports" ] || "$CORRAL_ROOT/scripts/cluster.sh" stop "$cluster_dir" || true
    (exit "$status")
    cleanup_processes
  }
  trap stop_cluster EXIT
  read -r -a stat_ports <<<"$(CLUSTER_OWNER_PID=$$ "$CORRAL_ROOT/scripts/cluster.sh" start \
    "$cluster_dir" --primaries 3 --replicas 1)"
  upstream_yaml="upstream: { cluster: [redis://$host:${stat_ports[0]}] }"
else
  redis_port=$(free_port)
  redis-server --bind "$host" --port "$redis_port" --save '' --appendonly no --dir "$workdir" \
    >"$workdir/redis.log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  wait_ready "$redis_port" "$redis_pid" redis
  stat_ports=("$redis_port")
  upstream_yaml="upstream: { address: redis://$host:$redis_port }"
fi

stat_calls() {  # stat_calls NAME: calls of one command on the upstream (every node) since RESETSTAT
  local port
  for port in "${stat_ports[@]}"; do
    redis-cli -h "$host" -p "$port" INFO commandstats |
      awk -F'[:,=]' -v name="cmdstat_$1" '$1 == name {print $3; found=1} END {if (!found) print 0}'
  done | awk '{sum += $1} END {print sum + 0}'
}
reset_stats() {
  local port
  for port in "${stat_ports[@]}"; do redis-cli -h "$host" -p "$port" CONFIG RESETSTAT >/dev/null; done
}

# start_corral NAME on|off: a Corral on the upstream, hot caching on or off; sets port, pid
start_corral() {
  port=$(free_port)
  cat >"$workdir/corral-$1.yaml" <<YAML
listen: $host:$port
$upstream_yaml
hot_keys: { sample: 1, capacity: 10000, window: $window, cache: $([ "$2" = on ] && echo true || echo false), min_rate: $min_rate, max_keys: 10000 }
YAML
  "$corral_bin" --config "$workdir/corral-$1.yaml" >"$workdir/corral-$1.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  wait_ready "$port" "$pid" "corral-$1"
}

stop_corral() {
  kill "$1"
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

if [ "$cluster" = 1 ]; then
  # Through a Corral: it routes each SET to its key's node.
  start_corral preload off
  "${load[@]}" --port "$port" --preload
  stop_corral "$pid"
else
  "${load[@]}" --port "$redis_port" --preload
fi

# run_mode on|off: sets gets, pttls, client_reads, seconds
run_mode() {
  local cache=$1
  start_corral "$cache" "$cache"
  # Two windows first: the hot set is chosen from a closed window.
  "${load[@]}" --port "$port" --rate "$rate" --duration 5 --seed 7 >/dev/null
  reset_stats
  local out
  out=$("${load[@]}" --port "$port" --rate "$rate" --duration "$duration" --seed 11)
  gets=$(stat_calls get)
  pttls=$(stat_calls pttl)
  client_reads=$(sed -E 's/.*reads=([0-9]+).*/\1/' <<<"$out")
  seconds=$(sed -E 's/.*seconds=([0-9.]+).*/\1/' <<<"$out")
  echo "   corral hot_keys.cache $cache: $out" >&2
  stop_corral "$pid"
}

echo "== $(date -u +%FT%TZ) $(nproc) cores, $("$corral_bin" --version 2>/dev/null || echo corral), $(redis-server --version | cut -d' ' -f1-3)"
echo "== upstream: $([ "$cluster" = 1 ] && echo "Redis Cluster, 3 primaries + 3 replicas" || echo "one redis-server")"
echo "== Zipf skew $skew over $keys keys, 5% SET, $rate req/s offered for ${duration}s, no policies"
echo "== hot_keys: { sample: 1, capacity: 10000, window: $window, cache: on|off, min_rate: $min_rate, max_keys: 10000 }"
run_mode off
off_gets=$gets off_pttls=$pttls off_reads=$client_reads off_seconds=$seconds
run_mode on
on_gets=$gets on_pttls=$pttls on_reads=$client_reads on_seconds=$seconds
awk -v og="$off_gets" -v op="$off_pttls" -v or="$off_reads" -v os="$off_seconds" \
    -v ng="$on_gets" -v np="$on_pttls" -v nr="$on_reads" -v ns="$on_seconds" 'BEGIN {
  printf "%-22s %14s %14s %16s %18s\n", "hot_keys.cache", "client GET/s", "upstream GET/s",
         "upstream PTTL/s", "upstream reads/s"
  printf "%-22s %14.0f %14.0f %16.0f %18.0f\n", "off", or/os, og/os, op/os, (og+op)/os
  printf "%-22s %14.0f %14.0f %16.0f %18.0f\n", "on", nr/ns, ng/ns, np/ns, (ng+np)/ns
  printf "upstream reads, off / on: %.2fx (GET only: %.2fx); client GETs reaching Redis: off %.1f%%, on %.1f%%\n",
         ((og+op)/os) / ((ng+np)/ns), (og/os) / (ng/ns), 100*og/or, 100*(ng)/nr
}'

if [ "$coherence" != 0 ]; then
  echo "== coherence checker with hot_keys.cache on (no policies), ${coherence}s"
  coherence_args=(--hot-cache --duration "$coherence")
  [ "$cluster" = 0 ] || coherence_args+=(--cluster)
  CORRAL_BIN=$corral_bin /usr/bin/python3 "$CORRAL_ROOT/tests/integration/coherence.py" \
    "${coherence_args[@]}"
fi
