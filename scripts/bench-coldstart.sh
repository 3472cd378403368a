#!/usr/bin/env bash
# Cold-start benchmark: a fresh Corral (threads 1, default policy settings) in front of a warm origin
# under load, where misses of many distinct keys pass max_origin_concurrency (64) and wait in the
# origin queue. Reports origin fetches per distinct key, errors, latency and the time until the cache
# holds every key. Usage: scripts/bench-coldstart.sh [--out FILE]
# Env: CORRAL_BIN (skip the build), COLD_SETUPS ("table redis http burst"), COLD_KEYS (100000),
#      COLD_HTTP_KEYS (10000), COLD_CONNECTIONS (50), COLD_PIPELINE (32), COLD_FETCH_MS (200),
#      TABLE_PIPELINES ("1 8 16 32"), CORRAL_THREADS (1), COLD_CONCURRENCY (the http setups'
#      max_origin_concurrency and the origin's max_connections; default 64, as the policy's default)
#
# The setups, each on a fresh redis-server (its INFO commandstats counts Corral's GETs, nothing else
# uses it) and a fresh Corral:
#   table  10,000 keys in Redis, policy key: (origin redis), one pass of 100,000 GETs:
#          redis-benchmark -t get -n 100000 -r 10000 -c 50 -P N for each N of TABLE_PIPELINES
#          (50 x N requests in flight). GETs reaching Redis, keys cached after the pass (entries).
#   redis  COLD_KEYS keys in Redis; tests/bench/coldstart_load.py: COLD_CONNECTIONS connections x
#          COLD_PIPELINE GETs in flight, 2 x COLD_KEYS requests, the first COLD_KEYS covering every key
#          once (all misses) in a random order, the rest hits.
#   http   the same against tests/origin_server.py answering each key after COLD_FETCH_MS, with
#          COLD_HTTP_KEYS keys (64 slots of a 200 ms origin fetch at most 320 keys/s: 100,000 keys
#          take over 5 minutes). The origin connection pool (max_connections) has as many
#          connections as the policy has slots (COLD_CONCURRENCY).
#   burst  400 distinct keys at once (50 connections x 8) against the http origin: errors and origin
#          requests (the case that failed 338 of 400 before the queue).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

out_file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "--out needs a value" >&2; exit 2; }; out_file=$(realpath -m "$2"); shift 2 ;;
    -h|--help) sed -n '2,5s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

setups=${COLD_SETUPS:-table redis http burst}
keys=${COLD_KEYS:-100000}
http_keys=${COLD_HTTP_KEYS:-10000}
connections=${COLD_CONNECTIONS:-50}
pipeline=${COLD_PIPELINE:-32}
fetch_ms=${COLD_FETCH_MS:-200}
table_pipelines=${TABLE_PIPELINES:-1 8 16 32}
threads=${CORRAL_THREADS:-1}
http_concurrency=${COLD_CONCURRENCY:-64}
host=127.0.0.1

corral_bin=$(corral_release_bin)
load=(/usr/bin/python3 "$CORRAL_ROOT/tests/bench/coldstart_load.py")
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# shellcheck source=scripts/lib/processes.sh
source "$CORRAL_ROOT/scripts/lib/processes.sh"
track_processes corral-coldstart

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

wait_port() {  # PORT PID NAME
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || { echo "$3 exited at start" >&2; exit 1; }
    redis-cli -h "$host" -p "$1" PING >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$3 does not answer on $1" >&2
  exit 1
}

start_redis() {  # KEYS: a fresh redis-server holding key:000000000000 ... with values v<i>
  redis_port=$(free_port)
  redis-server --bind "$host" --port "$redis_port" --save '' --appendonly no --dir "$workdir" \
    >"$workdir/redis.log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  wait_port "$redis_port" "$redis_pid" redis-server
  # shellcheck disable=SC2016  # Python, not shell: nothing to expand
  /usr/bin/python3 -c '
import sys
n = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(n):
    k, v = b"key:%012d" % i, b"v%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
' "$1" | redis-cli -h "$host" -p "$redis_port" --pipe >/dev/null
  redis-cli -h "$host" -p "$redis_port" CONFIG RESETSTAT >/dev/null
}

origin_port=""
start_origin() {
  origin_port=$(free_port)
  /usr/bin/python3 "$CORRAL_ROOT/tests/origin_server.py" "$origin_port" >"$workdir/origin.log" 2>&1 &
  origin_pid=$!
  pids+=("$origin_pid")
  for _ in $(seq 100); do
    curl -sf "http://$host:$origin_port/_stats" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf -X POST --data "{\"reset\": true, \"default\": {\"body\": \"v\", \"delay_ms\": $fetch_ms}}" \
    "http://$host:$origin_port/_control" >/dev/null
}
origin_requests() {
  curl -sf "http://$host:$origin_port/_stats" | /usr/bin/python3 -c \
    'import json, sys; print(sum(json.load(sys.stdin)["requests"].values()))'
}

