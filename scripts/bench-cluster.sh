#!/usr/bin/env bash
# Cluster benchmark: redis-benchmark GET/SET (50 clients, pipeline 1 and 16, random keys over all
# slots) against Corral on a 3-primary Redis Cluster, straight to the nodes (`redis-benchmark
# --cluster`, a cluster-aware client with no hop) and predixy if PREDIXY_BIN is set, in one run;
# then the stampede benchmark with its hot key on the cluster. For every target, the CPU time per
# request of the process(es) serving it (/proc/PID/stat; "direct": the three primaries) and, in one
# more run with perf attached, their system calls per request (perf stat -e 'syscalls:sys_enter_*').
# Usage: scripts/bench-cluster.sh [--out FILE] [--no-stampede]   (FILE: also write the report there)
# Env: CORRAL_BIN (skip the build), PREDIXY_BIN, BASELINE_BIN (another corral build, measured as "baseline"), CORRAL_THREADS (1; predixy gets as many), BENCH_RUNS (3),
#      BENCH_REQUESTS (2000000 at pipeline 16), BENCH_REQUESTS_P1 (200000), BENCH_CLIENTS (50),
#      BENCH_KEYSPACE (100000), BENCH_VALUE_SIZE (100), BENCH_SYSCALL_RUNS (1: perf runs per cell),
#      BENCH_CLUSTER_REPLICAS (0: all cores to the primaries),
#      STAMPEDE_LOAD_BIN, STAMPEDE_CLIENTS (1000), STAMPEDE_DURATION (12), STAMPEDE_TTL_MS (2000),
#      STAMPEDE_FETCH_MS (200), STAMPEDE_FLEET_SIZE (3)
#
# Runs of the targets are interleaved (direct, corral, predixy, then again) so drifting background
# load hits them alike; each measurement is repeated BENCH_RUNS times and the median rps is reported.
# Before measuring, every target must answer SET/GET of keys spread over all slots correctly: a
# target answering -MOVED would look fast to redis-benchmark, which counts any reply.
# Stampede (scripts/bench-stampede.sh starts its own single redis-server and cannot be pointed at a
# cluster, hence this section): 1,000 clients GET one hot key whose TTL expires while a fetch takes
# 200 ms; "aside" rows are cache-aside clients (stampede_load --cache-aside) against the hot key's
# primary directly and through predixy; the Corral row is a fleet of STAMPEDE_FLEET_SIZE processes
# on the cluster with an HTTP origin (tests/origin_server.py) and `shared: true` (corral-one: one
# process without it), whose origin fetches are counted at the origin.
# Progress goes to stderr; the report (markdown) to stdout.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

out_file=""
stampede=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "--out needs a FILE" >&2; exit 2; }; out_file=$2; shift 2 ;;
    --out=*) out_file=${1#--out=}; shift ;;
    --no-stampede) stampede=0; shift ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -z "$out_file" ] || out_file=$(realpath -m "$out_file")

threads=${CORRAL_THREADS:-1}
runs=${BENCH_RUNS:-3}
# redis-benchmark --cluster reports its rate in coarse steps on short runs (200,000 requests at
# pipeline 16 came out as 793k, 395k, 263k or 195k rps): long runs keep the ratio honest.
requests_p16=${BENCH_REQUESTS:-2000000}
requests_p1=${BENCH_REQUESTS_P1:-200000}
clients=${BENCH_CLIENTS:-50}
keyspace=${BENCH_KEYSPACE:-100000}
value_size=${BENCH_VALUE_SIZE:-100}
syscall_runs=${BENCH_SYSCALL_RUNS:-1}
replicas=${BENCH_CLUSTER_REPLICAS:-0}
st_clients=${STAMPEDE_CLIENTS:-1000}
st_duration=${STAMPEDE_DURATION:-12}
st_ttl_ms=${STAMPEDE_TTL_MS:-2000}
st_fetch_ms=${STAMPEDE_FETCH_MS:-200}
st_fleet=${STAMPEDE_FLEET_SIZE:-3}
host=127.0.0.1
for n in "$value_size" "$syscall_runs" "$runs" "$requests_p16" "$requests_p1" "$clients" "$keyspace" "$replicas" "$st_clients" \
  "$st_duration" "$st_ttl_ms" "$st_fetch_ms" "$st_fleet"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "not a whole number in the BENCH_/STAMPEDE_ settings: $n" >&2; exit 2; }
