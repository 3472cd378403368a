#!/usr/bin/env bash
# Passthrough benchmark: redis-benchmark GET/SET against redis-server, twemproxy, Corral and predixy
# (PREDIXY_BIN) side by side, plus an "I/O only" row (Corral's session layer answering from memory: what
# the I/O layer alone costs) and the memory an idle client connection costs. For every target, the CPU
# time its process spent per request (/proc/PID/stat) and, in one more run with perf attached, its
# system calls per request (perf stat -e 'syscalls:sys_enter_*', when perf works).
# Usage: scripts/bench.sh [--out FILE | FILE]   (FILE: also write the markdown report there)
# Env: CORRAL_BIN (use this binary, skip the build), CORRAL_THREADS (1; predixy gets as many), BENCH_RUNS (3),
#      BENCH_REQUESTS (200000 at pipeline 16), BENCH_REQUESTS_P1 (BENCH_REQUESTS/2), BENCH_CLIENTS (50),
#      BENCH_KEYSPACE (100000), BENCH_VALUE_SIZE (100), BENCH_CACHE=1 (also the "cache hits" section:
#      CPU per GET and p99 against redis-server direct, the issue-18 targets),
#      PREDIXY_BIN (a predixy binary: measured as "predixy" in front of the same redis-server),
#      BENCH_TARGETS (the passthrough targets, default all: redis twemproxy corral predixy io_only
#      corral_tls io_only_tls redis_tls corral_resp3 redis_resp3), BENCH_SYSCALL_RUNS (1: perf runs per cell),
#      BENCH_IDLE_CLIENTS (10000: connections held open for the memory-per-client figure; 0: none),
#      BASELINE_BIN (another corral binary, e.g. an older build: measured in the same run as "baseline"),
#      BASELINE_EXTRA (YAML lines added to the baseline's config, e.g. "hot_keys: { detect: false }")
#
# The targets in SPEC.md are ratios measured on one machine in one run, and that is what this reports.
# Absolute numbers mean little here: redis-benchmark pins a core, and on a 2-core box the client,
# redis-server and the proxy under test all share the CPUs. Runs of the three targets are interleaved
# (redis, twemproxy, corral, then again) so drifting background load hits them alike, each measurement
# is repeated BENCH_RUNS times, and the run with the median rps is reported (with its p50/p99).
# Progress goes to stderr; the report (markdown) to stdout.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

out_file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "--out needs a FILE" >&2; exit 2; }; out_file=$2; shift 2 ;;
    --out=*) out_file=${1#--out=}; shift ;;
    -h|--help) sed -n '2,6s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "unknown option: $1" >&2; exit 2 ;;
    *) out_file=$1; shift ;;
  esac
done
[ -z "$out_file" ] || out_file=$(realpath -m "$out_file")

threads=${CORRAL_THREADS:-1}
runs=${BENCH_RUNS:-3}
requests_p16=${BENCH_REQUESTS:-200000}
requests_p1=${BENCH_REQUESTS_P1:-$((requests_p16 / 2))}
clients=${BENCH_CLIENTS:-50}
keyspace=${BENCH_KEYSPACE:-100000}
value_size=${BENCH_VALUE_SIZE:-100}
syscall_runs=${BENCH_SYSCALL_RUNS:-1}
cache_section=${BENCH_CACHE:-0}
idle_clients=${BENCH_IDLE_CLIENTS:-10000}
host=127.0.0.1

if [ -n "${CORRAL_BIN:-}" ]; then
  corral_bin=$(realpath "$CORRAL_BIN")
  install_packages nutcracker
else
  install_packages nutcracker
  echo "== release build" >&2
  build_preset release >&2
  corral_bin=$CORRAL_ROOT/build/release/src/corral
fi
[ -x "$corral_bin" ] || { echo "no corral binary at $corral_bin" >&2; exit 1; }
predixy_bin=""
if [ -n "${PREDIXY_BIN:-}" ]; then
  predixy_bin=$(realpath "$PREDIXY_BIN")
  [ -x "$predixy_bin" ] || { echo "PREDIXY_BIN=$PREDIXY_BIN is not an executable" >&2; exit 2; }
