#!/usr/bin/env bash
# Stampede benchmark: 1,000 and 10,000 clients GET one hot key whose TTL expires while an origin fetch
# takes 200 ms; reports origin fetches per TTL window and per refresh cycle, and p99 around expiries.
# Usage: scripts/bench-stampede.sh [--out-dir DIR] [--plot FILE] [--out FILE]
#   --out-dir DIR  per-request CSVs, configs, logs, report.md and the plot (default: a new temp dir, kept)
#   --plot FILE    the PNG of latency over time (default: DIR/stampede.png)
#   --out FILE     also copy the markdown report there
# Env: CORRAL_BIN, STAMPEDE_LOAD_BIN (use these binaries, skip the build), CORRAL_THREADS (auto),
#      STAMPEDE_CLIENTS (1000), STAMPEDE_DURATION (12 s), STAMPEDE_THINK_MS (5), STAMPEDE_TTL_MS (2000),
#      STAMPEDE_FETCH_MS (200), STAMPEDE_FLEET_SIZE (3),
#      STAMPEDE_SETUPS ("grace http fleet fleet-cluster grace@10000 fleet@10000"; add "aside coalesce"
#      for the baselines). SETUP@N runs SETUP with N clients instead of STAMPEDE_CLIENTS.
#
# The setups, the same duration, one after the other on one machine:
#   aside     the clients do cache-aside themselves against redis-server: GET; on nil "compute" for the
#             fetch time, then SET key value PX ttl. Origin fetches = computes (counted by the generator).
#   coalesce  Corral, policy hot: (origin redis) with ttl, beta 0, grace 0 and fetch_delay = the fetch
#             time: coalescing only.
#   grace     Corral, same policy with beta 1.0 and grace 10s: stale-while-revalidate plus XFetch.
#   http      Corral, the grace policy on a real slow origin: origin: {http: ...} to tests/origin_server.py,
#             which answers /features/<suffix> after the fetch time (no fetch_delay).
#   fleet     STAMPEDE_FLEET_SIZE Corral processes on the same redis-server, the http policy plus
#             shared: true (value, shadow copy and refresh lock in Redis); the generator's connections
#             go round-robin over their ports.
#   fleet-cluster  the fleet on a Redis Cluster (scripts/cluster.sh: 3 primaries + 3 replicas) instead
#             of one redis-server: value, shadow and lock on the hot key's node, found by its slot.
# Origin fetches per TTL window = the fetches made during the run / (run seconds / ttl): what the origin
# pays per TTL at any request rate (target <= 1.1 per fleet). Per refresh cycle: see below.
# The generator (tests/bench/stampede_load.cpp) polls the key's expiry (PEXPIRETIME on Redis, CORRAL.INFO
# through Corral; in the fleet, through the first process: the expiry is the fleet's) to find the expiry
# instants E; a request sent in [E - 50 ms, E + fetch + 100 ms] is "during expiry", any other is a plain
# hit. Through Corral an expiry is one TTL cycle of the cached value (a value refreshed early by XFetch
# still marks its nominal expiry), and its origin fetches are those made between the first sightings of
# the old and the new value: counted by the policy's CORRAL.STATS origin_requests (redis origin), or at
# the HTTP origin itself from its request times (http, fleet: tests/bench/origin_fetches.py), which is
# the only count that sees the whole fleet. corral_origin_requests_total from /metrics (after minus
# before, minus the cold fill, summed over the processes) is the cross-check.
# Progress goes to stderr; the report (markdown) to stdout and DIR/report.md.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