start_corral() {  # ORIGIN_YAML [MORE_POLICY_YAML]
  corral_port=$(free_port)
  metrics_port=$(free_port)
  cat >"$workdir/corral.yml" <<EOF
listen: $host:$corral_port
metrics: $host:$metrics_port
threads: $threads
log_level: warn
upstream: { address: redis://$host:$redis_port }
policies:
  - { prefix: "key:", origin: $1, ttl: 10m${2:+, $2} }
EOF
  "$corral_bin" -c "$workdir/corral.yml" >"$workdir/corral.log" 2>&1 &
  corral_pid=$!
  pids+=("$corral_pid")
  wait_port "$corral_port" "$corral_pid" corral
}

metric() {  # NAME [LABEL]: the sum of NAME's samples (with LABEL in them) in Corral's /metrics
  curl -sf "http://$host:$metrics_port/metrics" |
    awk -v name="$1" -v label="${2:-}" '!/^#/ && (index($0, name "{") == 1 || index($0, name " ") == 1) &&
      (label == "" || index($0, label)) { sum += $NF } END { printf "%d\n", sum }'
}
redis_gets() {
  redis-cli -h "$host" -p "$redis_port" INFO commandstats | sed -n 's/^cmdstat_get:calls=\([0-9]*\),.*/\1/p'
}
stop_all() {
  stop_pid "$corral_pid"
  stop_pid "$redis_pid"
  [ -z "$origin_port" ] || { stop_pid "$origin_pid"; origin_port=""; }
}

report=()
errors_seen=()
field() { sed -n "s/^$2=//p" <<<"$1" | head -1; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.3f", a / b }'; }

run_table() {
  report+=("## One pass of 100,000 GETs over 10,000 keys (redis origin), redis-benchmark" ""
    "| requests in flight | GETs reaching Redis | keys cached after the pass | GET rps | queue rejections | waiters overflowed | errors |"
    "|---|---|---|---|---|---|---|")
  local p out errors
  for p in $table_pipelines; do
    start_redis 10000
    start_corral redis
    echo "== table: -P $p ($((50 * p)) in flight)   (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    out=$(redis-benchmark -h "$host" -p "$corral_port" -t get -n 100000 -r 10000 -c 50 -P "$p" -q 2>&1 |
      tr '\r' '\n' || true)
    errors=$(grep -c -i "error" <<<"$out" || true)
    report+=("| $((50 * p)) (P$p) | $(redis_gets) | $(metric corral_cache_entries) | $(grep -o 'GET: [0-9.]* requests per second' <<<"$out" | cut -d' ' -f2) | $(metric corral_origin_queue_rejections_total) | $(metric corral_cache_waiters_overflowed_total) | $errors |")
    stop_all
  done
  report+=("" "redis-benchmark -h 127.0.0.1 -p PORT -t get -n 100000 -r 10000 -c 50 -P N -q" "")
}

run_load() {  # NAME KEYS REQUESTS CONNECTIONS PIPELINE FETCHES_FN
  local out fetches line
  echo "== $1: ${*:2:4}   (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  out=$("${load[@]}" --port "$corral_port" --metrics-port "$metrics_port" --keys "$2" --requests "$3" \
    --connections "$4" --pipeline "$5")
  fetches=$($6)
  line="| $1 | $2 | $3 | $(($4 * $5)) | $fetches | $(div "$fetches" "$2") | $(field "$out" errors) |"
  line+=" $(field "$out" p50_ms) | $(field "$out" p99_ms) | $(field "$out" max_ms) | $(field "$out" rps) |"
  line+=" $(field "$out" warm_s) | $(metric corral_origin_queue_rejections_total) |"
  report+=("$line")
  [ -z "$(field "$out" first_error)" ] || errors_seen+=("- $1: first error: $(field "$out" first_error)")
}

http_origin_yaml() {
  echo "{http: \"http://$host:$origin_port/k/{suffix}\", timeout: 2s, connect_timeout: 2s, max_connections: $http_concurrency}"
}

start_load_table() {
  report+=("## Cold start: every key missed once, then hit ($connections connections x $pipeline in flight unless noted)" ""
    "| setup | distinct keys | requests | in flight | origin fetches | per distinct key | errors | p50 ms | p99 ms | max ms | rps | warm after s | queue rejections |"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
}

load_table_started=0
for setup in $setups; do
  case "$setup" in
    table) run_table ;;
    redis|http|burst)
      [ "$load_table_started" = 1 ] || { start_load_table; load_table_started=1; }
      start_redis "$([ "$setup" = redis ] && echo "$keys" || echo 0)"
      if [ "$setup" = redis ]; then
        start_corral redis
        run_load "redis origin" "$keys" $((2 * keys)) "$connections" "$pipeline" redis_gets
      else
        start_origin
        start_corral "$(http_origin_yaml)" "max_origin_concurrency: $http_concurrency"
        if [ "$setup" = http ]; then
          run_load "http origin, ${fetch_ms} ms" "$http_keys" $((2 * http_keys)) "$connections" "$pipeline" origin_requests
        else
          run_load "http burst, ${fetch_ms} ms" 400 400 50 8 origin_requests
        fi
      fi
      stop_all ;;
    *) echo "unknown setup $setup (table redis http burst)" >&2; exit 2 ;;
  esac
done

{
  echo "# Corral cold-start benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "Corral $("$corral_bin" --version 2>&1 | head -1), threads $threads, policy key: with default settings"
  echo "(max_origin_concurrency 64, max_origin_queue 10000, origin_queue_timeout 5s, wait_timeout 5s);"
  echo "$(nproc) cpus, load average at the end $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared)."
  echo
  printf '%s\n' "${report[@]}"
  [ ${#errors_seen[@]} -eq 0 ] || { echo; printf '%s\n' "${errors_seen[@]}"; }
  echo
  echo "http setups: max_origin_concurrency and max_connections $http_concurrency."
  echo
  echo "Reproduce: COLD_SETUPS=\"$setups\" COLD_KEYS=$keys COLD_HTTP_KEYS=$http_keys COLD_CONCURRENCY=$http_concurrency scripts/bench-coldstart.sh"
} | tee "${out_file:-/dev/null}"
