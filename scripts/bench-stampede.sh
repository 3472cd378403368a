#!/usr/bin/env bash
# Stampede benchmark: 1,000 clients GET one hot key whose TTL expires while an origin fetch takes 200 ms.
# Usage: scripts/bench-stampede.sh [--out-dir DIR] [--plot FILE] [--out FILE]
#   --out-dir DIR  per-request CSVs, configs, logs, report.md and the plot (default: a new temp dir, kept)
#   --plot FILE    the PNG of latency over time (default: DIR/stampede.png)
#   --out FILE     also copy the markdown report there
# Env: CORRAL_BIN, STAMPEDE_LOAD_BIN (use these binaries, skip the build), CORRAL_THREADS (auto),
#      STAMPEDE_CLIENTS (1000), STAMPEDE_DURATION (12 s), STAMPEDE_THINK_MS (5), STAMPEDE_TTL_MS (2000),
#      STAMPEDE_FETCH_MS (200), STAMPEDE_SETUPS ("aside coalesce grace")
#
# Three setups, the same load and duration, one after the other on one machine:
#   aside     the clients do cache-aside themselves against redis-server: GET; on nil "compute" for the
#             fetch time, then SET key value PX ttl. Origin fetches = computes (counted by the generator).
#   coalesce  Corral, policy hot: with ttl, beta 0, grace 0 and fetch_delay = the fetch time: coalescing
#             only.
#   grace     Corral, same policy with beta 1.0 and grace 10s: stale-while-revalidate plus XFetch.
# The generator (tests/bench/stampede_load.cpp) polls the key's expiry (PEXPIRETIME on Redis, CORRAL.INFO
# through Corral) to find the expiry instants E; a request sent in [E - 50 ms, E + fetch + 100 ms] is
# "during expiry", any other is a plain hit. Through Corral an expiry is one TTL cycle of the cached value
# (a value refreshed early by XFetch still marks its nominal expiry), and its origin fetches are the
# policy's CORRAL.STATS origin_requests counted between the first sightings of the old and the new value;
# corral_origin_requests_total from /metrics (after minus before, minus the cold fill) is the cross-check.
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
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
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
setups=${STAMPEDE_SETUPS:-aside coalesce grace}
key=hot:key
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

# policy_yaml SETUP: the one policy of a Corral setup.
policy_yaml() {
  local common="prefix: \"hot:\", origin: redis, commands: [GET], ttl: ${ttl_ms}ms, jitter: 0"
  case "$1" in
    coalesce) echo "  - {$common, beta: 0, grace: 0s, fetch_delay: ${fetch_ms}ms}" ;;
    grace) echo "  - {$common, beta: 1.0, grace: 10s, fetch_delay: ${fetch_ms}ms}" ;;
  esac
}

# start_corral SETUP: writes SETUP.yml, checks it, starts Corral; sets corral_port, metrics_port,
# corral_pid. Returns 1 (the reason in skipped[SETUP]) when this Corral cannot run the setup.
start_corral() {
  local setup=$1 config=$out_dir/$1.yml check
  corral_port=$(free_port)
  metrics_port=$(free_port)
  {
    echo "listen: $host:$corral_port"
    echo "metrics: $host:$metrics_port"
    echo "threads: $threads"
    echo "log_level: warn"
    echo "upstream: { address: redis://$host:$redis_port }"
    echo "policies:"
    policy_yaml "$setup"
  } >"$config"
  if ! check=$("$corral_bin" --check-config "$config" 2>&1); then
    skipped[$setup]="corral --check-config rejects the policy: $(echo "$check" | tail -n +2 | head -3 | sed 's/^ *//' | tr '\n' ' ')"
    return 1
  fi
  "$corral_bin" -c "$config" >"$out_dir/$setup.log" 2>&1 &
  corral_pid=$!
  pids+=("$corral_pid")
  wait_ready "$corral_port" "$corral_pid" "$out_dir/$setup.log"
}

scrape() { curl -sf --max-time 5 "http://$host:$metrics_port/metrics"; }

# metric FILE NAME [OUTCOME]: the value of NAME{policy="hot:"[,outcome=OUTCOME]} in a scrape (0 if absent).
metric() {
  awk -v name="$2" -v outcome="${3:-}" '
    !/^#/ && (index($0, name "{") == 1 || index($0, name " ") == 1) && index($0, "policy=\"hot:\"") &&
    (outcome == "" || index($0, "outcome=\"" outcome "\"")) { sum += $NF }
    END { printf "%d\n", sum }' "$1"
}

# field SETUP KEY: a key=value line of the generator's output.
field() { sed -n "s/^$2=//p" "$out_dir/$1.out" | head -1; }

# --- one setup ------------------------------------------------------------------------------------
declare -A skipped=() fetches=() expiries=() metric_fetches=() commands=() lookups=()
ran=()
failures=0