out_dir=""
plot_file=""
out_file=""
need_value() { [ "$2" -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out-dir) need_value "$1" $#; out_dir=$2; shift 2 ;;
    --out-dir=*) out_dir=${1#--out-dir=}; shift ;;
    --plot) need_value "$1" $#; plot_file=$2; shift 2 ;;
    --plot=*) plot_file=${1#--plot=}; shift ;;
    --out) need_value "$1" $#; out_file=$2; shift 2 ;;
    --out=*) out_file=${1#--out=}; shift ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$out_dir" ]; then out_dir=$(mktemp -d -t corral-stampede.XXXXXX); fi
mkdir -p "$out_dir"
out_dir=$(realpath "$out_dir")
plot_file=$(realpath -m "${plot_file:-$out_dir/stampede.png}")
[ -z "$out_file" ] || out_file=$(realpath -m "$out_file")

threads=${CORRAL_THREADS:-auto}
clients=${STAMPEDE_CLIENTS:-1000}
duration=${STAMPEDE_DURATION:-12}
think_ms=${STAMPEDE_THINK_MS:-5}
ttl_ms=${STAMPEDE_TTL_MS:-2000}
fetch_ms=${STAMPEDE_FETCH_MS:-200}
fleet_size=${STAMPEDE_FLEET_SIZE:-3}
setups=${STAMPEDE_SETUPS:-grace http fleet fleet-cluster grace@10000 fleet@10000}
key=hot:key
value=$(printf 'v%.0s' $(seq 32))
origin_path=/features/${key#hot:}  # the http policy's URL template is /features/{suffix}
host=127.0.0.1

install_packages python3-matplotlib >&2
if [ -n "${CORRAL_BIN:-}" ] && [ -n "${STAMPEDE_LOAD_BIN:-}" ]; then
  corral_bin=$(realpath "$CORRAL_BIN")
  load_bin=$(realpath "$STAMPEDE_LOAD_BIN")
else
  # The release preset (as build_preset), but only the two targets: not the whole test suite.
  echo "== release build: corral stampede_load" >&2
  (cd "$CORRAL_ROOT" && cmake --preset release >/dev/null &&
    cmake --build --preset release --target corral stampede_load) >&2
  corral_bin=${CORRAL_BIN:-$CORRAL_ROOT/build/release/src/corral}
  load_bin=${STAMPEDE_LOAD_BIN:-$CORRAL_ROOT/build/release/tests/bench/stampede_load}
fi
[ -x "$load_bin" ] || { echo "no stampede_load binary at $load_bin" >&2; exit 1; }
corral_setups=$(echo "$setups" | tr ' ' '\n' | grep -cv '^aside$\|^$' || true)
[ "$corral_setups" -eq 0 ] || [ -x "$corral_bin" ] || { echo "no corral binary at $corral_bin" >&2; exit 1; }
# 1,000 clients are 1,000 sockets in the generator, in Corral and in redis-server (they inherit this).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# --- processes: everything started here is killed on the way out, however the script ends ---------
# shellcheck source=scripts/lib/processes.sh
source "$CORRAL_ROOT/scripts/lib/processes.sh"
track_processes corral-stampede-run

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

# wait_ready PORT PID LOG: until a GET through PORT answers.
wait_ready() {
  local port=$1 pid=$2 log=$3
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { echo "$(basename "$log" .log) exited at start; its log:" >&2; tail -20 "$log" >&2; exit 1; }
    redis-cli -h "$host" -p "$port" GET corral:bench:probe >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "nothing answers on port $port" >&2
  exit 1
}

redis_cmd() { redis-cli -h "$host" -p "$redis_port" "$@"; }

start_redis() {
  redis_port=$(free_port)
  redis_command=(redis-server --bind "$host" --port "$redis_port" --save '' --appendonly no --dir "$workdir")
  "${redis_command[@]}" >"$out_dir/redis.log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  wait_ready "$redis_port" "$redis_pid" "$out_dir/redis.log"
}

# --- the HTTP origin (http, fleet): one tests/origin_server.py for the run, reset before each setup --
origin_port=""

origin_url() { echo "http://$host:$origin_port$1"; }
origin_stats() { curl -sf --max-time 5 "$(origin_url /_stats)"; }

start_origin() {
  [ -z "$origin_port" ] || return 0
  origin_port=$(free_port)
  origin_command=(/usr/bin/python3 "$CORRAL_ROOT/tests/origin_server.py" "$origin_port")
  "${origin_command[@]}" >"$out_dir/origin.log" 2>&1 &
  origin_pid=$!
  pids+=("$origin_pid")
  for _ in $(seq 100); do
    kill -0 "$origin_pid" 2>/dev/null || { echo "the origin exited at start:" >&2; tail -20 "$out_dir/origin.log" >&2; exit 1; }
    origin_stats >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the origin does not answer on port $origin_port" >&2
  exit 1
}

# The hot path answers the value after the fetch time; counters and request times start at zero.
origin_control_body() { echo "{\"reset\": true, \"default\": {\"body\": \"$value\", \"delay_ms\": $fetch_ms}}"; }
reset_origin() {
  curl -sf --max-time 5 -X POST -H 'Content-Type: application/json' --data "$(origin_control_body)" \
    "$(origin_url /_control)" >/dev/null
}

# --- Corral processes -----------------------------------------------------------------------------
# base SETUP: the setup without its @CLIENTS; clients_of SETUP: its client count.
base() { echo "${1%@*}"; }
clients_of() { if [ "${1#*@}" != "$1" ]; then echo "${1#*@}"; else echo "$clients"; fi; }
uses_http() { [ "$(base "$1")" = http ] || is_fleet "$1"; }
is_fleet() { [ "$(base "$1")" = fleet ] || on_cluster "$1"; }
on_cluster() { [ "$(base "$1")" = fleet-cluster ]; }

# The cluster (fleet-cluster): started once, on first use; its watcher stops it when this script ends.
cluster_ports=()
start_cluster() {
  [ ${#cluster_ports[@]} -eq 0 ] || return 0
  read -ra cluster_ports <<<"$(CLUSTER_OWNER_PID=$$ bash "$CORRAL_ROOT/scripts/cluster.sh" start \
    "$workdir/cluster" 2>"$out_dir/cluster.log")"
}
# FLUSHALL on every primary (replicas refuse it and follow theirs).
flush_cluster() {
  local port
  for port in "${cluster_ports[@]}"; do redis-cli -h "$host" -p "$port" FLUSHALL >/dev/null 2>&1 || true; done
}
upstream_yaml() {
  if on_cluster "$1"; then
    echo "upstream: { cluster: [$(printf "redis://$host:%s, " "${cluster_ports[@]}" | sed 's/, $//')] }"
  else
    echo "upstream: { address: redis://$host:$redis_port }"
  fi
}

# policy_yaml SETUP: the one policy of a Corral setup.
policy_yaml() {
  local common="prefix: \"hot:\", commands: [GET], ttl: ${ttl_ms}ms, jitter: 0"
  local http
  http="origin: {http: \"$(origin_url '/features/{suffix}')\", timeout: 2s}"
  case "$1" in
    coalesce) echo "  - {$common, origin: redis, beta: 0, grace: 0s, fetch_delay: ${fetch_ms}ms}" ;;
    grace) echo "  - {$common, origin: redis, beta: 1.0, grace: 10s, fetch_delay: ${fetch_ms}ms}" ;;
    http) echo "  - {$common, $http, beta: 1.0, grace: 10s}" ;;
    fleet|fleet-cluster) echo "  - {$common, $http, beta: 1.0, grace: 10s, shared: true}" ;;
  esac
}