fi
io_only_bin=${IO_ONLY_BIN:-$CORRAL_ROOT/build/release/tests/bench/io_only_server}
[ -n "${IO_ONLY_BIN:-}" ] || (cd "$CORRAL_ROOT" && cmake --build --preset release --target io_only_server >&2)

# --- processes: everything started here is killed on the way out, however the script ends ---------
# shellcheck source=scripts/lib/processes.sh
source "$CORRAL_ROOT/scripts/lib/processes.sh"
track_processes corral-bench
# shellcheck source=scripts/lib/proc_cost.sh
source "$CORRAL_ROOT/scripts/lib/proc_cost.sh"

# wait_ready PORT PID NAME: until a GET through PORT answers (the same probe works for all three).
wait_ready() {
  local port=$1 pid=$2 name=$3
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { echo "$name exited at start; its log:" >&2; tail -20 "$workdir/$name.log" >&2; exit 1; }
    redis-cli -h "$host" -p "$port" GET corral:bench:probe >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$name did not answer on port $port" >&2
  exit 1
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo "?"; }

# redis-server also listens for TLS, so TLS through Corral has a peer: TLS to redis-server itself.
start_redis() {
  redis_port=$(free_port)
  redis_tls_port=$(free_port)
  redis-server --bind "$host" --port "$redis_port" --save '' --appendonly no --dir "$workdir" \
    --tls-port "$redis_tls_port" --tls-cert-file "$workdir/server.pem" \
    --tls-key-file "$workdir/server.key" --tls-ca-cert-file "$workdir/ca.pem" --tls-auth-clients no \
    >"$workdir/redis.log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  wait_ready "$redis_port" "$redis_pid" redis
}

start_twemproxy() {
  twem_port=$(free_port)
  local stats_port
  stats_port=$(free_port)
  cat >"$workdir/nutcracker.yml" <<EOF
bench:
  listen: $host:$twem_port
  redis: true
  hash: fnv1a_64
  distribution: ketama
  auto_eject_hosts: false
  server_connections: 1
  servers:
   - $host:$redis_port:1
EOF
  nutcracker -c "$workdir/nutcracker.yml" -s "$stats_port" -a "$host" -o "$workdir/nutcracker.log" \
    -p "$workdir/nutcracker.pid" &
  twem_pid=$!
  pids+=("$twem_pid")
  wait_ready "$twem_port" "$twem_pid" nutcracker
}

# predixy in front of the same redis-server, with as many worker threads as Corral.
start_predixy() {
  predixy_port=$(free_port)
  local workers=$threads
  [ "$workers" != auto ] || workers=$(nproc)
  cat >"$workdir/predixy.conf" <<EOF
Name CorralBench
Bind $host:$predixy_port
WorkerThreads $workers
ClientTimeout 300
LogVerbSample 0
LogDebugSample 0
LogInfoSample 0
Authority {
  Auth {
    Mode write
  }
}
StandaloneServerPool {
  RefreshMethod fixed
  Hash crc16
  Distribution modula
  Group shard001 {
    + $host:$redis_port
  }
}
EOF
  "$predixy_bin" "$workdir/predixy.conf" >"$workdir/predixy.log" 2>&1 &
  predixy_pid=$!
  pids+=("$predixy_pid")
  wait_ready "$predixy_port" "$predixy_pid" predixy
}

