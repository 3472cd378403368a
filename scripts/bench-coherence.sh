#!/usr/bin/env bash
# Coherence benchmark: tests/integration/coherence.py for longer than the test does. One writer
# (SET ck:<i>/ck:r:<i> <version>, directly or through a Corral, chosen from a printed seed) and
# readers GETting through each of three Corrals on one redis-server; every read is checked against
# the write history. Prints reads, writes, stale reads, wrong values and the staleness distribution
# (max, p99.9, p99) per path: read via which Corral / written directly or through which Corral.
# Usage: scripts/bench-coherence.sh [--duration S] [--seed N] [--stall-tracking S] [--out FILE]
#                                   [any other coherence.py option: --keys, --readers, --write-rate]
#   --duration S        seconds of load (default 60)
#   --stall-tracking S  each Corral reaches Redis through a fault proxy, and every tracking link is
#                       stalled for S seconds from a third of the run (the silence-detection case)
#   --out FILE          also write the report there
# Env: CORRAL_BIN (use this binary, skip the build).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

duration=60
out_file=""
args=()
need_value() { [ "$2" -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) need_value "$1" $#; duration=$2; shift 2 ;;
    --duration=*) duration=${1#--duration=}; shift ;;
    --out) need_value "$1" $#; out_file=$2; shift 2 ;;
    --out=*) out_file=${1#--out=}; shift ;;
    -h|--help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

install_packages >&2
if [ -n "${CORRAL_BIN:-}" ]; then
  corral_bin=$(realpath "$CORRAL_BIN")
else
  echo "== release build: corral" >&2
  (cd "$CORRAL_ROOT" && cmake --preset release >/dev/null &&
    cmake --build --preset release --target corral) >&2
  corral_bin=$CORRAL_ROOT/build/release/src/corral
fi
[ -x "$corral_bin" ] || { echo "no corral binary at $corral_bin" >&2; exit 1; }

corral_version=$("$corral_bin" --version 2>/dev/null || echo "corral ?")
redis_version=$(redis-server --version | cut -d' ' -f1-3)
echo "== $(date -u +%FT%TZ) $(nproc) cores, $corral_version, $redis_version" >&2
report=$(mktemp -t corral-coherence.XXXXXX)
trap 'rm -f "$report"' EXIT
status=0
CORRAL_BIN=$corral_bin /usr/bin/python3 "$CORRAL_ROOT/tests/integration/coherence.py" \
  --duration "$duration" "${args[@]}" | tee "$report" || status=$?
[ -z "$out_file" ] || cp "$report" "$out_file"
exit "$status"