# config_yaml SETUP PORT METRICS_PORT
config_yaml() {
  echo "listen: $host:$2"
  echo "metrics: $host:$3"
  echo "threads: $threads"
  echo "log_level: warn"
  # Room for every client of the setup on one process, plus the generator's watcher.
  echo "client: { max_clients: $(($(clients_of "$1") + 100)) }"
  upstream_yaml "$1"
  echo "policies:"
  policy_yaml "$(base "$1")"
}

# start_corrals SETUP COUNT: COUNT processes, named SETUP, SETUP-2, ... (their NAME.yml and NAME.log);
# sets instances[SETUP] and the arrays corral_ports, metrics_ports, corral_pids. Returns 1 (the reason
# in skipped[SETUP]) when this Corral cannot run the setup.
start_corrals() {
  local setup=$1 count=$2 i name check
  corral_ports=() metrics_ports=() corral_pids=()
  instances[$setup]=""
  for i in $(seq "$count"); do
    name=$setup
    [ "$i" -eq 1 ] || name=$setup-$i
    corral_ports+=("$(free_port)")
    metrics_ports+=("$(free_port)")
    config_yaml "$setup" "${corral_ports[-1]}" "${metrics_ports[-1]}" >"$out_dir/$name.yml"
    if [ "$i" -eq 1 ] && ! check=$("$corral_bin" --check-config "$out_dir/$name.yml" 2>&1); then
      skipped[$setup]="corral --check-config rejects the policy: $(echo "$check" | tail -n +2 | head -3 | sed 's/^ *//' | tr '\n' ' ')"
      return 1
    fi
    "$corral_bin" -c "$out_dir/$name.yml" >"$out_dir/$name.log" 2>&1 &
    corral_pids+=("$!")
    pids+=("$!")
    instances[$setup]+="$name "
  done
  for i in "${!corral_pids[@]}"; do
    wait_ready "${corral_ports[$i]}" "${corral_pids[$i]}" "$out_dir/$(instance "$setup" "$i").log"
  done
}

