#!/usr/bin/env bash
# Builds Corral and runs it with config/corral.yaml (or $CORRAL_CONFIG). When the configured
# upstream is on this machine and nothing listens there, starts a redis-server for it first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

config=${CORRAL_CONFIG:-$CORRAL_ROOT/config/corral.yaml}
install_packages
build_preset release
corral=$CORRAL_ROOT/build/release/src/corral
"$corral" --check-config "$config" >/dev/null

# The upstream address as the config states it: redis://[user:pass@]host:port[/db].
address=$(sed -nE 's/^[[:space:]]*address:[[:space:]]*"?(redis:\/\/[^"[:space:]]+)"?.*/\1/p' "$config" | head -n 1)
hostport=${address#redis://}
hostport=${hostport##*@}
hostport=${hostport%%/*}
host=${hostport%:*}
port=${hostport##*:}

redis_pid=""
cleanup() { [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
if [[ "$host" == "127.0.0.1" || "$host" == "localhost" ]] && ! redis-cli -h "$host" -p "$port" ping >/dev/null 2>&1; then
  datadir=$(mktemp -d)
  echo "== no Redis on $host:$port: starting redis-server there (data in $datadir)"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$datadir" \
    >"$datadir/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

echo "== corral -c $config"
"$corral" -c "$config" &
corral_pid=$!
trap 'kill $corral_pid 2>/dev/null; cleanup' EXIT INT TERM
wait $corral_pid
