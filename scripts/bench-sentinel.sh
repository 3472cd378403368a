#!/usr/bin/env bash
# Failover benchmark of the Sentinel upstream: acknowledged INCRs lost and the client error window
# of a SENTINEL FAILOVER and of a kill -9 of the primary, through Corral and (with PREDIXY_BIN)
# predixy's SentinelServerPool on the same setup (tests/bench/sentinel_failover.py).
# Usage: scripts/bench-sentinel.sh     Env: CORRAL_BIN (skip the build), PREDIXY_BIN, FAILOVER_AFTER
#        (acknowledged INCRs before the failover and after the switch, default 50000)
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

corral_bin=$(corral_release_bin)
predixy=()
[ -n "${PREDIXY_BIN:-}" ] && predixy=(--predixy "$(realpath "$PREDIXY_BIN")")
bench=(/usr/bin/python3 "$CORRAL_ROOT/tests/bench/sentinel_failover.py" --corral "$corral_bin"
       --after "${FAILOVER_AFTER:-50000}" "${predixy[@]}")

echo "== $(date -u +%FT%TZ) $(git -C "$CORRAL_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "== reproduce: CORRAL_BIN=$corral_bin PREDIXY_BIN=${PREDIXY_BIN:-} scripts/bench-sentinel.sh"
"${bench[@]}"
"${bench[@]}" --kill