# instance SETUP I: the name of the I-th (from 0) process of a setup.
instance() {
  local names
  read -ra names <<<"${instances[$1]}"
  echo "${names[$2]}"
}

# scrape_all SETUP WHEN: every process's /metrics into NAME.metrics.WHEN.
scrape_all() {
  local i name
  for i in "${!metrics_ports[@]}"; do
    name=$(instance "$1" "$i")
    curl -sf --max-time 5 "http://$host:${metrics_ports[$i]}/metrics" >"$out_dir/$name.metrics.$2" ||
      { echo "$name: no /metrics ($2 the run)" >&2; exit 1; }
  done
}

# metric FILE NAME [LABEL="VALUE"]: the value of NAME{policy="hot:"[,LABEL="VALUE"]} in a scrape (0 if
# absent).
metric() {
  awk -v name="$2" -v label="${3:-}" '
    !/^#/ && (index($0, name "{") == 1 || index($0, name " ") == 1) && index($0, "policy=\"hot:\"") &&
    (label == "" || index($0, label)) { sum += $NF }
    END { printf "%d\n", sum }' "$1"
}

# grown SETUP NAME [LABEL="VALUE"]: after minus before of a metric, per process (space-separated).
grown() {
  local name out=""
  for name in ${instances[$1]}; do
    out+="$(($(metric "$out_dir/$name.metrics.after" "${@:2}") - $(metric "$out_dir/$name.metrics.before" "${@:2}"))) "
  done
  echo "${out% }"
}
# grown_total SETUP NAME [LABEL="VALUE"]: the same, summed over the processes.
grown_total() {
  local total=0 n
  for n in $(grown "$@"); do total=$((total + n)); done
  echo "$total"
}

# field SETUP KEY: a key=value line of the generator's output (and the origin's counts appended to it).
field() { sed -n "s/^$2=//p" "$out_dir/$1.out" | head -1; }

# --- one setup ------------------------------------------------------------------------------------
declare -A skipped=() fetches=() expiries=() metric_fetches=() commands=() lookups=() instances=()
declare -A fleet_notes=() in_run=()
ran=()
failures=0

# run_load SETUP PORTS [generator flags...]: the generator (PORTS: P1,P2,...) in the background, waited
# for, so a TERM to this script reaches the trap at once.
run_load() {
  local setup=$1 ports=$2
  shift 2
  local cmd=("$load_bin" --port "$ports" --connections "$(clients_of "$setup")" --duration "$duration" --key "$key"
    --think-ms "$think_ms" --compute-ms "$fetch_ms" --csv "$out_dir/$setup.csv"
    --expiries-csv "$out_dir/$setup.expiries.csv" "$@")
  commands[$setup]="${cmd[*]}"
  echo "== $setup: ${cmd[*]}   (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  "${cmd[@]}" >"$out_dir/$setup.out" 2>"$out_dir/$setup.err" &
  local load_pid=$! status=0
  pids+=("$load_pid")
  wait "$load_pid" || status=$?
  forget_pid "$load_pid"
  if [ "$status" -ne 0 ]; then
    echo "   $setup: the generator failed ($status): $(tail -3 "$out_dir/$setup.err")" >&2
    failures=$((failures + 1))
    return 1
  fi
  ran+=("$setup")
}

