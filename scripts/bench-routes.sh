#!/usr/bin/env bash
# What routes and mirroring cost per request: CPU us per SET and GET through Corral with no routes,
# with routes that leave the keys on the default upstream, with the keys on a named upstream, and
# with the keys mirrored (tests/bench/route_cost.py).
# Usage: scripts/bench-routes.sh     Env: CORRAL_BIN (skip the build), REQUESTS (per run, default
#        200000), ROUNDS (default 3)
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

corral_bin=$(corral_release_bin)

echo "== $(date -u +%FT%TZ) $(git -C "$CORRAL_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== reproduce: CORRAL_BIN=$corral_bin REQUESTS=${REQUESTS:-200000} ROUNDS=${ROUNDS:-3} scripts/bench-routes.sh"
/usr/bin/python3 "$CORRAL_ROOT/tests/bench/route_cost.py" --corral "$corral_bin" \
  --requests "${REQUESTS:-200000}" --rounds "${ROUNDS:-3}"
