#!/usr/bin/env bash
# Pacer's middleware against server-side rate limiters it did not write: nginx's `limit_req`
# (Debian's nginx-light; `nginx` answers at once with a bare 429, `nginx-default` as a site
# leaves it: the burst queued and a bare 503), HAProxy's stick-table rate (Debian's haproxy), express-rate-limit
# (npm), Flask-Limiter (PyPI) and tower_governor (crates.io: the governor crate's GCRA). Each
# case runs `pacer-sim live` with 2 instances for DURATION (default 2m) in each mode (default:
# aimd and pacer), against a freshly started server, with every request costing 1 unit (every
# one of them counts requests). Installs or builds what it needs (apt, npm, pip, cargo) into
# WORK (default: a temporary directory). docs/controllers.md has the
# figures ("Against real server-side limiters").
#
#   scripts/real-limiters/run.sh [nginx] [nginx-default] [haproxy] [express-1s] [express-10s] [express-60s]
#                                [express-1s-bare] [express-10s-bare] [express-10s-bare-500]
#                                [express-60s-bare] [flask-10s] [flask-10s-counter] [flask-60s]
#                                [flask-10s-bare] [governor-10s] [governor-10s-fields]
#
# The express -bare cases run express-rate-limit without its fields: only `Retry-After` on a
# 429 (express-10s-bare-500: 500 per 10 s, a quota of 3,000 a minute, twice the clients' start
# rate, so their first throttle comes 15-20 s in, as in the simulator); flask-10s-bare runs Flask-Limiter with none at all (a bare 429). The governor cases'
# 429 has a `Retry-After` in whole seconds rounded down (0 while the wait is under a second);
# governor-10s-fields adds its x-ratelimit-limit and -remaining (no reset).
#
# PHASE=SECONDS sends one request to each freshly started server and waits that long before
# the clients start: a server that starts its window at a key's first request (express-rate-
# limit's) is then that far into it, and its first boundary comes a window less PHASE in.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-$(mktemp -d)}
DURATION=${DURATION:-2m}
MODES=${MODES:-"aimd pacer"}
SERVER_PID=""

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