# count_refreshes SETUP PREFIX FALLBACK_FETCHES: expiries[SETUP] and fetches[SETUP] for the table, from
# the PREFIXrefreshes and PREFIXrefresh_fetches fields: each expiry paired with the fetches that served
# it (see tests/bench/expiry_log.hpp); without that, all fetches in the run over the expiries inside it.
count_refreshes() {
  local setup=$1 prefix=$2
  if [ "$(field "$setup" "${prefix}refreshes")" != n/a ] && [ -n "$(field "$setup" "${prefix}refreshes")" ]; then
    expiries[$setup]=$(field "$setup" "${prefix}refreshes")
    fetches[$setup]=$(field "$setup" "${prefix}refresh_fetches")
  else
    expiries[$setup]=$(field "$setup" expiries)
    fetches[$setup]=$3
  fi
}

run_aside() {
  redis_cmd DEL "$key" >/dev/null
  run_load aside "$redis_port" --cache-aside --ttl-ms "$ttl_ms" || return 0
  count_refreshes aside "" "$(field aside computes)"
  in_run[aside]=$(field aside computes)
}

# The origin holds the value for good; only Corral's copy expires. Nothing of an earlier setup stays
# in Redis (the fleet's shared copy, shadow and lock).
prepare_origin() {
  redis_cmd FLUSHDB >/dev/null
  if on_cluster "$1"; then start_cluster && flush_cluster; fi
  if uses_http "$1"; then
    start_origin
    reset_origin
  else
    redis_cmd SET "$key" "$value" >/dev/null
  fi
}

# count_corral SETUP: fetches, expiries and lookups of a run, from the scrapes (and the origin's stats).
count_corral() {
  local setup=$1 outcome total origin_counts
  total=$(grown_total "$setup" corral_origin_requests_total)
  # The generator's warm-up GET, before its clock starts, is the cold fill: one fetch, not an expiry's.
  if [ "$total" -gt 0 ]; then
    metric_fetches[$setup]=$((total - 1))
  else
    echo "   WARNING: $setup: no origin fetch counted (corral_origin_requests_total{policy=\"hot:\"})" >&2
    metric_fetches[$setup]=n/a
  fi
  if uses_http "$setup"; then
    origin_stats >"$out_dir/$setup.origin.after" || { echo "$setup: no origin /_stats after the run" >&2; exit 1; }
    origin_counts=$(/usr/bin/python3 "$CORRAL_ROOT/tests/bench/origin_fetches.py" --path "$origin_path" \
      --before "$out_dir/$setup.origin.before" --after "$out_dir/$setup.origin.after" \
      --load "$out_dir/$setup.out" --csv "$out_dir/$setup.csv" --window-after-ms $((fetch_ms + 100)))
    echo "$origin_counts" >>"$out_dir/$setup.out"
    count_refreshes "$setup" origin_ "$(field "$setup" origin_fetches_in_run)"
    in_run[$setup]=$(field "$setup" origin_fetches_in_run)
  else
    count_refreshes "$setup" "" "${metric_fetches[$setup]}"
    in_run[$setup]=${metric_fetches[$setup]}
  fi
  lookups[$setup]=""
  for outcome in hit stale miss coalesced; do
    lookups[$setup]+="$outcome $(grown_total "$setup" corral_cache_lookups_total "outcome=\"$outcome\""), "
  done
  [ "$(grown_total "$setup" corral_cache_lookups_total 'outcome="hit"')" -gt 0 ] ||
    echo "   WARNING: $setup: no cache hits: the policy did not cache" >&2
  is_fleet "$setup" || return 0
  fleet_notes[$setup]="origin fetches per process (/metrics, cold fill included):"
  fleet_notes[$setup]+=" $(grown "$setup" corral_origin_requests_total); fleet locks acquired"
  fleet_notes[$setup]+=" $(grown "$setup" corral_fleet_locks_total 'result="acquired"'), contended"
  fleet_notes[$setup]+=" $(grown "$setup" corral_fleet_locks_total 'result="contended"') (per process),"
  fleet_notes[$setup]+=" writes fenced $(grown_total "$setup" corral_fleet_writes_fenced_total);"
}

