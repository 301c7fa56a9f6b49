#!/usr/bin/env bash
# The EMFILE spins the examples find in beanstalkd (examples/beanstalkd) and tornado
# (examples/python/py-tornado.toml), shown live: each server runs for real under a low
# descriptor limit, a dozen clients connect on 127.0.0.1 and hold, and after one second the
# server's CPU time and its count of logged accept failures are read. A server that pauses its
# listener on EMFILE spends next to no CPU; one that spins spends about the whole second.
#
#   bash bench/live_emfile_spin.sh
#
# Bounded: one server at a time, 12 connections, 1 s each, loopback only.
set -uo pipefail
cd "$(dirname "$0")/.."
hz=$(getconf CLK_TCK)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run NAME LIMIT PORT COMMAND...: the server under `ulimit -n LIMIT`, listening on PORT.
run() {
  local name=$1 limit=$2 port=$3
  shift 3
  (ulimit -n "$limit"; exec "$@") 2>"$log" >/dev/null &
  local pid=$!
  for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" 2>/dev/null && break
    sleep 0.1
  done
  local before
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  python3 - "$port" <<'PY'
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(12)]
time.sleep(1.0)
PY
  local after
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  printf '%-12s %-8s %10s %12s\n' "$name" "$limit" "$(awk -v t=$((after - before)) -v hz="$hz" 'BEGIN{printf "%.2f s", t/hz}')" \
    "$(grep -c 'Too many open files' "$log")"
}

printf '%-12s %-8s %10s %12s\n' server ulimit "CPU in 1 s" "EMFILE lines"
command -v beanstalkd >/dev/null && run beanstalkd 8 11399 beanstalkd -l 127.0.0.1 -p 11399
/usr/bin/python3 -c 'import tornado' 2>/dev/null &&
  run tornado 16 18096 /usr/bin/python3 examples/python/tornado_http.py --port 18096
