#!/usr/bin/env bash
# Eight `pacer-sim live` processes (one instance each, 500 units a minute each: 4,000 against a
# quota of 3,000) started three seconds apart against one `pacer-sim serve`, in one mode; prints
# the server's own count (GET /stats) and each process's row.
#
#   scripts/fleet-live/run.sh MODE [DURATION]     MODE: fleet or pacer; DURATION default 5m
#
# `fleet` shares its fleet through the Redis at $REDIS_URL (default redis://127.0.0.1:6379; its
# pacer:f:* keys are deleted first). Needs a release build of pacer-sim and redis-cli.
set -euo pipefail
mode=${1:?fleet or pacer}
duration=${2:-5m}
redis=${REDIS_URL:-redis://127.0.0.1:6379}
cd "$(dirname "$0")/../.."
cargo build --release -q -p pacer-sim
bin=target/release/pacer-sim
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --port "$port" --quota 3000 --story free-run > "$work/serve.log" 2>&1 &
serve=$!
sleep 1
redis-cli -u "$redis" --scan --pattern 'pacer:f:*' | xargs -r redis-cli -u "$redis" del > /dev/null
pids=()
for i in 1 2 3 4 5 6 7 8; do
  "$bin" live --target "http://127.0.0.1:$port" --instances 1 --demand 500 --duration "$duration" \
    --mode "$mode" --seed "$i" --redis "$redis" --quiet --format csv > "$work/live_$i.csv" &
  pids+=($!)
  sleep 3
done
wait "${pids[@]}"
curl -s "http://127.0.0.1:$port/stats"
echo
for i in 1 2 3 4 5 6 7 8; do tail -n 1 "$work/live_$i.csv"; done
kill "$serve"