# run_corral SETUP: one Corral (a fleet of them for `fleet`), the load through all of them.
run_corral() {
  local setup=$1 count=1 i
  ! is_fleet "$setup" || count=$fleet_size
  prepare_origin "$setup"
  if ! start_corrals "$setup" "$count"; then
    echo "   $setup: not run: ${skipped[$setup]}" >&2
    failures=$((failures + 1))
    return 0
  fi
  scrape_all "$setup" before
  ! uses_http "$setup" || origin_stats >"$out_dir/$setup.origin.before" ||
    { echo "$setup: no origin /_stats" >&2; exit 1; }
  if run_load "$setup" "$(IFS=,; echo "${corral_ports[*]}")"; then
    scrape_all "$setup" after
    count_corral "$setup"
  fi
  for i in "${!corral_pids[@]}"; do
    kill -0 "${corral_pids[$i]}" 2>/dev/null && continue
    echo "   $(instance "$setup" "$i"): corral died; its log:" >&2
    tail -20 "$out_dir/$(instance "$setup" "$i").log" >&2
    failures=$((failures + 1))
  done
  for i in "${!corral_pids[@]}"; do stop_pid "${corral_pids[$i]}"; done
}

# --- report ---------------------------------------------------------------------------------------
describe() {
  local what
  case "$(base "$1")" in
    aside) what="cache-aside clients -> redis (baseline)" ;;
    coalesce) what="corral, coalescing only" ;;
    grace) what="corral, grace + XFetch, redis origin" ;;
    http) what="corral, grace + XFetch, http origin" ;;
    fleet) what="$fleet_size corrals, fleet (shared: true), http origin" ;;
    fleet-cluster) what="$fleet_size corrals, fleet (shared: true), http origin, Redis Cluster 3+3" ;;
  esac
  echo "$what, $(clients_of "$1") clients"
}

div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'; }
# verdict VALUE LIMIT -> PASS when VALUE <= LIMIT.
verdict() { awk -v v="$1" -v l="$2" 'BEGIN { if (v == "n/a") print "MISS (no data)"; else print (v + 0 <= l + 0) ? "PASS" : "MISS" }'; }
ms() { awk -v v="$1" 'BEGIN { if (v == "" || v == "n/a") print "n/a"; else if (v < 10) printf "%.2f", v; else printf "%.0f", v }'; }