# run_load SETUP PORT [generator flags...]: the generator in the background, waited for, so a TERM to
# this script reaches the trap at once.
run_load() {
  local setup=$1 port=$2
  shift 2
  local cmd=("$load_bin" --port "$port" --connections "$clients" --duration "$duration" --key "$key"
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

# count_refreshes SETUP FALLBACK_FETCHES: expiries[SETUP] and fetches[SETUP] for the table. The
# generator pairs each expiry with the fetches that served it (see tests/bench/expiry_log.hpp); without
# that (no CORRAL.STATS), all fetches in the run over the expiries inside it.
count_refreshes() {
  local setup=$1
  if [ "$(field "$setup" refreshes)" != n/a ] && [ -n "$(field "$setup" refreshes)" ]; then
    expiries[$setup]=$(field "$setup" refreshes)
    fetches[$setup]=$(field "$setup" refresh_fetches)
  else
    expiries[$setup]=$(field "$setup" expiries)
    fetches[$setup]=$2
  fi
}

run_aside() {
  redis_cmd DEL "$key" >/dev/null
  run_load aside "$redis_port" --cache-aside --ttl-ms "$ttl_ms" || return 0
  count_refreshes aside "$(field aside computes)"
}

run_corral() {
  local setup=$1
  # The origin holds the value for good; only Corral's copy expires.
  redis_cmd SET "$key" "$(printf 'v%.0s' $(seq 32))" >/dev/null
  if ! start_corral "$setup"; then
    echo "   $setup: not run: ${skipped[$setup]}" >&2
    failures=$((failures + 1))
    return 0
  fi
  scrape >"$out_dir/$setup.metrics.before" || { echo "$setup: no /metrics" >&2; exit 1; }
  if run_load "$setup" "$corral_port"; then
    scrape >"$out_dir/$setup.metrics.after" || { echo "$setup: no /metrics after the run" >&2; exit 1; }
    local before after outcome hits=0
    before=$(metric "$out_dir/$setup.metrics.before" corral_origin_requests_total)
    after=$(metric "$out_dir/$setup.metrics.after" corral_origin_requests_total)
    # The generator's warm-up GET, before its clock starts, is the cold fill: one fetch, not an expiry's.
    if [ $((after - before)) -gt 0 ]; then
      metric_fetches[$setup]=$((after - before - 1))
    else
      echo "   WARNING: $setup: no origin fetch counted (corral_origin_requests_total{policy=\"hot:\"})" >&2
      metric_fetches[$setup]=n/a
    fi
    count_refreshes "$setup" "${metric_fetches[$setup]}"
    lookups[$setup]=""
    for outcome in hit stale miss coalesced; do
      before=$(metric "$out_dir/$setup.metrics.before" corral_cache_lookups_total "$outcome")
      after=$(metric "$out_dir/$setup.metrics.after" corral_cache_lookups_total "$outcome")
      lookups[$setup]+="$outcome $((after - before)), "
      [ "$outcome" != hit ] || hits=$((after - before))
    done
    [ "$hits" -gt 0 ] || echo "   WARNING: $setup: no cache hits: the policy did not cache" >&2
  fi
  kill -0 "$corral_pid" 2>/dev/null || { echo "   $setup: corral died; its log:" >&2; tail -20 "$out_dir/$setup.log" >&2; failures=$((failures + 1)); }
  stop_pid "$corral_pid"
}

# --- report ---------------------------------------------------------------------------------------
describe() {
  case "$1" in
    aside) echo "cache-aside clients -> redis (baseline)" ;;
    coalesce) echo "corral, coalescing only" ;;
    grace) echo "corral, grace + XFetch" ;;
  esac
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
  echo "$clients clients, one request in flight each, think time uniform 0-$think_ms ms, GET $key for $duration s;"
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
  echo "## Targets (SPEC.md: 1 origin fetch per expiry; p99 during expiry within 2x the p99 of plain hits)"
  echo
  echo "| setup | requests/s | p99 plain hits | p99 during expiry | during expiry / hits | target <= 2x | fetches per expiry | target 1 |"
  echo "|---|---|---|---|---|---|---|---|"
  for setup in "${ran[@]}"; do
    local hit expiry ratio per
    hit=$(field "$setup" hit_p99_ms)
    expiry=$(field "$setup" expiry_p99_ms)
    ratio=$(div "$expiry" "$hit")
    per=$(div "${fetches[$setup]}" "${expiries[$setup]}")
    echo "| $(describe "$setup") | $(field "$setup" rps) | $(ms "$hit") | $(ms "$expiry") | $ratio |" \
      "$(verdict "$ratio" 2) | $per | $(verdict "$per" 1) |"
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
    notes+=" origin fetches per TTL period: $(div "${metric_fetches[$setup]:-${fetches[$setup]}}" "$periods");"
    [ -z "$(field "$setup" watch_problem)" ] || notes+=" no expiry windows: $(field "$setup" watch_problem);"
    echo "- $(describe "$setup"): expiry windows at $(field "$setup" expiry_times_s)s;$notes"
  done
  echo "- TTL periods in the run: $periods. Through Corral, an expiry is one TTL cycle of the cached value, and"
  echo "  its fetches are those counted (CORRAL.STATS) between the first sightings of the old and the new value;"
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
  echo
  echo "## Reproduce"
  echo "Ports are those of this run."
  echo
  echo '```'
  printf '%q ' "${redis_command[@]}"
  echo
  for setup in "${ran[@]}"; do
    echo "# $setup"
    if [ "$setup" = aside ]; then
      echo "redis-cli -p $redis_port DEL $key"
    else
      echo "redis-cli -p $redis_port SET $key <32 bytes>"
      echo "$corral_bin -c $setup.yml   # $setup.yml:"
      sed 's/^/#   /' "$out_dir/$setup.yml"
    fi
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
    --title "GET $key, $clients clients, TTL $ttl_ms ms, fetch $fetch_ms ms: latency of every request (log)" \
    "${args[@]}" >/dev/null
}

# --- the run --------------------------------------------------------------------------------------
echo "== redis-server; output in $out_dir" >&2
start_redis
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for setup in $setups; do
  case "$setup" in
    aside) run_aside ;;
    coalesce|grace) run_corral "$setup" ;;
    *) echo "unknown setup $setup (aside, coalesce, grace)" >&2; exit 2 ;;
  esac
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
stop_pid "$redis_pid"

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