# start_corral NAME [extra YAML lines] [binary]: sets corral_port and corral_pid.
start_corral() {
  local name=$1 extra=${2:-} bin=${3:-$corral_bin}
  corral_port=$(free_port)
  corral_tls_port=$(free_port)
  {
    echo "listen: $host:$corral_port"
    # An older BASELINE_BIN may not know tls:.
    [ "$bin" != "$corral_bin" ] ||
      echo "tls: { listen: $host:$corral_tls_port, cert: $workdir/server.pem, key: $workdir/server.key }"
    echo "threads: $threads"
    echo "log_level: warn"
    echo "client: { max_clients: 20000 }"
    echo "upstream: { address: redis://$host:$redis_port }"
    [ -z "$extra" ] || echo "$extra"
  } >"$workdir/$name.yml"
  "$bin" -c "$workdir/$name.yml" >"$workdir/$name.log" 2>&1 &
  corral_pid=$!
  pids+=("$corral_pid")
  wait_ready "$corral_port" "$corral_pid" "$name"
}

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

# Every key the benchmark can touch exists before the first GET (redis-benchmark's key:%012d, with a
# value as long as redis-benchmark -d writes).
populate() {
  awk -v n="$keyspace" -v size="$value_size" 'BEGIN { v = sprintf("%*s", size, ""); gsub(/ /, "x", v)
    for (i = 0; i < n; i++) {
      k = sprintf("key:%012d", i); printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, size, v } }' |
    redis-cli -h "$host" -p "$redis_port" --pipe >"$workdir/populate.log" 2>&1 ||
    { cat "$workdir/populate.log" >&2; exit 1; }
  grep -q "errors: 0, replies: $keyspace" "$workdir/populate.log" ||
    { echo "populating redis failed:" >&2; cat "$workdir/populate.log" >&2; exit 1; }
}