report() {
  local setup periods
  periods=$(div "$duration" "$(awk -v t="$ttl_ms" 'BEGIN { print t / 1000 }')")
  echo "# Corral stampede benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "N clients (per setup), one request in flight each, think time uniform 0-$think_ms ms, GET $key for $duration s;"
  echo "TTL $ttl_ms ms, an origin fetch takes $fetch_ms ms. Latency in ms; \"during expiry\": requests sent from"
  echo "50 ms before an expiry to $((fetch_ms + 100)) ms after it; plain hits: all other requests."
  echo
  echo "| setup | expiries | origin fetches | fetches per expiry | p50 | p99 | p99 during expiry | max |"
  echo "|---|---|---|---|---|---|---|---|"
  for setup in "${ran[@]}"; do
    echo "| $(describe "$setup") | ${expiries[$setup]} | ${fetches[$setup]} |" \
      "$(div "${fetches[$setup]}" "${expiries[$setup]}") |" \
      "$(ms "$(field "$setup" all_p50_ms)") | $(ms "$(field "$setup" all_p99_ms)") |" \
      "$(ms "$(field "$setup" expiry_p99_ms)") | $(ms "$(field "$setup" all_max_ms)") |"
  done
  echo
  echo "## Targets (SPEC.md): <= 1.1 origin fetches per TTL window, p99 during expiry <= 1.2x plain hits, no errors"
  echo
  echo "Fetches per TTL window: origin fetches made during the run (counted at the HTTP origin; for the redis"
  echo "origin, corral_origin_requests_total minus the cold fill) over the run's TTL windows ($periods = $duration s / ttl)."
  echo "Per refresh cycle: the fetches between the first sightings of two generations of the value."
  echo
  echo "| setup | requests/s | fetches in run | per TTL window | <= 1.1 | per refresh cycle | p99 plain hits | p99 during expiry | ratio | <= 1.2 | errors |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for setup in "${ran[@]}"; do
    local hit expiry ratio per_window errors
    hit=$(field "$setup" hit_p99_ms)
    expiry=$(field "$setup" expiry_p99_ms)
    ratio=$(div "$expiry" "$hit")
    per_window=$(div "${in_run[$setup]:-n/a}" "$periods")
    errors=$(($(field "$setup" errors) + $(field "$setup" failed_connections)))
    echo "| $(describe "$setup") | $(field "$setup" rps) | ${in_run[$setup]:-n/a} | $per_window |" \
      "$(verdict "$per_window" 1.1) | $(div "${fetches[$setup]}" "${expiries[$setup]}") | $(ms "$hit") |" \
      "$(ms "$expiry") | $ratio | $(verdict "$ratio" 1.2) | $errors |"
  done
  echo
  for setup in $setups; do
    [ -z "${skipped[$setup]:-}" ] || echo "- $(describe "$setup"): not run: ${skipped[$setup]}"
  done
  for setup in "${ran[@]}"; do
    local notes=""
    [ "$(field "$setup" errors)" = 0 ] || notes+=" error replies: $(field "$setup" errors);"
    [ -z "${lookups[$setup]:-}" ] || notes+=" cache lookups: ${lookups[$setup]%, };"
    [ "$setup" != aside ] || notes+=" nil replies (each one a compute): $(field aside nil_replies);"
    [ -z "${metric_fetches[$setup]:-}" ] ||
      notes+=" origin fetches in /metrics over the whole run: ${metric_fetches[$setup]};"
    if uses_http "$setup"; then
      notes+=" at the origin: $(field "$setup" origin_fetches_in_run) in the run (the cold fill before it),"
      notes+=" at $(field "$setup" origin_fetch_times_s)s, per refresh: $(field "$setup" origin_fetches_per_refresh);"
      notes+=" p99 of requests sent from 50 ms before to $((fetch_ms + 100)) ms after an origin fetch (the real"
      notes+=" refresh instants): $(ms "$(field "$setup" fetch_window_p99_ms)") ms, other requests:"
      notes+=" $(ms "$(field "$setup" outside_fetch_window_p99_ms)") ms;"
    fi
    notes+=" ${fleet_notes[$setup]:-}"
    [ -z "$(field "$setup" watch_problem)" ] || notes+=" no expiry windows: $(field "$setup" watch_problem);"
    echo "- $(describe "$setup"): expiry windows at $(field "$setup" expiry_times_s)s;$notes"
  done
  echo "- TTL periods in the run: $periods. Through Corral, an expiry is one TTL cycle of the cached value, and"
  echo "  its fetches are those counted (CORRAL.STATS; for http and fleet: at the origin server) between the"
  echo "  first sightings of the old and the new value;"
  echo "  XFetch refreshes before the TTL runs out, so its cycles are shorter than the TTL. The cold fill made"
  echo "  before the clock starts is not counted."
  echo
  echo "Plot: $plot_file"
  echo
  echo "## Machine"
  echo "- cpus: $(nproc); model: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); kernel: $(uname -srm)"
  echo "- loadavg at start: $load_start; at end: $load_end (the cores are shared: read the ratios)"
  echo "- $(redis-server --version | cut -d' ' -f1-3)"
  [ "$corral_setups" -eq 0 ] || echo "- corral: $("$corral_bin" --version 2>&1 | head -1) ($corral_bin, threads: $threads)"
  [ -z "$origin_port" ] || echo "- origin: tests/origin_server.py ($(/usr/bin/python3 --version), ThreadingHTTPServer)"
  echo
  echo "## Reproduce"
  echo "Ports are those of this run."
  echo
  echo '```'
  printf '%q ' "${redis_command[@]}"
  echo
  if [ -n "$origin_port" ]; then
    printf '%q ' "${origin_command[@]}"
    echo "&"
  fi
  for setup in "${ran[@]}"; do
    echo "# $setup"
    if [ "$setup" = aside ]; then
      echo "redis-cli -p $redis_port DEL $key"
    elif uses_http "$setup"; then
      if on_cluster "$setup"; then
        echo "scripts/cluster.sh start DIR   # ports of this run: ${cluster_ports[*]}; FLUSHALL on each"
      else
        echo "redis-cli -p $redis_port FLUSHDB"
      fi
      echo "curl -X POST --data '$(origin_control_body)' $(origin_url /_control)"
    else
      echo "redis-cli -p $redis_port FLUSHDB; redis-cli -p $redis_port SET $key <32 bytes>"
    fi
    local name
    for name in ${instances[$setup]:-}; do
      echo "$corral_bin -c $name.yml &   # $name.yml:"
      sed 's/^/#   /' "$out_dir/$name.yml"
    done
    echo "${commands[$setup]}"
  done
  echo '```'
}

