#!/usr/bin/env bash
# Instructions per loopback request through one client of load_bench, counted by callgrind (the
# load of a shared machine does not change them): the whole program's (client and server), and the
# middleware's own (the inclusive cost of its `handle` and of polling its future, less the send it
# wraps, `Next::run`'s future). Each is (count at 2,500 requests − count at 500) ÷ 2,000.
#
#   scripts/instructions.sh [CLIENT]    CLIENT: pacer (default), pacer_no_retry, pacer_headers,
#                                       governor, plain, floor, floor_no_retry (the least a
#                                       limiter that keys by endpoint and retries must do)
#   scripts/instructions.sh CLIENT parts   also where Pacer's own instructions go: callgrind
#                                       collecting only inside the middleware (its `handle`, its
#                                       future's polls, not the send it wraps), the functions'
#                                       own instructions per request, largest first
#
# Needs valgrind (apt-get install valgrind) and python3. The whole-program figure moves by about
# ±1,500 between runs (tokio's idle loops); the middleware's own figure is steady to a few dozen.
set -euo pipefail
client=${1:-pacer}
parts=${2:-}
cd "$(dirname "$0")/.."
cargo build --release -q -p reqwest-pacer --example load_bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for n in 500 2500; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$n" \
        target/release/examples/load_bench sequential "$client" "$n" >/dev/null 2>&1
done
python3 - "$out" "$client" <<'PY'
import re, subprocess, sys

out, client = sys.argv[1], sys.argv[2]

def inclusive(n):
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", f"{out}/cg.{n}"],
        capture_output=True, text=True, check=True).stdout
    costs, total = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) (?:\([^)]*\))?\s*PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S.*?)(?: \[.*\])?$", line)
        if m:
            name = m.group(2)
            costs[name] = max(costs.get(name, 0), int(m.group(1).replace(",", "")))
    return costs, total

(a, ta), (b, tb) = inclusive(500), inclusive(2500)
per = lambda name: (b.get(name, 0) - a.get(name, 0)) / 2000

def pick(pattern):
    names = [k for k in b if re.search(pattern, k)]
    return max((per(k) for k in names), default=0.0)

own = None
if client != "plain":
    mw = ("PacerMiddleware" if client.startswith("pacer")
          else "FloorMiddleware" if client.startswith("floor") else "GovernorMiddleware")
    handle = pick(rf"{mw}.*::handle$")
    future = max(pick(rf"{mw}.*::handle::\{{\{{closure"), pick(rf"{mw}::run::\{{\{{closure"),
                 pick(r"<tracing::instrument::Instrumented<T> as core::future::future::Future>::poll$"))
    send = pick(r"^\?\?\?:reqwest_middleware::middleware::Next::run::\{\{closure")
    own = handle + future - send
print(f"client {client}: {(tb - ta) / 2000:,.0f} instructions per request"
      + ("" if own is None else f", {own:,.0f} of them the middleware's own"))
PY
if [ "$parts" = parts ] && [ "$client" != plain ] && [ "${client#pacer}" != "$client" ]; then
    for n in 500 2500; do
        valgrind --tool=callgrind --callgrind-out-file="$out/own.$n" --collect-atstart=no \
            '--toggle-collect=*Middleware for reqwest_pacer::middleware::PacerMiddleware>::handle' \
            '--toggle-collect=*tracing::instrument::Instrumented*poll' \
            '--toggle-collect=reqwest_middleware::middleware::Next::run::{{closure}}' \
            target/release/examples/load_bench sequential "$client" "$n" >/dev/null 2>&1
    done
    python3 - "$out" <<'PY'
import re, subprocess, sys

out = sys.argv[1]

def own(n):
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", f"{out}/own.{n}"],
        capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S.*?)(?: \[.*\])?$", line)
        if m:
            costs[m.group(2)] = int(m.group(1).replace(",", ""))
    return costs

a, b = own(500), own(2500)
rows = sorted(((b[k] - a.get(k, 0)) / 2000, k) for k in b)[::-1]
total = next((v for v, k in rows if k == "PROGRAM TOTALS"), 0.0)
print(f"Pacer's own, collected inside the middleware: {total:,.0f} per request; by function:")
for v, k in rows:
    if k != "PROGRAM TOTALS" and v >= 10:
        print(f"{v:8,.0f}  {k.removeprefix('???:')[:120]}")
PY
fi