# A target answering errors fast would look fast to redis-benchmark, which counts any reply: check it.
# (redis-benchmark's SET writes -d bytes, hence the length test on the benchmark key.)
check_target() {
  local name=$1 port=$2 got
  got=$(redis-cli -h "$host" -p "$port" SET corral:bench:check v1 2>&1)
  [ "$got" = "OK" ] || { echo "$name: SET gave '$got', not 'OK'" >&2; exit 1; }
  got=$(redis-cli -h "$host" -p "$port" GET corral:bench:check 2>&1)
  [ "$got" = "v1" ] || { echo "$name: GET corral:bench:check gave '$got', not 'v1'" >&2; exit 1; }
  got=$(redis-cli -h "$host" -p "$port" GET key:000000000001 2>&1)
  [ ${#got} -eq "$value_size" ] ||
    { echo "$name: GET key:000000000001 gave '$got', not a $value_size-byte value" >&2; exit 1; }
}

redis_commands() { redis-cli -h "$host" -p "$redis_port" INFO stats | awk -F: '/^total_commands_processed:/ {print $2+0}'; }

# A CA and a server certificate for 127.0.0.1, for the TLS rows (redis-benchmark --tls).
make_certs() {
  (cd "$workdir" &&
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca -keyout ca.key -out ca.pem &&
    openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.pem) >"$workdir/openssl.log" 2>&1 ||
    { cat "$workdir/openssl.log" >&2; exit 1; }
}

# The session layer alone: Corral's listener and sessions with a handler that answers from memory.
start_io_only() {
  io_port=$(free_port)
  io_tls_port=$(free_port)
  local io_threads=$threads
  [ "$io_threads" != auto ] || io_threads=$(nproc)
  "$io_only_bin" "$io_port" "$io_threads" "$io_tls_port" "$workdir/server.pem" "$workdir/server.key" \
    >"$workdir/io_only.log" 2>&1 &
  io_pid=$!
  pids+=("$io_pid")
  for _ in $(seq 100); do
    [ "$(redis-cli -h "$host" -p "$io_port" PING 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  echo "io_only_server did not answer on port $io_port" >&2
  exit 1
}

# --- measuring ------------------------------------------------------------------------------------
declare -A port_of=()
declare -A pid_of=()  # the process whose CPU time and syscalls a target's requests cost
declare -A commands_used=()
failures=0
max_load=0

# measure LABEL TARGET TEST PIPELINE [syscalls]: one redis-benchmark run; appends "rps p50 p99" to its
# results file and the process's CPU us per request to its cost file; with `syscalls`, a run under
# perf that records only the syscalls per request (sys file).
measure() {
  local label=$1 target=$2 test=$3 pipeline=$4 syscalls=${5:-}
  local port=${port_of[$target]} n=$requests_p1 pid=${pid_of[$target]:-}
  [ "$pipeline" -eq 1 ] || n=$requests_p16
  # redis-benchmark retries a refused connection forever: a target that stops answering must fail.
  local cmd=(timeout 300 redis-benchmark -h "$host" -p "$port" -c "$clients" -n "$n" -r "$keyspace"
    -P "$pipeline" -d "$value_size" -t "$test" --csv)
  case "$target" in
    *_tls) cmd+=(--tls --cacert "$workdir/ca.pem") ;;
    *_resp3) cmd+=(-3) ;;
  esac
  commands_used["$target $test P$pipeline"]="${cmd[*]}"
  local load before after bench_pid
  load=$(cut -d' ' -f1 /proc/loadavg)
  max_load=$(awk -v a="$load" -v b="$max_load" 'BEGIN { print (a > b) ? a : b }')
  before=$(redis_commands)
  [ -z "$pid" ] || cost_begin "$pid" "$syscalls"
  # In the background and waited for, so a TERM to this script reaches the trap without delay.
  "${cmd[@]}" >"$workdir/out.csv" 2>"$workdir/out.err" &
  bench_pid=$!
  pids+=("$bench_pid")
  local status=0
  wait "$bench_pid" || status=$?
  forget_pid "$bench_pid"
  local cost="n/a n/a n/a"
  if [ -n "$pid" ]; then
    cost_end "$pid" "$n"
    cost=$cost_result
  fi
  if [ "$status" -ne 0 ]; then
    echo "   $target $test P$pipeline: redis-benchmark failed: $(tail -3 "$workdir/out.err")" >&2
    failures=$((failures + 1))
    return 0
  fi
  if [ -n "$syscalls" ]; then
    echo "${cost#* }" >>"$workdir/sys.$label.$target.$test.$pipeline"
    echo "   $target $test P$pipeline: syscalls/request, most frequent = ${cost#* }" >&2
    return 0
  fi
  after=$(redis_commands)
  local line
  line=$(awk -F'"' -v t="${test^^}" '$2 == t { print $4, $10, $14 }' "$workdir/out.csv" | tail -1)
  if [ -z "$line" ]; then
    echo "   $target $test P$pipeline: no result in: $(cat "$workdir/out.csv" "$workdir/out.err")" >&2
    failures=$((failures + 1))
    return 0
  fi
  # Passthrough targets must have sent every request on to redis (cache hits may not).
  if [ "$label" = pass ] && [ "$target" != io_only ] && [ $((after - before)) -lt "$n" ]; then
    echo "   WARNING: $target $test P$pipeline: redis saw $((after - before)) commands for $n requests" >&2
  fi
  echo "$line" >>"$workdir/res.$label.$target.$test.$pipeline"
  echo "${cost%% *}" >>"$workdir/cost.$label.$target.$test.$pipeline"
  echo "$cost_kernel_result" >>"$workdir/kern.$label.$target.$test.$pipeline"
  echo "   $target $test P$pipeline: rps p50 p99 = $line, CPU us/request ${cost%% *} (kernel $cost_kernel_result)   (load $load)" >&2
}

# median LABEL TARGET TEST PIPELINE -> "rps p50 p99" of the run with the median rps, or "n/a n/a n/a".
median() {
  local file=$workdir/res.$1.$2.$3.$4
  [ -s "$file" ] || { echo "n/a n/a n/a"; return; }
  local count
  count=$(wc -l <"$file")
  sort -n -k1,1 "$file" | sed -n "$((count / 2 + 1))p"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
rps_fmt() { awk -v a="$1" 'BEGIN { if (a == "n/a") print a; else printf "%.0f", a }'; }

# run_matrix LABEL "TARGETS" "TESTS": every test, pipeline and run, the targets interleaved.
run_matrix() {
  local label=$1 targets=$2 tests=$3 test pipeline run target
  for test in $tests; do
    for pipeline in 1 16; do
      for run in $(seq "$runs"); do
        echo "== $label $test P$pipeline run $run/$runs" >&2
        for target in $targets; do measure "$label" "$target" "$test" "$pipeline"; done
      done
      cost_perf_available || continue
      for run in $(seq "$syscall_runs"); do
        echo "== $label $test P$pipeline syscalls run $run/$syscall_runs (perf attached)" >&2
        for target in $targets; do measure "$label" "$target" "$test" "$pipeline" syscalls; done
      done
    done
  done
}

# table LABEL PROXY_TARGET PROXY_TITLE "TESTS": the markdown table of the medians.
table() {
  local label=$1 proxy=$2 title=$3 tests=$4 test pipeline
  echo "| test | pipeline | redis rps | twemproxy rps | $title rps | $title/twemproxy | $title/redis |" \
    "redis p50 | twemproxy p50 | $title p50 | redis p99 | twemproxy p99 | $title p99 |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for test in $tests; do
    for pipeline in 1 16; do
      local r t c
      read -r -a r <<<"$(median "$label" redis "$test" "$pipeline")"
      read -r -a t <<<"$(median "$label" twemproxy "$test" "$pipeline")"
      read -r -a c <<<"$(median "$label" "$proxy" "$test" "$pipeline")"
      echo "| ${test^^} | $pipeline | $(rps_fmt "${r[0]}") | $(rps_fmt "${t[0]}") | $(rps_fmt "${c[0]}") |" \
        "$(ratio "${c[0]}" "${t[0]}") | $(ratio "${c[0]}" "${r[0]}") |" \
        "${r[1]} | ${t[1]} | ${c[1]} | ${r[2]} | ${t[2]} | ${c[2]} |"
    done
  done
}

# p16_ratios TITLE TARGET BASE [GOAL]: one line with TARGET/BASE median rps, GET and SET at P16.
p16_ratios() {
  local title=$1 target=$2 base=$3 goal=${4:-} test ratios=()
  for test in get set; do
    ratios+=("$(ratio "$(median pass "$target" "$test" 16 | cut -d' ' -f1)" \
      "$(median pass "$base" "$test" 16 | cut -d' ' -f1)")")
  done
  echo "- $title rps: GET P16 ${ratios[0]}, SET P16 ${ratios[1]}${goal:+ (target $goal)}"
}

# verdict VALUE OP LIMIT -> PASS or MISS (n/a is a MISS).
verdict() {
  awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
    if (v == "n/a") { print "MISS (no data)"; exit }
    ok = (op == ">=") ? (v + 0 >= l + 0) : (v + 0 <= l + 0)
    print ok ? "PASS" : "MISS" }'
}

summary() {
  local g16 s16 g1 s1
  g16=$(ratio "$(median pass corral get 16 | cut -d' ' -f1)" "$(median pass twemproxy get 16 | cut -d' ' -f1)")
  s16=$(ratio "$(median pass corral set 16 | cut -d' ' -f1)" "$(median pass twemproxy set 16 | cut -d' ' -f1)")
  g1=$(ratio "$(median pass corral get 1 | cut -d' ' -f2)" "$(median pass redis get 1 | cut -d' ' -f2)")
  s1=$(ratio "$(median pass corral set 1 | cut -d' ' -f2)" "$(median pass redis set 1 | cut -d' ' -f2)")
  echo "| target | measured | verdict |"
  echo "|---|---|---|"
  echo "| GET P16 rps corral/twemproxy >= 2.0 | $g16 | $(verdict "$g16" '>=' 2.0) |"
  echo "| SET P16 rps corral/twemproxy >= 2.0 | $s16 | $(verdict "$s16" '>=' 2.0) |"
  echo "| GET P1 p50 corral/redis <= 1.2 | $g1 | $(verdict "$g1" '<=' 1.2) |"
  echo "| SET P1 p50 corral/redis <= 1.2 | $s1 | $(verdict "$s1" '<=' 1.2) |"
}

# --- the run --------------------------------------------------------------------------------------
echo "== starting redis-server, nutcracker, corral in $workdir" >&2
make_certs
start_redis
populate
start_twemproxy
pass_targets=${BENCH_TARGETS:-redis twemproxy corral predixy io_only corral_tls io_only_tls redis_tls corral_resp3 redis_resp3}
if [ -n "$predixy_bin" ]; then
  start_predixy
  port_of[predixy]=$predixy_port
  pid_of[predixy]=$predixy_pid
  check_target predixy "$predixy_port"
else
  pass_targets=$(echo "$pass_targets" | sed 's/\bpredixy\b//')
fi
if [ -n "${BASELINE_BIN:-}" ]; then
  start_corral baseline "${BASELINE_EXTRA:-}" "$(realpath "$BASELINE_BIN")"
  baseline_pid=$corral_pid
  port_of[baseline]=$corral_port
  pid_of[baseline]=$baseline_pid
  check_target baseline "$corral_port"
  pass_targets="$pass_targets baseline"
fi
start_corral corral
start_io_only
sleep 0.5
corral_rss_idle=$(rss_kb "$corral_pid")
port_of+=([redis]=$redis_port [twemproxy]=$twem_port [corral]=$corral_port [io_only]=$io_port
  [corral_tls]=$corral_tls_port [io_only_tls]=$io_tls_port [redis_tls]=$redis_tls_port
  [corral_resp3]=$corral_port
  [redis_resp3]=$redis_port)
pid_of+=([redis]=$redis_pid [twemproxy]=$twem_pid [corral]=$corral_pid [io_only]=$io_pid
  [corral_tls]=$corral_pid [io_only_tls]=$io_pid [redis_tls]=$redis_pid [corral_resp3]=$corral_pid
  [redis_resp3]=$redis_pid)
for target in redis twemproxy corral; do check_target "$target" "${port_of[$target]}"; done
load_start=$(cat /proc/loadavg)

run_matrix pass "$pass_targets" "get set"
stop_pid "$io_pid"
kill -0 "$corral_pid" 2>/dev/null || { echo "corral died during the run:" >&2; tail -20 "$workdir/corral.log" >&2; failures=$((failures + 1)); }
corral_rss_after=$(rss_kb "$corral_pid")
load_end=$(cat /proc/loadavg)
# Memory per idle client: RSS with N connections that each did one GET, minus RSS before, / N.
idle_line="not measured (BENCH_IDLE_CLIENTS=0)"
baseline_idle_line=""
if [ "$idle_clients" -gt 0 ]; then
  echo "== $idle_clients idle clients" >&2
  idle_line=$(python3 "$CORRAL_ROOT/tests/bench/idle_clients.py" "$host" "$corral_port" "$corral_pid" \
    "$idle_clients" 2>&1) || { echo "idle client measurement failed: $idle_line" >&2; failures=$((failures + 1)); }
  if [ -n "${BASELINE_BIN:-}" ]; then
    baseline_idle_line=$(python3 "$CORRAL_ROOT/tests/bench/idle_clients.py" "$host" "${port_of[baseline]}" \
      "$baseline_pid" "$idle_clients" 2>&1) || baseline_idle_line="failed: $baseline_idle_line"
  fi
fi
[ -z "${BASELINE_BIN:-}" ] || stop_pid "$baseline_pid"

if [ "$cache_section" = 1 ]; then
  stop_pid "$corral_pid"
  start_corral corral-cache 'policies: [{prefix: "key:", origin: redis, ttl: 60s}]'
  port_of[corral_cache]=$corral_port
  pid_of[corral_cache]=$corral_pid
  check_target corral-cache "$corral_port"
  # Warm the cache: 3x the keyspace in random GETs leaves ~5% of keys cold (e^-3).
  echo "== warming corral-cache" >&2
  redis-benchmark -h "$host" -p "$corral_port" -c "$clients" -n $((keyspace * 3)) -r "$keyspace" -P 16 \
    -t get -q >/dev/null 2>&1 || true
  cache_rss_warm=$(rss_kb "$corral_pid")
  cache_targets="redis twemproxy corral_cache"
  if [ -n "${BASELINE_BIN:-}" ]; then
    cache_pid=$corral_pid
    start_corral baseline-cache 'policies: [{prefix: "key:", origin: redis, ttl: 60s}]' \
      "$(realpath "$BASELINE_BIN")"
    port_of[baseline_cache]=$corral_port
    pid_of[baseline_cache]=$corral_pid
    redis-benchmark -h "$host" -p "$corral_port" -c "$clients" -n $((keyspace * 3)) -r "$keyspace" \
      -P 16 -t get -q >/dev/null 2>&1 || true
    cache_targets="$cache_targets baseline_cache"
    corral_pid=$cache_pid
  fi
  run_matrix cache "$cache_targets" get
  cache_rss_after=$(rss_kb "$corral_pid")
  load_end=$(cat /proc/loadavg)
fi

report() {
  echo "# Corral passthrough benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "## Machine"
  echo "- cpus: $(nproc); model: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "- kernel: $(uname -srm)"
  echo "- loadavg at start: $load_start; at end: $load_end; highest 1-min before a measurement: $max_load"
  echo "- redis-server: $(redis-server --version)"
  echo "- nutcracker: $(nutcracker --version 2>&1 | head -1)"
  echo "- redis-benchmark: $(redis-benchmark --version)"
  echo "- corral: $("$corral_bin" --version) ($corral_bin, threads: $threads)"
  echo
  echo "Same machine, same run: client, redis-server and proxy share $(nproc) cores, so read the ratios."
  echo "Each cell is the median-rps run of $runs (its own p50/p99, ms); $clients clients, keyspace $keyspace,"
  echo "$requests_p1 requests at pipeline 1, $requests_p16 at pipeline 16."
  echo
  echo "## Passthrough"
  table pass corral corral "get set"
  echo
  local peer=predixy
  [ -n "$predixy_bin" ] || peer=twemproxy
  echo "## What each request costs the process serving it (medians; ratios to $peer)"
  echo
  echo "CPU: utime+stime of the process over the run / requests, the median of $runs runs (perf off)."
  echo "Syscalls: perf stat -e 'syscalls:sys_enter_*' -p PID over $syscall_runs more run(s) (perf on: slower)."
  echo "redis is redis-server itself (the cost of the request with no proxy); io_only is Corral's session"
  echo "layer answering from memory (one read and one write per client request, no upstream: a proxy's floor)."
  echo
  cost_table pass. "$peer" "$(echo "$pass_targets" | tr ' ' '\n' | grep -E '^(redis|twemproxy|predixy|corral|baseline|io_only)$' | tr '\n' ' ')" "get set"
  echo
  echo "## I/O only (the session layer answering from memory, no upstream: tests/bench/io_only_server)"
  table pass io_only io-only "get set"
  echo
  echo "## TLS (redis-benchmark --tls; the same Corral's TLS listener, and the I/O layer's)"
  table pass corral_tls corral-tls "get set"
  echo
  p16_ratios "corral TLS/plain" corral_tls corral ">= 0.7"
  p16_ratios "I/O only TLS/plain" io_only_tls io_only
  p16_ratios "redis-server TLS/plain (the peer)" redis_tls redis
  echo
  echo "## RESP3 (redis-benchmark -3: HELLO 3, then the same load)"
  table pass corral_resp3 corral-resp3 "get set"
  echo
  p16_ratios "corral RESP3/RESP2" corral_resp3 corral ">= 0.95"
  p16_ratios "redis-server RESP3/RESP2" redis_resp3 redis
  echo
  if [ -n "${BASELINE_BIN:-}" ]; then
    echo "## Baseline (BASELINE_BIN=$BASELINE_BIN, same run)"
    table pass baseline baseline "get set"
    echo
  fi
  echo "## Targets (SPEC.md)"
  summary
  echo
  echo "## Memory (corral VmRSS)"
  echo "- idle, after start: ${corral_rss_idle} kB (target: under 30 MB)"
  echo "- after the passthrough run: ${corral_rss_after} kB"
  echo "- per idle client (tests/bench/idle_clients.py, each did one GET): $idle_line"
  [ -z "$baseline_idle_line" ] || echo "- per idle client, baseline: $baseline_idle_line"
  if [ "$cache_section" = 1 ]; then
    echo
    echo "## Cache hits (policy key: ttl 60s; GET only)"
    table cache corral_cache corral "get"
    echo
    cost_table cache. redis "redis corral_cache${BASELINE_BIN:+ baseline_cache}" get
    local c16 r16
    c16=$(median cache corral_cache get 16 | cut -d' ' -f1)
    r16=$(median cache redis get 16 | cut -d' ' -f1)
    echo
    echo "- GET P16 cached corral/redis >= 1.0: $(ratio "$c16" "$r16") $(verdict "$(ratio "$c16" "$r16")" '>=' 1.0)"
    # Issue 18's cache-hit targets: medians of the runs, CPU of each process (redis-server's own
    # for the direct row), p99 as redis-benchmark reports it.
    local pipeline cpu_c cpu_r p99_c p99_r
    for pipeline in 1 16; do
      cpu_c=$(cost_median "$workdir/cost.cache.corral_cache.get.$pipeline")
      cpu_r=$(cost_median "$workdir/cost.cache.redis.get.$pipeline")
      p99_c=$(cost_median "$workdir/res.cache.corral_cache.get.$pipeline" 3)
      p99_r=$(cost_median "$workdir/res.cache.redis.get.$pipeline" 3)
      echo "- GET P$pipeline cached, CPU us per GET corral/redis-server <= 1.0: $cpu_c / $cpu_r =" \
        "$(ratio "$cpu_c" "$cpu_r") $(verdict "$(ratio "$cpu_c" "$cpu_r")" '<=' 1.0)"
      echo "- GET P$pipeline cached, p99 ms corral/redis-server <= 1.1 (median of $runs runs):" \
        "$p99_c / $p99_r = $(ratio "$p99_c" "$p99_r") $(verdict "$(ratio "$p99_c" "$p99_r")" '<=' 1.1)"
    done
    echo "- corral-cache VmRSS: ${cache_rss_warm} kB after warming, ${cache_rss_after} kB after the run"
    if [ -n "${BASELINE_BIN:-}" ]; then
      echo
      echo "### Cache hits, baseline (same run)"
      table cache baseline_cache baseline "get"
    fi
  fi
  echo
  echo "## Reproduce"
  echo "Ports are those of this run. redis-server: \`redis-server --bind $host --port $redis_port --save '' --appendonly no\`;"
  echo "keys key:000000000000..$(printf '%012d' $((keyspace - 1))) set to xxx first. nutcracker: \`nutcracker -c nutcracker.yml -s STATS_PORT -a $host\`."
  echo
  echo '```'
  echo "# nutcracker.yml"
  cat "$workdir/nutcracker.yml"
  echo "# corral.yml"
  cat "$workdir/corral.yml"
  [ "$cache_section" != 1 ] || { echo "# corral-cache.yml"; cat "$workdir/corral-cache.yml"; }
  echo "# redis-benchmark, each run $runs times"
  local key
  for key in "${!commands_used[@]}"; do echo "${commands_used[$key]}"; done | sort
  echo '```'
}

report >"$workdir/report.md"
cat "$workdir/report.md"
[ -z "$out_file" ] || cp "$workdir/report.md" "$out_file"
if [ "$failures" -gt 0 ]; then
  echo "== $failures measurement(s) failed; see above" >&2
  exit 1
fi