plot() {
  local args=() setup
  for setup in "${ran[@]}"; do
    local subtitle
    subtitle="${fetches[$setup]} origin fetches, ${expiries[$setup]} expiries; p99 $(ms "$(field "$setup" all_p99_ms)") ms,"
    subtitle+=" during expiry $(ms "$(field "$setup" expiry_p99_ms)") ms, plain hits $(ms "$(field "$setup" hit_p99_ms)") ms"
    args+=(--setup "$(describe "$setup")" "$out_dir/$setup.csv" "$out_dir/$setup.expiries.csv"
      "$(field "$setup" hit_p99_ms)" "$subtitle")
  done
  [ ${#args[@]} -gt 0 ] || return 0
  # Debian's python3, which python3-matplotlib installs into (not whatever python3 is first in PATH).
  /usr/bin/python3 "$CORRAL_ROOT/tests/bench/plot_stampede.py" --out "$plot_file" \
    --title "GET $key, TTL $ttl_ms ms, fetch $fetch_ms ms: latency of every request (log)" \
    "${args[@]}" >/dev/null
}

# --- the run --------------------------------------------------------------------------------------
echo "== redis-server; output in $out_dir" >&2
start_redis
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for setup in $setups; do
  case "$(base "$setup")" in
    aside) [ "$setup" = aside ] || { echo "aside runs with STAMPEDE_CLIENTS only" >&2; exit 2; }; run_aside ;;
    coalesce|grace|http|fleet|fleet-cluster) run_corral "$setup" ;;
    *) echo "unknown setup $setup (aside, coalesce, grace, http, fleet, fleet-cluster)" >&2; exit 2 ;;
  esac
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
stop_pid "$redis_pid"
[ ${#cluster_ports[@]} -eq 0 ] || bash "$CORRAL_ROOT/scripts/cluster.sh" stop "$workdir/cluster" >/dev/null 2>&1 || true

echo "== plotting" >&2
plot || { echo "   plotting failed" >&2; plot_file="(none: plotting failed)"; failures=$((failures + 1)); }
report >"$out_dir/report.md"
cat "$out_dir/report.md"
[ -z "$out_file" ] || cp "$out_dir/report.md" "$out_file"
echo "== report: $out_dir/report.md; plot: $plot_file" >&2
if [ "$failures" -gt 0 ]; then
  echo "== $failures setup(s) failed or not run; see above" >&2
  exit 1
fi
