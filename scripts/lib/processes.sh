# shellcheck shell=bash
# Process bookkeeping for scripts that start servers: every pid in `pids` is stopped and
# `workdir` removed however the script ends (exit, error, Ctrl-C, TERM). Sourced, not run.

pids=()  # children not yet reaped: a pid leaves the list once waited for, so it is never reused

# track_processes NAME: creates $workdir (a temp dir named after NAME) and installs the traps.
track_processes() {
  workdir=$(mktemp -d -t "$1.XXXXXX")
  trap cleanup_processes EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

forget_pid() {
  local kept=() pid
  for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
  pids=("${kept[@]}")
}

cleanup_processes() {
  local status=$?
  trap - EXIT INT TERM
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$workdir"
  exit "$status"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