done

install_packages >&2
if [ -n "${CORRAL_BIN:-}" ]; then
  corral_bin=$(realpath "$CORRAL_BIN")
else
  echo "== release build: corral stampede_load" >&2
  (cd "$CORRAL_ROOT" && cmake --preset release >/dev/null &&
    cmake --build --preset release --target corral stampede_load) >&2
  corral_bin=$CORRAL_ROOT/build/release/src/corral
fi
load_bin=${STAMPEDE_LOAD_BIN:-$CORRAL_ROOT/build/release/tests/bench/stampede_load}
predixy_bin=""
if [ -n "${PREDIXY_BIN:-}" ]; then
  predixy_bin=$(realpath "$PREDIXY_BIN")
  [ -x "$predixy_bin" ] || { echo "PREDIXY_BIN=$PREDIXY_BIN is not an executable" >&2; exit 2; }
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# --- processes: the cluster, proxies, origin and load are stopped however the script ends ------------
# shellcheck source=scripts/lib/processes.sh
source "$CORRAL_ROOT/scripts/lib/processes.sh"
track_processes corral-bench-cluster
# shellcheck source=scripts/lib/proc_cost.sh
source "$CORRAL_ROOT/scripts/lib/proc_cost.sh"
cluster_dir=$workdir/cluster
stop_everything() {
  local status=$?
  [ ! -f "$cluster_dir/ports" ] || "$CORRAL_ROOT/scripts/cluster.sh" stop "$cluster_dir" || true
  (exit "$status")
  cleanup_processes
}
trap stop_everything EXIT

echo "== cluster: 3 primaries, $replicas replica(s) each" >&2
read -r -a nodes <<<"$(CLUSTER_OWNER_PID=$$ "$CORRAL_ROOT/scripts/cluster.sh" start "$cluster_dir" \
  --primaries 3 --replicas "$replicas")"
seed=${nodes[0]}

declare -A port_of=() pid_of=() skipped=() commands_used=()

