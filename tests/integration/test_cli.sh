#!/usr/bin/env bash
# The corral command line (--version, --help, --check-config, -c with a bad file) and redis-cli
# through a running corral (PING, SET/GET, -n, -r loops, --pipe). Starts redis-server and corral
# on free loopback ports in a temp dir; a trap stops them however the script ends.
# Run: CORRAL_BIN=build/x/src/corral bash tests/integration/test_cli.sh
#      TARGET=redis bash tests/integration/test_cli.sh  (redis-cli part against redis-server only)
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SOURCE_DIR="${CORRAL_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}"
CORRAL_BIN="${CORRAL_BIN:-}"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"
REDIS_CLI="${REDIS_CLI:-redis-cli}"
TARGET="${TARGET:-corral}"
PY=/usr/bin/python3

TMP="$(mktemp -d /tmp/corral-cli-XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  [ "${KEEP_TMP:-0}" = 1 ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "caught signal"; exit 130' INT TERM HUP

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ping() {  # port [seconds]
  local port=$1 tries=$(( ${2:-10} * 20 ))
  for _ in $(seq "$tries"); do
    [ "$("$REDIS_CLI" -h 127.0.0.1 -p "$port" PING 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  return 1
}

PASSED=0
FAILED=0
SKIPPED=0
run() {  # name: runs the function of that name
  local name=$1 out
  out="$TMP/$name.out"
  if "$name" >"$out" 2>&1; then
    echo "PASS $name"
    PASSED=$((PASSED + 1))
  else
    local rc=$?
    if [ "$rc" = 77 ]; then
      echo "SKIP $name ($(tail -n 1 "$out"))"
      SKIPPED=$((SKIPPED + 1))
    else
      echo "FAIL $name"
      sed 's/^/    /' "$out" | tail -n 40
      FAILED=$((FAILED + 1))
    fi
  fi
}
fail() { echo "$*"; return 1; }
need_corral() {
  if [ "$TARGET" = redis ]; then echo "corral only"; return 77; fi
  [ -x "$CORRAL_BIN" ] || { echo "CORRAL_BIN='$CORRAL_BIN' is not an executable"; return 1; }
}

# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

test_version() {
  need_corral || return
  local out
  out="$("$CORRAL_BIN" --version 2>&1)" || fail "--version exited $?: $out" || return
  echo "$out"
  echo "$out" | grep -Eq '[0-9]+\.[0-9]+\.[0-9]+' || fail "no version number in: $out"
}

test_help() {
  need_corral || return
  local out
  out="$("$CORRAL_BIN" --help 2>&1)" || fail "--help exited $?" || return
  echo "$out"
  for word in --check-config -c --version; do
    echo "$out" | grep -q -- "$word" || fail "--help does not mention $word" || return
  done
}

test_unknown_flag() {
  need_corral || return
  local out rc
  out="$(timeout 10 "$CORRAL_BIN" --no-such-flag 2>&1)"; rc=$?
  echo "$out"
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "--no-such-flag exited $rc"
}

test_check_config_repo_file() {
  need_corral || return
  local f="$SOURCE_DIR/config/corral.yaml" out rc
  [ -f "$f" ] || fail "$f does not exist (the default config must be shipped)" || return
  out="$(timeout 10 "$CORRAL_BIN" --check-config "$f" 2>&1)"; rc=$?
  echo "$out"
  [ "$rc" = 0 ] || fail "--check-config $f exited $rc"
}

test_check_config_every_shipped_file() {
  need_corral || return
  local f out rc n=0
  for f in "$SOURCE_DIR"/config/*.yaml "$SOURCE_DIR"/config/*.yml; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    out="$(timeout 10 "$CORRAL_BIN" --check-config "$f" 2>&1)"; rc=$?
    [ "$rc" = 0 ] || fail "--check-config $f exited $rc: $out" || return
  done
  [ "$n" -gt 0 ] || fail "no config/*.yaml in $SOURCE_DIR"
}

write_good_config() {  # file listen-port metrics-port redis-port
  cat >"$1" <<EOF
listen: 127.0.0.1:$2
metrics: 127.0.0.1:$3
threads: 2
upstream: { address: "redis://127.0.0.1:$4", connect_timeout: 500ms, command_timeout: 2s }
client: { max_request: 1mb, max_output_buffer: 1mb, allow_commands: [FLUSHDB] }
EOF
}

write_broken_config() {  # every line but 3, 4 and 6 holds one mistake
  cat >"$1" <<'EOF'
listen: 127.0.0.1:notaport
threads: -3
upstream:
  address: redis://127.0.0.1:6379
  connect_timeout: banana
client:
  max_request: 0
bogus_key: 1
EOF
}

check_errors_listed() {  # output file
  local out="$1" line field
  for pair in 1:listen 2:threads 5:connect_timeout 7:max_request 8:bogus_key; do
    line=${pair%%:*}
    field=${pair#*:}
    grep -Eq "broken\.yaml:$line:.*$field" "$out" ||
      fail "the error for '$field' (broken.yaml line $line) is not listed as" \
           "'broken.yaml:$line: ...$field...'" || return
  done
}

test_check_config_good() {
  need_corral || return
  local f="$TMP/good.yaml" out rc
  write_good_config "$f" 6390 9190 6379
  out="$(timeout 10 "$CORRAL_BIN" --check-config "$f" 2>&1)"; rc=$?
  echo "$out"
  [ "$rc" = 0 ] || fail "--check-config of a good file exited $rc"
}

test_check_config_broken_lists_every_error() {
  need_corral || return
  local f="$TMP/broken.yaml" rc
  write_broken_config "$f"
  timeout 10 "$CORRAL_BIN" --check-config "$f" >"$TMP/broken.out" 2>&1; rc=$?
  cat "$TMP/broken.out"
  [ "$rc" = 1 ] || fail "--check-config of a broken file exited $rc, want 1" || return
  check_errors_listed "$TMP/broken.out"
}

test_run_with_broken_config_exits() {
  need_corral || return
  local f="$TMP/broken.yaml" rc
  write_broken_config "$f"
  timeout 10 "$CORRAL_BIN" -c "$f" >"$TMP/broken-run.out" 2>&1; rc=$?
  cat "$TMP/broken-run.out"
  [ "$rc" != 124 ] || fail "corral -c broken.yaml kept running" || return
  [ "$rc" != 0 ] || fail "corral -c broken.yaml exited 0" || return
  check_errors_listed "$TMP/broken-run.out"
}

test_run_with_missing_file_exits() {
  need_corral || return
  local rc out
  out="$(timeout 10 "$CORRAL_BIN" -c "$TMP/nope.yaml" 2>&1)"; rc=$?
  echo "$out"
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "corral -c missing.yaml exited $rc" || return
  echo "$out" | grep -q "nope.yaml" || fail "the error does not name the file"
}

test_check_config_empty_file() {
  need_corral || return
  local rc
  : >"$TMP/empty.yaml"
  timeout 10 "$CORRAL_BIN" --check-config "$TMP/empty.yaml"; rc=$?
  # An empty file means "all defaults" (valid) or is refused; it must never crash or hang.
  [ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "--check-config of an empty file exited $rc"
}

# ---------------------------------------------------------------------------------------------
# redis-cli through a running corral
# ---------------------------------------------------------------------------------------------

REDIS_PORT=""
FRONT_PORT=""
CORRAL_PID=""
start_stack() {
  REDIS_PORT=$(free_port)
  "$REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$TMP" --daemonize no >"$TMP/redis.log" 2>&1 &
  PIDS+=($!)
  wait_ping "$REDIS_PORT" 10 || { echo "redis-server did not start"; cat "$TMP/redis.log"; return 1; }
  if [ "$TARGET" = redis ]; then
    FRONT_PORT=$REDIS_PORT
    return 0
  fi
  [ -x "$CORRAL_BIN" ] || { echo "CORRAL_BIN='$CORRAL_BIN' is not an executable"; return 1; }
  FRONT_PORT=$(free_port)
  write_good_config "$TMP/run.yaml" "$FRONT_PORT" "$(free_port)" "$REDIS_PORT"
  "$CORRAL_BIN" -c "$TMP/run.yaml" >"$TMP/corral.log" 2>&1 &
  CORRAL_PID=$!
  PIDS+=("$CORRAL_PID")
  wait_ping "$FRONT_PORT" 10 || { echo "corral did not start"; cat "$TMP/corral.log"; return 1; }
}

cli() { "$REDIS_CLI" -h 127.0.0.1 -p "$FRONT_PORT" "$@"; }
direct() { "$REDIS_CLI" -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

test_cli_ping_set_get() {
  [ "$(cli PING)" = PONG ] || fail "PING" || return
  [ "$(cli SET cli:k 'hello world')" = OK ] || fail "SET" || return
  [ "$(cli GET cli:k)" = "hello world" ] || fail "GET: $(cli GET cli:k)" || return
  [ "$(direct GET cli:k)" = "hello world" ] || fail "direct GET" || return
  [ "$(cli ECHO 'x y')" = "x y" ] || fail "ECHO" || return
  [ "$(cli DEL cli:k)" = 1 ] || fail "DEL" || return
  [ -z "$(cli GET cli:k)" ] || fail "GET after DEL: $(cli GET cli:k)" || return
  cli NOSUCHCMD 2>&1 | grep -q "unknown command" || fail "unknown command"
}

test_cli_select_db() {
  [ "$(cli -n 1 SET cli:db one)" = OK ] || fail "SET in db 1" || return
  [ "$(direct -n 1 GET cli:db)" = one ] || fail "direct db 1" || return
  [ -z "$(direct -n 0 GET cli:db)" ] || fail "db 0 sees the db 1 key" || return
  [ -z "$(cli GET cli:db)" ] || fail "db 0 through the proxy sees the db 1 key"
}

test_cli_repeat_loop() {
  cli -r 100 INCR cli:ctr >/dev/null || fail "-r 100 INCR" || return
  [ "$(cli GET cli:ctr)" = 100 ] || fail "counter is $(cli GET cli:ctr), want 100" || return
  local got
  got="$(cli -r 5 ECHO hi | tr '\n' ' ')"
  [ "$got" = "hi hi hi hi hi " ] || fail "-r 5 ECHO: '$got'"
}

test_cli_pipe_mode() {
  "$PY" - "$TMP/pipe.txt" <<'EOF'
import sys
with open(sys.argv[1], "wb") as f:
    for i in range(10000):
        k, v = b"cli:pipe:%d" % i, b"value-%d" % i
        f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
EOF
  local out
  out="$(cli --pipe <"$TMP/pipe.txt" 2>&1)"
  echo "$out"
  echo "$out" | grep -q "errors: 0, replies: 10000" || fail "--pipe summary" || return
  [ "$(direct GET cli:pipe:0)" = value-0 ] || fail "first key" || return
  [ "$(direct GET cli:pipe:9999)" = value-9999 ] || fail "last key" || return
  [ "$(cli GET cli:pipe:4321)" = value-4321 ] || fail "GET through the proxy"
}

test_cli_stdin_commands() {
  local out
  out="$(printf 'SET cli:s 1\nINCR cli:s\nGET cli:s\n' | cli 2>&1 | tr '\n' ' ')"
  [ "$out" = "OK 2 2 " ] || fail "commands from stdin: '$out'"
}

test_cli_info_and_flushdb_allowed() {
  cli INFO | grep -q '^#' || fail "INFO has no section header" || return
  if [ "$TARGET" != redis ]; then
    cli FLUSHALL 2>&1 | grep -q "not allowed" || fail "FLUSHALL was not refused" || return
  fi
  [ "$(cli SET cli:f 1)" = OK ] || fail "SET" || return
  [ "$(cli FLUSHDB)" = OK ] || fail "FLUSHDB (allowed in the config)" || return
  [ "$(direct DBSIZE)" = 0 ] || fail "DBSIZE after FLUSHDB: $(direct DBSIZE)"
}

test_sigterm_exits_cleanly() {
  need_corral || return
  [ -n "$CORRAL_PID" ] || fail "corral not running" || return
  kill -TERM "$CORRAL_PID"
  for _ in $(seq 100); do
    kill -0 "$CORRAL_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$CORRAL_PID" 2>/dev/null && fail "corral still running 5s after SIGTERM" && return 1
  wait "$CORRAL_PID"; local rc=$?
  CORRAL_PID=""
  [ "$rc" = 0 ] || { tail -n 20 "$TMP/corral.log"; fail "corral exited $rc after SIGTERM"; }
}

echo "suite cli: target=$TARGET corral=${CORRAL_BIN:--} source=$SOURCE_DIR"
for t in test_version test_help test_unknown_flag test_check_config_repo_file \
         test_check_config_every_shipped_file test_check_config_good \
         test_check_config_broken_lists_every_error test_run_with_broken_config_exits \
         test_run_with_missing_file_exits test_check_config_empty_file; do
  run "$t"
done
if start_stack; then
  for t in test_cli_ping_set_get test_cli_select_db test_cli_repeat_loop test_cli_pipe_mode \
           test_cli_stdin_commands test_cli_info_and_flushdb_allowed test_sigterm_exits_cleanly; do
    run "$t"
  done
else
  echo "FAIL start_stack"
  FAILED=$((FAILED + 1))
fi
echo "suite cli: $SKIPPED skipped"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
