#!/usr/bin/env bash
# Builds the libFuzzer targets (cmake --preset fuzz, in build/fuzz) and fuzzes each for N seconds,
# starting from tests/fuzz/corpus/<kind>. Crashes are copied into that corpus, where the unit test
# replays them, and make this script exit non-zero.
#
#   scripts/fuzz.sh [SECONDS]        (or FUZZ_SECONDS=...; default 30 per target)
set -euo pipefail

seconds="${1:-${FUZZ_SECONDS:-30}}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [seconds per target]" >&2
  exit 2
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="$root/build/fuzz"

cmake --preset fuzz >/dev/null
cmake --build "$build" --target fuzz_request_parser fuzz_reply_framer

# target:corpus pairs
targets=("fuzz_request_parser:request" "fuzz_reply_framer:reply")
failed=0
for pair in "${targets[@]}"; do
  target="${pair%%:*}"
  kind="${pair##*:}"
  seeds="$root/tests/fuzz/corpus/$kind"
  # New inputs libFuzzer finds go to a scratch corpus in the build tree, so the checked-in seeds
  # stay a small, reviewed set; the seeds are read as a second corpus directory.
  work="$build/corpus/$kind"
  artifacts="$build/artifacts/$kind"
  log="$build/$target.log"
  mkdir -p "$work" "$artifacts"
  rm -f "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*

  binary="$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)"
  echo "== $target: ${seconds}s from $seeds (log: $log)"
  status=0
  dict=()
  [ -f "$root/tests/fuzz/$kind.dict" ] && dict=(-dict="$root/tests/fuzz/$kind.dict")
  "$binary" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    "${dict[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$log" || true

  found=0
  for artifact in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* \
                  "$artifacts"/oom-*; do
    [ -e "$artifact" ] || continue
    found=1
    case "$(basename "$artifact")" in
      crash-* | leak-*)
        cp "$artifact" "$seeds/"
        echo "!! $target: $(basename "$artifact") copied to $seeds" ;;
      *)
        echo "!! $target: $artifact (not copied: too slow for the unit test replay)" ;;
    esac
  done
  if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "!! $target failed (exit $status); see $log" >&2
    grep -E "ERROR: |SUMMARY: |what\(\)" "$log" | head -n 5 >&2 || true
    failed=1
  fi
done

exit "$failed"