wait_port() { # a TCP connect, not an HTTP request: a request would use up quota
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

start_nginx() { # $1 the configuration file (default nginx.conf)
  command -v nginx >/dev/null || apt-get install -y nginx-light >/dev/null
  mkdir -p "$WORK/nginx/logs"
  nginx -c "$HERE/${1:-nginx.conf}" -p "$WORK/nginx/" &
  SERVER_PID=$!
  wait_port 8081
}

start_haproxy() {
  command -v haproxy >/dev/null || apt-get install -y haproxy >/dev/null
  haproxy -f "$HERE/haproxy.cfg" -db >/dev/null 2>&1 &
  SERVER_PID=$!
  wait_port 8083
}

start_express() { # $1 window in ms, $2 limit, $3 `none` for no fields
  if [ ! -d "$WORK/express/node_modules/express-rate-limit" ]; then
    mkdir -p "$WORK/express"
    cp "$HERE/package.json" "$HERE/server.js" "$WORK/express/"
    (cd "$WORK/express" && npm install --no-audit --no-fund >/dev/null 2>&1)
  fi
  WINDOW_MS=$1 LIMIT=$2 FIELDS=${3:-draft-8} PORT=8082 node "$WORK/express/server.js" >/dev/null &
  SERVER_PID=$!
  wait_port 8082
}

start_flask() { # $1 window in s, $2 limit, $3 strategy, $4 `none` for no fields
  if [ ! -x "$WORK/flask/bin/python" ]; then
    python3 -m venv "$WORK/flask"
    "$WORK/flask/bin/pip" install --quiet -r "$HERE/requirements.txt"
  fi
  WINDOW=$1 LIMIT=$2 STRATEGY=$3 FIELDS=${4:-} PORT=8084 "$WORK/flask/bin/python" "$HERE/flask_server.py" &
  SERVER_PID=$!
  wait_port 8084
}

start_governor() { # $1 window in s, $2 limit, $3 `headers` for its fields
  cargo build --release --quiet --locked --manifest-path "$HERE/governor-server/Cargo.toml" \
    --target-dir "$WORK/governor"
  WINDOW=$1 LIMIT=$2 FIELDS=${3:-} PORT=8085 "$WORK/governor/release/governor-server" &
  SERVER_PID=$!
  wait_port 8085
}

# SIM=path runs another build of pacer-sim (an earlier version's, to compare).
if [ -z "${SIM:-}" ]; then
  cargo build --release --quiet -p pacer-sim --manifest-path "$ROOT/Cargo.toml"
  SIM="$ROOT/target/release/pacer-sim"
fi

run_case() { # $1 name, then the server's start command, --, URL and quota a minute
  local name=$1 mode
  shift
  local start=()
  while [ "$1" != "--" ]; do start+=("$1"); shift; done
  shift
  local url=$1 quota=$2
  echo "== $name"
  for mode in $MODES; do
    "${start[@]}"
    if [ -n "${PHASE:-}" ]; then
      curl -s -o /dev/null "$url"
      sleep "$PHASE"
    fi
    "$SIM" live --target "$url" --instances 2 --duration "$DURATION" --speed 1 --costs one \
      --quota "$quota" --mode "$mode" --quiet | grep -E "^\| ($mode|Mode|---)" | \
      { if [ "$mode" = "${MODES%% *}" ]; then cat; else grep -E "^\| $mode"; fi; }
    stop_server
    sleep 1
  done
}

CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(nginx express-1s express-10s express-60s)
for c in "${CASES[@]}"; do
  case $c in
    nginx) run_case "nginx limit_req, 5 r/s, burst 20" start_nginx -- http://127.0.0.1:8081/ 300 ;;
    nginx-default) run_case "nginx limit_req, 5 r/s, burst 20 queued, bare 503" start_nginx nginx-default.conf -- http://127.0.0.1:8081/ 300 ;;
    haproxy) run_case "HAProxy http_req_rate, 100 per 10 s, refusals counted" start_haproxy -- http://127.0.0.1:8083/ 600 ;;
    express-1s) run_case "express-rate-limit, 10 per 1 s" start_express 1000 10 -- http://127.0.0.1:8082/ 600 ;;
    express-10s) run_case "express-rate-limit, 100 per 10 s" start_express 10000 100 -- http://127.0.0.1:8082/ 600 ;;
    express-60s) run_case "express-rate-limit, 600 per 60 s" start_express 60000 600 -- http://127.0.0.1:8082/ 600 ;;
    express-1s-bare) run_case "express-rate-limit, 10 per 1 s, no fields" start_express 1000 10 none -- http://127.0.0.1:8082/ 600 ;;
    express-10s-bare) run_case "express-rate-limit, 100 per 10 s, no fields" start_express 10000 100 none -- http://127.0.0.1:8082/ 600 ;;
    express-10s-bare-500) run_case "express-rate-limit, 500 per 10 s, no fields" start_express 10000 500 none -- http://127.0.0.1:8082/ 3000 ;;
    express-60s-bare) run_case "express-rate-limit, 600 per 60 s, no fields" start_express 60000 600 none -- http://127.0.0.1:8082/ 600 ;;
    flask-10s) run_case "Flask-Limiter, 100 per 10 s, moving window" start_flask 10 100 moving-window -- http://127.0.0.1:8084/ 600 ;;
    flask-10s-counter) run_case "Flask-Limiter, 100 per 10 s, sliding-window counter" start_flask 10 100 sliding-window-counter -- http://127.0.0.1:8084/ 600 ;;
    flask-60s) run_case "Flask-Limiter, 600 per 60 s, moving window" start_flask 60 600 moving-window -- http://127.0.0.1:8084/ 600 ;;
    governor-10s) run_case "tower_governor (GCRA), 100 per 10 s, a burst of 100" start_governor 10 100 -- http://127.0.0.1:8085/ 600 ;;
    governor-10s-fields) run_case "tower_governor (GCRA), 100 per 10 s, its fields" start_governor 10 100 headers -- http://127.0.0.1:8085/ 600 ;;
    flask-10s-bare) run_case "Flask-Limiter, 100 per 10 s, moving window, no fields" start_flask 10 100 moving-window none -- http://127.0.0.1:8084/ 600 ;;
    *) echo "unknown case $c: nginx, nginx-default, haproxy, express-1s, express-10s, express-60s, express-1s-bare, express-10s-bare, express-60s-bare, flask-10s, flask-10s-counter, flask-60s or flask-10s-bare" >&2; exit 2 ;;
  esac
done
