# shellcheck shell=bash
# What a process under test spent on a benchmark run: CPU time (utime+stime from /proc/PID/stat) and
# system calls (perf stat on the syscalls:sys_enter_* tracepoints, when perf can attach). Sourced by
# scripts/bench.sh and scripts/bench-cluster.sh, which set $workdir and the `pids` list.
# Usage: cost_begin PID[,PID...] [syscalls]; <run the load>; cost_end PID REQUESTS, which sets cost_result to
# "cpu_us_per_request syscalls_per_request top_syscalls" (top: name=per_request,... the three most
# frequent; "n/a" when not counted) and cost_kernel_result to the stime part of the CPU us per request. Not to be called in $(...): it waits for its perf process. Counting syscalls slows the process (every syscall hits a tracepoint), so the scripts
# count them in a run of their own and take CPU time from runs without perf.

cost_perf_ok=""
# cost_perf_available: perf can count syscall tracepoints of a process of ours (cached).
cost_perf_available() {
  if [ -z "$cost_perf_ok" ]; then
    cost_perf_ok=no
    if command -v perf >/dev/null 2>&1 &&
      perf stat -e 'syscalls:sys_enter_getpid' -x, -- true >/dev/null 2>&1; then
      cost_perf_ok=yes
    fi
  fi
  [ "$cost_perf_ok" = yes ]
}

# cost_ticks PID[,PID...] [kernel]: utime+stime clock ticks (stime alone with `kernel`), summed over
# the processes.
cost_ticks() {
  local total=0 pid ticks fields='$14 + $15'
  [ -z "${2:-}" ] || fields='$15'
  for pid in ${1//,/ }; do
    ticks=$(awk "{ print $fields }" "/proc/$pid/stat" 2>/dev/null || echo 0)
    total=$((total + ticks))
  done
  echo "$total"
}

cost_perf_pid=""
cost_start_ticks=0
cost_start_kernel_ticks=0
cost_begin() {
  local pid=$1 syscalls=${2:-}
  cost_start_ticks=$(cost_ticks "$pid")
  cost_start_kernel_ticks=$(cost_ticks "$pid" kernel)
  cost_perf_pid=""
  rm -f "$workdir/cost.perf"
  if [ -n "$syscalls" ] && cost_perf_available; then
    perf stat -e 'syscalls:sys_enter_*' -x, -o "$workdir/cost.perf" -p "$pid" >/dev/null 2>&1 &
    cost_perf_pid=$!
    pids+=("$cost_perf_pid")
    # perf attaches asynchronously: wait for it to have opened its output file.
    for _ in $(seq 50); do [ -s "$workdir/cost.perf" ] && break; sleep 0.02; done
  fi
}

cost_end() {
  local pid=$1 requests=$2 ticks kernel_ticks hz cpu sys="n/a" top="n/a"
  ticks=$(($(cost_ticks "$pid") - cost_start_ticks))
  kernel_ticks=$(($(cost_ticks "$pid" kernel) - cost_start_kernel_ticks))
  hz=$(getconf CLK_TCK)
  cpu=$(awk -v t="$ticks" -v hz="$hz" -v n="$requests" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }')
  cost_kernel_result=$(awk -v t="$kernel_ticks" -v hz="$hz" -v n="$requests" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }')
  if [ -n "$cost_perf_pid" ]; then
    kill -INT "$cost_perf_pid" 2>/dev/null || true
    wait "$cost_perf_pid" 2>/dev/null || true
    forget_pid "$cost_perf_pid"
    # perf stat -x, lines: count,unit,event,...; "<not counted>" lines are skipped.
    sys=$(awk -F, -v n="$requests" '$1 ~ /^[0-9]+$/ { s += $1 } END { printf "%.2f", s / n }' "$workdir/cost.perf")
    top=$(awk -F, -v n="$requests" '$1 ~ /^[0-9]+$/ && $1 > 0 { sub(/^syscalls:sys_enter_/, "", $3); print $1, $3 }' \
      "$workdir/cost.perf" | sort -rn | head -3 |
      awk -v n="$requests" '{ printf "%s%s=%.2f", (NR > 1 ? "," : ""), $2, $1 / n }')
    [ -n "$top" ] || top="n/a"
  fi
  cost_result="$cpu $sys $top"
}

# cost_median FILE [COLUMN]: the median of a column of numbers (n/a without any).
cost_median() {
  local file=$1 column=${2:-1}
  [ -s "$file" ] || { echo n/a; return; }
  awk -v c="$column" '$c != "n/a" { print $c }' "$file" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else print v[int(NR / 2) + 1] }'
}

cost_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

# cost_table PREFIX PEER "TARGETS" "TESTS": one row per test, pipeline and target: median rps (from
# $workdir/res.PREFIX<target>.<test>.<pipeline>, first column), median CPU us per request (cost.*) and
# its kernel part (kern.*: stime, where the socket calls' TCP work is counted), syscalls per request
# and the most frequent ones (sys.*), and CPU and syscalls as a ratio to PEER's.
cost_table() {
  local prefix=$1 peer=$2 targets=$3 tests=$4 test pipeline target
  echo "| test | pipeline | target | rps | CPU us/request | of which kernel | syscalls/request | most frequent (per request) | CPU / $peer | syscalls / $peer |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for test in $tests; do
    for pipeline in 1 16; do
      local peer_cpu peer_sys
      peer_cpu=$(cost_median "$workdir/cost.$prefix$peer.$test.$pipeline")
      peer_sys=$(cost_median "$workdir/sys.$prefix$peer.$test.$pipeline")
      for target in $targets; do
        local key=$prefix$target.$test.$pipeline rps cpu kernel sys top
        rps=$(cost_median "$workdir/res.$key")
        [ "$rps" = n/a ] || rps=$(printf '%.0f' "$rps")
        cpu=$(cost_median "$workdir/cost.$key")
        kernel=$(cost_median "$workdir/kern.$key")
        sys=$(cost_median "$workdir/sys.$key")
        # No file when perf did not run (BENCH_SYSCALL_RUNS=0, or no perf): "n/a" below.
        top=$(awk 'NR == 1 { print $2 }' "$workdir/sys.$key" 2>/dev/null || true)
        echo "| ${test^^} | $pipeline | $target | $rps | $cpu | $kernel | $sys | ${top:-n/a} |" \
          "$(cost_ratio "$cpu" "$peer_cpu") | $(cost_ratio "$sys" "$peer_sys") |"
      done
    done
  done
}
