#!/usr/bin/env bash
# The fleet load benchmark against a Redis of its own on port 6390 (started here, stopped at the
# end), optionally restarted empty in the middle of the run.
#
#   scripts/fleet-load/run.sh MEMBERS [restart]
#
# Runs `fleet_load --members MEMBERS --seconds 60 --warmup 10` and prints its JSON line. With
# `restart`, Redis is shut down 31 s in (nothing saved) and started again 2 s later: the fleet's
# keys and the Lua library are gone, and the members reform the fleet by themselves.
set -euo pipefail
members=${1:?usage: run.sh MEMBERS [restart]}
restart=${2:-}
port=6390
ulimit -n 20000 || true
cd "$(dirname "$0")/../.."
cargo build --release -q -p pacer-redis --example fleet_load
start_redis() {
  redis-server --port "$port" --save '' --appendonly no --daemonize yes \
    --logfile /tmp/pacer-fleet-load-redis.log --maxclients 10000
  sleep 1
}
start_redis
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
target/release/examples/fleet_load --members "$members" --seconds 60 --warmup 10 \
  --url "redis://127.0.0.1:$port" &
bench=$!
if [ "$restart" = restart ]; then
  sleep 31
  redis-cli -p "$port" shutdown nosave >/dev/null
  sleep 2
  start_redis
fi
wait "$bench"
