#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: a short libFuzzer run of the RESP parsers,
# then unit and integration tests with ctest, two at a time (suites that measure timing run alone;
# see tests/integration/CMakeLists.txt). FUZZ_SECONDS sets the fuzz time per target.
#   --asan       build with AddressSanitizer + UBSan too, and run every test once there but the
#                latency measurement, which runs in the release build with the unit tests; the
#                release build and the fuzz smoke run beside the ASan tests, at nice 19
#   --repeat N   run each test up to N times, stopping at its first failure (ctest --repeat
#                until-fail:N): the flake gate; a test that fails once is a bug to fix at its cause
# The last lines are ctest's summary of the release build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

asan=0
repeat=()
while [ $# -gt 0 ]; do
  case "$1" in
    --asan) asan=1 ;;
    --repeat)
      if ! [[ "${2:-}" =~ ^[1-9][0-9]*$ ]]; then
        echo "--repeat needs a count of runs (a positive integer), got '${2:-}'" >&2
        exit 2
      fi
      repeat=(--repeat "until-fail:$2")
      shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

install_packages clang libclang-rt-14-dev nutcracker
# node-redis (RESP3 client-side cache test) comes from the npm registry; node and npm from Debian
# unless the machine already has them (a nodejs build that bundles npm must not meet Debian's npm).
command -v npm >/dev/null 2>&1 || install_packages nodejs npm
status=0

fuzz_smoke() {
  command -v clang++ >/dev/null 2>&1 || return 0
  echo "== fuzz smoke (${FUZZ_SECONDS:-15}s per target)"
  "$CORRAL_ROOT/scripts/fuzz.sh" "${FUZZ_SECONDS:-15}"
}

# The release build, then the fuzz smoke. Exits 2 when the build fails, 1 when the fuzzers do.
build_release_then_fuzz() {
  echo "== release build"
  build_preset release || exit 2
  fuzz_smoke || exit 1
}

# With --asan every test runs once under the sanitizers, and the release build (the binary users
# run) runs the unit tests and fleet_wakeup, which measures wake-up latency (its code paths run
# in integration.fleet too). A second full integration run in release would add 8 minutes to CI.
release_only='^integration[.]fleet_wakeup$'
release_tests=()
if [ "$asan" -eq 1 ]; then
  release_tests=(-R "^unit[.]|$release_only")
  echo "== asan-ubsan build"
  build_preset asan-ubsan
  # The ASan tests mostly wait on servers, failovers and timeouts, while the release build and
  # the fuzzers need CPU: those run beside them at the lowest priority (nice 19: the tests keep
  # the cores whenever they want them), and their output follows the tests'.
  background_log=$(mktemp)
  trap 'rm -f "$background_log"' EXIT
  (renice -n 19 -p "$BASHPID" >/dev/null && build_release_then_fuzz) >"$background_log" 2>&1 &
  background=$!
  echo "== asan-ubsan tests"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$CORRAL_ROOT/build/asan" --output-on-failure -j2 -LE fuzz "${repeat[@]}" \
    -E "$release_only" || status=1
  background_status=0
  wait "$background" || background_status=$?
  cat "$background_log"
  if [ "$background_status" -eq 2 ]; then exit 1; fi  # no release build to test
  if [ "$background_status" -ne 0 ]; then status=1; fi
else
  fuzz_smoke || status=1
  echo "== release build"
  build_preset release
fi
echo "== tests"
ctest --test-dir "$CORRAL_ROOT/build/release" --output-on-failure -j2 "${release_tests[@]}" \
  "${repeat[@]}" || status=1
exit $status