# wait_port PORT PID LOG NAME: until PING answers there.
wait_port() {
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || { skipped[$4]="exited at start: $(tail -3 "$3" | tr '\n' ' ')"; return 1; }
    [ "$(redis-cli -h "$host" -p "$1" PING 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  skipped[$4]="does not answer PING on $1"
  return 1
}

seeds_yaml() {
  local out="" p
  for p in "${nodes[@]}"; do out+="${out:+, }redis://$host:$p"; done
  echo "[$out]"
}

# start_corral NAME [POLICY_YAML] [BINARY]: a Corral on the cluster; sets started_port (or fails, the
# reason in skipped[NAME]). Not called in $(...): its pid must reach `pids` for the cleanup.
started_port=""
started_pid=""
start_corral() {
  local name=$1 policy=${2:-} bin=${3:-$corral_bin} port metrics check
  port=$(free_port)
  metrics=$(free_port)
  {
    echo "listen: $host:$port"
    echo "metrics: $host:$metrics"
    echo "threads: $threads"
    echo "log_level: warn"
    echo "upstream: { cluster: $(seeds_yaml) }"
    [ -z "$policy" ] || printf 'policies:\n%s\n' "$policy"
  } >"$workdir/$name.yml"
  if ! check=$("$bin" --check-config "$workdir/$name.yml" 2>&1); then
    skipped[$name]="--check-config: $(echo "$check" | tail -n +2 | head -2 | tr '\n' ' ')"
    return 1
  fi
  "$bin" -c "$workdir/$name.yml" >"$workdir/$name.log" 2>&1 &
  pids+=("$!")
  started_pid=$!
  wait_port "$port" "$started_pid" "$workdir/$name.log" "$name" || return 1
  started_port=$port
}

start_predixy() {
  local port
  port=$(free_port)
  {
    echo "Name CorralBench"
    echo "Bind $host:$port"
    echo "WorkerThreads $([ "$threads" = auto ] && nproc || echo "$threads")"
    echo "ClientTimeout 300"
    echo "LogVerbSample 0"
    echo "LogDebugSample 0"
    echo "LogInfoSample 0"
    echo "Authority {"
    echo "  Auth {"
    echo "    Mode write"
    echo "  }"
    echo "}"
    echo "ClusterServerPool {"
    echo "  RefreshInterval 1"
    echo "  ServerTimeout 1"
    echo "  Servers {"
    for p in "${nodes[@]}"; do echo "    + $host:$p"; done
    echo "  }"
    echo "}"
  } >"$workdir/predixy.conf"
  "$predixy_bin" "$workdir/predixy.conf" >"$workdir/predixy.log" 2>&1 &
  pids+=("$!")
  started_pid=$!
  wait_port "$port" "$started_pid" "$workdir/predixy.log" predixy || return 1
  started_port=$port
}

# valid TARGET: SET then GET of 64 keys over all slots through it must answer OK and the value.
valid() {
  local target=$1 port=${port_of[$1]} i got bad=0
  for i in $(seq 64); do
    local key
    printf -v key 'key:%012d' $((i * 1543))
    got=$(redis-cli -h "$host" -p "$port" SET "$key" "v$i" 2>&1)
    [ "$got" = OK ] || bad=$((bad + 1))
    got=$(redis-cli -h "$host" -p "$port" GET "$key" 2>&1)
    [ "$got" = "v$i" ] || { bad=$((bad + 1)); last_bad="$key -> $got"; }
  done
  if [ "$bad" -gt 0 ]; then
    skipped[$target]="$bad wrong replies of 128 SET/GET over all slots (e.g. ${last_bad:-a SET})"
    return 1
  fi
}

targets="direct"
port_of[direct]=$seed
# Direct requests cost the primaries, each the process listed in its INFO.
for p in "${nodes[@]}"; do
  if [ "$(redis-cli -h "$host" -p "$p" ROLE | head -1)" = master ]; then
    pid_of[direct]+="${pid_of[direct]:+,}$(redis-cli -h "$host" -p "$p" INFO server | awk -F: '/^process_id:/ {print $2+0}')"
  fi
done
if start_corral corral; then port_of[corral]=$started_port; pid_of[corral]=$started_pid; targets+=" corral"; fi
if [ -n "${BASELINE_BIN:-}" ] && start_corral baseline "" "$(realpath "$BASELINE_BIN")"; then
  port_of[baseline]=$started_port
  pid_of[baseline]=$started_pid
  targets+=" baseline"
fi
if [ -n "$predixy_bin" ]; then
  if start_predixy; then port_of[predixy]=$started_port; pid_of[predixy]=$started_pid; targets+=" predixy"; fi
else
  skipped[predixy]="PREDIXY_BIN not set"
fi
checked="direct"
for t in $targets; do
  [ "$t" = direct ] && continue
  if valid "$t"; then checked+=" $t"; else echo "   $t skipped: ${skipped[$t]}" >&2; fi
done
targets=$checked

echo "== filling $keyspace keys over all slots" >&2
redis-benchmark --cluster -h "$host" -p "$seed" -c "$clients" -n $((keyspace * 2)) -r "$keyspace" \
  -P 16 -d "$value_size" -t set -q >/dev/null 2>&1

failures=0
# measure TARGET TEST PIPELINE [syscalls]: one redis-benchmark run; appends "rps p50 p99" to its results
# file and the CPU us per request to its cost file; with `syscalls`, a run under perf that records
# only the syscalls per request (sys file).
measure() {
  local target=$1 test=$2 pipeline=$3 syscalls=${4:-} n=$requests_p1 pid=${pid_of[$1]:-}
  [ "$pipeline" -eq 1 ] || n=$requests_p16
  # redis-benchmark retries a refused connection forever: a target that stops answering must fail.
  local cmd=(timeout 300 redis-benchmark -h "$host" -p "${port_of[$target]}" -c "$clients" -n "$n"
    -r "$keyspace" -P "$pipeline" -d "$value_size" -t "$test" --csv)
  [ "$target" != direct ] || cmd+=(--cluster)
  commands_used["$target"]="${cmd[*]}"
  local status=0 bench_pid cost="n/a n/a n/a"
  [ -z "$pid" ] || cost_begin "$pid" "$syscalls"
  "${cmd[@]}" >"$workdir/out.csv" 2>"$workdir/out.err" &
  bench_pid=$!
  pids+=("$bench_pid")
  wait "$bench_pid" || status=$?
  forget_pid "$bench_pid"
  if [ -n "$pid" ]; then
    cost_end "$pid" "$n"
    cost=$cost_result
  fi
  local line
  line=$(awk -F'"' -v t="${test^^}" '$2 == t { print $4, $10, $14 }' "$workdir/out.csv" | tail -1)
  if [ "$status" -ne 0 ] || [ -z "$line" ]; then
    echo "   $target $test P$pipeline: redis-benchmark failed: $(tail -3 "$workdir/out.err")" >&2
    failures=$((failures + 1))
    return 0
  fi
  if [ -n "$syscalls" ]; then
    echo "${cost#* }" >>"$workdir/sys.$target.$test.$pipeline"
    echo "   $target $test P$pipeline: syscalls/request, most frequent = ${cost#* }" >&2
    return 0
  fi
  echo "$line" >>"$workdir/res.$target.$test.$pipeline"
  echo "${cost%% *}" >>"$workdir/cost.$target.$test.$pipeline"
  echo "$cost_kernel_result" >>"$workdir/kern.$target.$test.$pipeline"
  echo "   $target $test P$pipeline: rps p50 p99 = $line, CPU us/request ${cost%% *} (kernel $cost_kernel_result)   (load $(cut -d' ' -f1 /proc/loadavg))" >&2
}

median() {
  local file=$workdir/res.$1.$2.$3 count
  [ -s "$file" ] || { echo "n/a n/a n/a"; return; }
  count=$(wc -l <"$file")
  sort -n -k1,1 "$file" | sed -n "$((count / 2 + 1))p"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
rps_fmt() { awk -v a="$1" 'BEGIN { if (a == "n/a") print a; else printf "%.0f", a }'; }

for test in get set; do
  for pipeline in 1 16; do
    for run in $(seq "$runs"); do
      echo "== $test P$pipeline run $run/$runs" >&2
      for target in $targets; do measure "$target" "$test" "$pipeline"; done
    done
    cost_perf_available || continue
    for run in $(seq "$syscall_runs"); do
      echo "== $test P$pipeline syscalls run $run/$syscall_runs (perf attached)" >&2
      for target in $targets; do measure "$target" "$test" "$pipeline" syscalls; done
    done
  done
done

# --- stampede with the hot key on the cluster ------------------------------------------------------
declare -A st_out=() st_fetches=()
hot_key=hot:key

# stampede_run NAME PORTS [stampede_load options...]
stampede_run() {
  local name=$1 ports=$2
  shift 2
  local cmd=("$load_bin" --port "$ports" --connections "$st_clients" --duration "$st_duration"
    --key "$hot_key" --think-ms 5 --compute-ms "$st_fetch_ms" "$@")
  commands_used["stampede $name"]="${cmd[*]}"
  echo "== stampede $name: ${cmd[*]}" >&2
  local status=0 load_pid
  "${cmd[@]}" >"$workdir/st.$name.out" 2>"$workdir/st.$name.err" &
  load_pid=$!
  pids+=("$load_pid")
  wait "$load_pid" || status=$?
  forget_pid "$load_pid"
  if [ "$status" -ne 0 ]; then
    skipped["stampede $name"]="stampede_load failed: $(tail -2 "$workdir/st.$name.err" | tr '\n' ' ')"
    return 1
  fi
  st_out[$name]=$workdir/st.$name.out
}
st_field() { sed -n "s/^$2=//p" "${st_out[$1]}" | head -1; }

run_stampede() {
  [ -x "$load_bin" ] || { skipped[stampede]="no stampede_load binary at $load_bin"; return 0; }
  local owner slot
  slot=$(redis-cli -h "$host" -p "$seed" CLUSTER KEYSLOT "$hot_key")
  owner=$(redis-cli -h "$host" -p "$seed" CLUSTER NODES |
    awk -v s="$slot" '/master/ { for (i = 9; i <= NF; i++) { split($i, r, "-"); if (r[2] == "") r[2] = r[1];
      if (s >= r[1] && s <= r[2]) { split($2, a, "[:@]"); print a[2] } } }' | head -1)
  redis-cli -h "$host" -p "$owner" DEL "$hot_key" >/dev/null
  if stampede_run aside-direct "$owner" --cache-aside --ttl-ms "$st_ttl_ms"; then
    st_fetches[aside-direct]=$(st_field aside-direct computes)
  fi
  if [ -n "${port_of[predixy]:-}" ]; then
    redis-cli -h "$host" -p "$owner" DEL "$hot_key" >/dev/null
    if stampede_run aside-predixy "${port_of[predixy]}" --cache-aside --ttl-ms "$st_ttl_ms"; then
      st_fetches[aside-predixy]=$(st_field aside-predixy computes)
    fi
  fi
  # Corral on the cluster, its origin the scriptable HTTP server: one process, then the fleet.
  origin_port=$(free_port)
  /usr/bin/python3 "$CORRAL_ROOT/tests/origin_server.py" "$origin_port" >"$workdir/origin.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 100); do curl -sf "http://$host:$origin_port/_stats" >/dev/null 2>&1 && break; sleep 0.1; done
  corral_stampede corral-one 1 "" "$owner"
  corral_stampede corral-fleet "$st_fleet" ", shared: true" "$owner"
}

origin_port=""
# origin_reset: counters to zero, and the hot path answers a 32-byte value after the fetch time.
origin_reset() {
  curl -sf -X POST --data "{\"reset\": true, \"default\": {\"body\": \"$(printf 'v%.0s' $(seq 32))\", \"delay_ms\": $st_fetch_ms}}" \
    "http://$host:$origin_port/_control" >/dev/null
}

# corral_stampede NAME COUNT EXTRA_POLICY OWNER: COUNT Corrals (stopped afterwards) with the http
# policy plus EXTRA_POLICY; origin fetches counted at the origin.
corral_stampede() {
  local name=$1 count=$2 extra=$3 owner=$4 ports="" i started=()
  local policy="  - {prefix: \"hot:\", commands: [GET], ttl: ${st_ttl_ms}ms, jitter: 0, beta: 1.0, grace: 10s$extra, origin: {http: \"http://$host:$origin_port/features/{suffix}\", timeout: 2s}}"
  redis-cli -h "$host" -p "$owner" DEL "$hot_key" >/dev/null
  origin_reset
  for i in $(seq "$count"); do
    if ! start_corral "$name-$i" "$policy"; then
      skipped["stampede $name"]=${skipped[$name-$i]}
      unset "skipped[$name-$i]"
      break
    fi
    ports+="${ports:+,}$started_port"
    started+=("$started_pid")
  done
  if [ -z "${skipped["stampede $name"]:-}" ]; then
    # Only a Corral that routes by slot answers the hot key right: check before measuring.
    local got
    got=$(redis-cli -h "$host" -p "${ports%%,*}" GET "$hot_key" 2>&1)
    if [ "${#got}" -ne 32 ]; then
      skipped["stampede $name"]="GET $hot_key answered '$got'"
    else
      origin_reset
      if stampede_run "$name" "$ports"; then
        st_fetches[$name]=$(curl -sf "http://$host:$origin_port/_stats" |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"].get("/features/key", 0))')
      fi
    fi
  fi
  local pid
  for pid in "${started[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
  done
}
[ "$stampede" -eq 0 ] || run_stampede

# --- report ---------------------------------------------------------------------------------------
report() {
  echo "# Corral on Redis Cluster: redis-benchmark, $runs runs each (median)"
  echo
  echo "- machine: $(nproc) cpus, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); $(uname -sr)"
  echo "- cluster: 3 primaries, $replicas replica(s) each, redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), on this machine"
  echo "- corral: $corral_bin (threads: $threads); predixy: ${predixy_bin:-not run}"
  echo "- load: $clients clients, -r $keyspace; P1 $requests_p1 requests, P16 $requests_p16"
  echo "- direct is \`redis-benchmark --cluster\`: each client talks to one node, keys tagged to that node's"
  echo "  slots; the proxies get plain random keys over all slots."
  echo
  echo "| test | pipeline | direct rps | corral rps | corral/direct | predixy rps | predixy/direct | direct p50 | corral p50 | predixy p50 | direct p99 | corral p99 | predixy p99 |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  local test pipeline d c p
  for test in get set; do
    for pipeline in 1 16; do
      read -r -a d <<<"$(median direct "$test" "$pipeline")"
      read -r -a c <<<"$(median corral "$test" "$pipeline")"
      read -r -a p <<<"$(median predixy "$test" "$pipeline")"
      echo "| ${test^^} | $pipeline | $(rps_fmt "${d[0]}") | $(rps_fmt "${c[0]}") | $(ratio "${c[0]}" "${d[0]}") |" \
        "$(rps_fmt "${p[0]}") | $(ratio "${p[0]}" "${d[0]}") | ${d[1]} | ${c[1]} | ${p[1]} | ${d[2]} | ${c[2]} | ${p[2]} |"
    done
  done
  echo
  local peer=predixy
  [ -n "${port_of[predixy]:-}" ] || peer=direct
  echo "## What each request costs the process(es) serving it (medians; ratios to $peer)"
  echo
  echo "CPU: utime+stime over the run / requests, the median of $runs runs (perf off); direct: the"
  echo "three primaries together. Syscalls: perf stat -e 'syscalls:sys_enter_*' -p PID(s) over"
  echo "$syscall_runs more run(s) (perf on: slower)."
  echo
  cost_table "" "$peer" "$targets" "get set"
  echo
  if [ "$stampede" -eq 1 ]; then
    echo "## Stampede: $st_clients clients on one hot key, TTL ${st_ttl_ms} ms, fetch ${st_fetch_ms} ms, ${st_duration} s"
    echo
    echo "| setup | origin fetches | per TTL window | rps | errors | p50 ms | p99 ms | expiry p99 ms | plain p99 ms |"
    echo "|---|---|---|---|---|---|---|---|---|"
    local name windows
    windows=$(awk -v d="$st_duration" -v t="$st_ttl_ms" 'BEGIN { printf "%.2f", d * 1000 / t }')
    for name in aside-direct aside-predixy corral-one corral-fleet; do
      [ -n "${st_out[$name]:-}" ] || continue
      echo "| $name | ${st_fetches[$name]:-n/a} | $(awk -v f="${st_fetches[$name]:-0}" -v w="$windows" 'BEGIN { printf "%.2f", f / w }') |" \
        "$(st_field "$name" rps) | $(st_field "$name" errors) | $(st_field "$name" all_p50_ms) | $(st_field "$name" all_p99_ms) |" \
        "$(st_field "$name" expiry_p99_ms) | $(st_field "$name" hit_p99_ms) |"
    done
    echo
    echo "TTL windows in the run: $windows (duration / ttl). aside: fetches = the clients' computes."
    for name in "${!st_out[@]}"; do
      local problem
      problem=$(st_field "$name" watch_problem)
      [ -z "$problem" ] || echo "$name: no expiry windows (the key's expiry could not be polled: $problem)"
    done
    echo
  fi
  if [ ${#skipped[@]} -gt 0 ]; then
    echo "Not measured:"
    local k
    for k in "${!skipped[@]}"; do echo "- $k: ${skipped[$k]}"; done
    echo
  fi
  echo "Reproduce: \`scripts/bench-cluster.sh\` (PREDIXY_BIN=... for the predixy column). Commands:"
  local k
  for k in "${!commands_used[@]}"; do echo "- $k: \`${commands_used[$k]}\`"; done
  [ "$failures" -eq 0 ] || echo "- $failures redis-benchmark run(s) failed (see stderr)"
}

report_text=$(report)
echo "$report_text"
[ -z "$out_file" ] || echo "$report_text" >"$out_file"
