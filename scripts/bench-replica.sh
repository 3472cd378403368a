#!/usr/bin/env bash
# Read throughput and CPU per request with reads on the replicas of a Sentinel-managed primary
# (read_from: prefer_replica vs primary), through Corral and (with PREDIXY_BIN) predixy's
# SentinelServerPool read priorities on the same setup (tests/bench/replica_reads.py).
# Usage: scripts/bench-replica.sh     Env: CORRAL_BIN (skip the build), PREDIXY_BIN, REQUESTS
#        (GETs per run, default 500000), PIPELINE (default 16)
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

corral_bin=$(corral_release_bin)
predixy=()
[ -n "${PREDIXY_BIN:-}" ] && predixy=(--predixy "$(realpath "$PREDIXY_BIN")")

echo "== $(date -u +%FT%TZ) $(git -C "$CORRAL_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "== reproduce: CORRAL_BIN=$corral_bin PREDIXY_BIN=${PREDIXY_BIN:-} REQUESTS=${REQUESTS:-500000} PIPELINE=${PIPELINE:-16} scripts/bench-replica.sh"
/usr/bin/python3 "$CORRAL_ROOT/tests/bench/replica_reads.py" --corral "$corral_bin" \
  --requests "${REQUESTS:-500000}" --pipeline "${PIPELINE:-16}" "${predixy[@]}"
