#!/usr/bin/env bash
# `loopsim live` under hostile and heavy clients, on 127.0.0.1 only: prints a Markdown table of
# case | figure | target | verdict, one row per target, PASS or MISSED (never hidden).
#
#   bench/live_reliability.sh
#   LOOPSIM=build-bench/loopsim CASES="b d" bench/live_reliability.sh
#
# Cases (CASES picks some, default all: "a b c d e f g h i j k l m n"):
#   a  wrk -t1 -c1000 -d30s on /fast: 0 errors (connect, read, write, timeout, non-2xx); req/s.
#   b  slowloris: 500 connections each send one byte of a request head per second, never
#      ending it. Each should be closed by the server once the head timeout (10 s) passes:
#      0 still open 15 s after its connect. /fast probes at 2, 5 and 8 s must be answered.
#   c  EMFILE: the server under `ulimit -n 64`; 500 clients connect at once and hold their
#      request 2.5 s (the server's descriptors run out: the blocked phase, where its CPU is
#      sampled over 1 s), then each sends one `Connection: close` /fast and waits up to 10 s,
#      never retrying. All 500 answered; ~0% CPU while blocked (<= 2%); recovery = release to
#      last answer.
#   d  SIGTERM with 20 in flight: 20 keep-alive GET /slow?ms=2000 at once (handlers on a pool
#      of 20 threads, `--set loop.mode=pool --set loop.pool_threads=20`, where the build takes
#      --set), SIGTERM 200 ms after they are written, a new connection 100 ms later. 20 of 20
#      answered; exit status 0; the new connection refused or answered (accepted then reset is
#      a failure); time from SIGTERM to exit.
#   e  8 connections each write up to 100 MiB of pipelined GET /fast without reading (at most
#      20 s; stopped early if the server's RSS passes PIPELINE_RSS_CAP_MIB, default 1024),
#      while a ninth client times 200 sequential /fast. Server RSS sampled every 50 ms: peak
#      <= 64 MiB; /fast p50 <= 10 ms; RSS 2 s after the 8 close <= start + 8 MiB.
#   f  20,000 fuzzed requests (flipped bytes, cut lines, huge headers, garbage, pipelined
#      mixes; seed FUZZ_SEED, printed) over 64 connections at a time, against the sanitizer
#      build LOOPSIM_SANITIZE_BIN (default build-sanitize/loopsim; skipped, saying so, if
#      absent). Then the server must be alive, answer /fast, and its stderr hold no
#      "ERROR: AddressSanitizer", "ERROR: LeakSanitizer" or "runtime error": 0 crashes.
#   g  60 and then 200 connections pipeline GET /bytes?n=16777216 (16 MiB answers) and read
#      nothing for 4 s: server RSS before, at its peak, and 2 s after they close. Peak <= start +
#      256 KiB a connection (64 KiB of output and of input each, R13); after <= start + 8 MiB.
#   h  one keep-alive connection pipelines two GET /bytes?n=1000000: both answered within 5 s
#      (one write used to take the first whole, and the second stranded behind it).
#   i  --drain-timeout 3s, 10 keep-alive GET /slow?ms=2000 on the loop's thread (not a pool),
#      SIGTERM 200 ms after: exit status 4 within 3 s + one handler (2 s) of the signal.
#   j  --workers 4 --set loop.max_connections=8: 32 keep-alive connections, each answered and
#      held at once: 32 held.
#   k  --workers 2: 8 clients ask for /slow?ms=1000, one every 100 ms: the last answered within
#      4.5 s of the first connect (an even split answers it at 4.1 s; accepting on a worker that
#      serves, 6.0 s). Also run with --set loop.accept_thread=false, to show the difference.
#   l  wrk -t1 -c100 -d6s on /fast, SIGTERM 2 s in, wrk stopped (SIGINT) as soon as the server
#      has exited: 0 read and timeout errors (a request lost, or never answered); exit status 0.
#      A connection the drain closed after an answer saying `Connection: close` is reopened by
#      wrk, and refused by the closed listener: wrk counts that as a write error (its
#      nonblocking connect fails at the first write), reported apart. L_SET adds one --set
#      (L_SET=loop.drain_closes_gracefully=false shows the loop before: 100 read errors).
#   m  --drain-timeout 3s, 20 keep-alive GET /slow?ms=2000 on a pool of 4 threads (16 queued
#      behind the 4 running), SIGTERM 200 ms after: exit status 4 within 3 s + one handler (2 s)
#      of the signal, whatever the queue holds, with the count on stderr. Then the same with a
#      second SIGTERM 1.5 s after the first (during the drain: it stops at once, exit status 4,
#      the count on stderr), and 3.5 s after (once the drain has reset the clients; a server
#      that still waits for its pool then must not die by the signal, 143: exit status 4 with
#      the count, whether the signal found it running or it had exited already).
#   n  reload: --config with head_timeout 10s, rewritten to 1s, then SIGHUP: a new connection
#      that never ends its head gets 408 within 3 s (10 s before the reload), and the process
#      runs on. Then a file with a bad value and SIGHUP: refused on stderr with its line, the
#      process runs on and answers /fast.
#
# Environment: LOOPSIM (default build/loopsim), LOOPSIM_SANITIZE_BIN, CASES, A_SECONDS (30),
# A_CONNECTIONS (1000), FUZZ_SEED (20240917), FUZZ_REQUESTS (20000), PIPELINE_RSS_CAP_MIB.
# Relative binary paths are taken from the current directory, else from the repository root.
# The load clients of b-f are bench/live_tools/liveclient.cpp, compiled here with g++ into a
# temporary directory. wrk and g++ are installed with apt-get when missing (as root).
# About 2 minutes with every case (1 min 45 s on a 2-core machine, with g to l; m adds 11 s). Exits 0 when the table
# was printed, whatever the verdicts; 2 when it could not run.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
resolve() {  # a binary path: as given, else under the repository root
  case "$1" in /*) echo "$1" ;; *) if [ -e "$1" ]; then echo "$PWD/$1"; else echo "$root/$1"; fi ;; esac
}
LOOPSIM=$(resolve "${LOOPSIM:-build/loopsim}")
LOOPSIM_SANITIZE_BIN=$(resolve "${LOOPSIM_SANITIZE_BIN:-build-sanitize/loopsim}")
CASES=${CASES:-a b c d e f g h i j k l m n}
A_SECONDS=${A_SECONDS:-30}
A_CONNECTIONS=${A_CONNECTIONS:-1000}
FUZZ_SEED=${FUZZ_SEED:-20240917}
FUZZ_REQUESTS=${FUZZ_REQUESTS:-20000}
PIPELINE_RSS_CAP_MIB=${PIPELINE_RSS_CAP_MIB:-1024}

die() { echo "live_reliability: $*" >&2; exit 2; }
[ -x "$LOOPSIM" ] || die "no loopsim at $LOOPSIM (build it, or set LOOPSIM)"
for c in $CASES; do case "$c" in a|b|c|d|e|f|g|h|i|j|k|l|m|n) ;; *) die "unknown case '$c' in CASES (a b c d e f g h i j k l m n)" ;; esac; done
wants() { [[ " $CASES " == *" $1 "* ]]; }

need() {  # need COMMAND PACKAGE: Debian's package when the command is missing
  command -v "$1" >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "$1 is missing: apt-get install -y $2"
  echo "installing $2 (for $1)" >&2
  apt-get install -y "$2" >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y "$2" >/dev/null 2>&1; } ||
    die "could not install $2"
}
need g++ g++
{ wants a || wants l; } && need wrk wrk

# 1000 wrk connections, 500 slowloris sockets, and the server's side of each, in one session.
ulimit -Sn 4096 2>/dev/null || ulimit -Sn "$(ulimit -Hn)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/live_reliability.XXXXXX")
servers=()  # pids of the servers still running
cleanup() {
  local pid
  for pid in "${servers[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do
    for _ in $(seq 40); do alive "$pid" || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

alive() {  # running, not a zombie
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [ "${s:0:1}" != Z ]
}
untrack() {
  local keep=() p
  for p in "${servers[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  servers=("${keep[@]+"${keep[@]}"}")
}

# start_server NAME BINARY NOFILE [ARGS...]: sets srv_pid, srv_port, srv_err. NOFILE empty
# keeps this shell's limit. Returns 1 (srv_err says why) if it never said "listening on".
start_server() {
  local name=$1 bin=$2 nofile=$3 line
  shift 3
  srv_err=$tmp/$name.err
  local out=$tmp/$name.out
  if [ -n "$nofile" ]; then
    ( ulimit -n "$nofile" && exec "$bin" live --listen 127.0.0.1:0 "$@" ) >"$out" 2>"$srv_err" &
  else
    "$bin" live --listen 127.0.0.1:0 "$@" >"$out" 2>"$srv_err" &
  fi
  srv_pid=$!
  servers+=("$srv_pid")
  local deadline=$((SECONDS + 10))
  while :; do
    line=$(head -n1 "$out" 2>/dev/null || true)
    if [[ $line =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
      srv_port=${BASH_REMATCH[1]}
      return 0
    fi
    if ! alive "$srv_pid" || ((SECONDS >= deadline)); then
      stop_server "$srv_pid" 0
      return 1
    fi
    sleep 0.05
  done
}

# stop_server PID GRACE: SIGTERM, up to GRACE s, then SIGKILL; sets stop_rc, the exit status
# (128 + signal when killed). Not in $(...): only this shell can wait for its children.
stop_server() {
  local pid=$1 grace=$2 i
  stop_rc=0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 20; i++)); do alive "$pid" || break; sleep 0.05; done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || stop_rc=$?
  untrack "$pid"
}

# reap PID GRACE: the exit status of a server that should have exited by now (stop_rc); one
# still running is stopped as stop_server does.
reap() {
  if alive "$1"; then
    stop_server "$1" "$2"
    return
  fi
  stop_rc=0
  wait "$1" 2>/dev/null || stop_rc=$?
  untrack "$1"
}

# others FILE: the outcomes other than answered, e.g. "timeout 13, reset 2" (empty if none).
others() { awk -F'[_=]' '/^outcome_/ && $2 != "answered" { printf "%s%s %s", sep, $2, $3; sep = ", " }' "$1"; }
field() { sed -n "s/^$1=//p" "$2" | head -n1; }  # field KEY FILE: a key=value figure
verdict() { if [ "${1:-0}" = 1 ]; then echo PASS; else echo MISSED; fi; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }  # a <= b, decimals
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# run_client OUT SUBCOMMAND ARGS...: liveclient's figures into $tmp/OUT; on failure a MISSED row
# for the case (named by client_case) and status 1.
client_case=""
run_client() {
  local out=$1
  shift
  if ! "$liveclient" "$@" >"$tmp/$out" 2>"$tmp/$out.err"; then
    row "$client_case" "liveclient $1 failed: $(head -c 200 "$tmp/$out.err")" "—" MISSED
    return 1
  fi
}

rows=()
row() { rows+=("| $1 | $2 | $3 | $4 |"); }

help=$("$LOOPSIM" live --help 2>&1 || true)
supports() { [[ $help == *"$1"* ]]; }
notes=()
for flag in --set --drain-timeout --config; do
  supports "$flag" || notes+=("not supported by this build: $flag")
done

estimate=15  # compiling liveclient
for c in $CASES; do
  case "$c" in a) estimate=$((estimate + A_SECONDS + 2)) ;; b) estimate=$((estimate + 17)) ;; c) estimate=$((estimate + 14)) ;;
    d) estimate=$((estimate + 16)) ;; e) estimate=$((estimate + 25)) ;; f) estimate=$((estimate + 50)) ;;
    g) estimate=$((estimate + 20)) ;; h) estimate=$((estimate + 6)) ;; i) estimate=$((estimate + 26)) ;;
    j) estimate=$((estimate + 4)) ;; k) estimate=$((estimate + 36)) ;; l) estimate=$((estimate + 17)) ;;
    m) estimate=$((estimate + 45)) ;; esac
done
echo "live_reliability: $LOOPSIM, cases: $CASES; at most about $estimate s (cases end sooner when the server does well)"
for n in "${notes[@]+"${notes[@]}"}"; do echo "$n"; done

echo "compiling bench/live_tools/liveclient.cpp" >&2
g++ -std=c++17 -O2 -o "$tmp/liveclient" "$root/bench/live_tools/liveclient.cpp" || die "liveclient did not compile"
liveclient=$tmp/liveclient
started=$SECONDS

case_a() {
  start_server a "$LOOPSIM" "" || { row "a. wrk -c$A_CONNECTIONS ${A_SECONDS}s" "server did not start: $(head -c 200 "$srv_err")" "0 errors" MISSED; return; }
  wrk -t1 -c"$A_CONNECTIONS" -d"${A_SECONDS}s" --latency "http://127.0.0.1:$srv_port/fast" >"$tmp/a.wrk" 2>&1 || true
  stop_server "$srv_pid" 5
  local rc=$stop_rc
  local rps errors non2xx requests
  rps=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$tmp/a.wrk")
  requests=$(awk '/requests in/ { print $1 }' "$tmp/a.wrk")
  # "Socket errors: connect 0, read 0, write 0, timeout 0" appears only when one is not 0.
  errors=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$tmp/a.wrk")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $5 }' "$tmp/a.wrk")
  local sock_line
  sock_line=$(grep -o 'Socket errors:.*' "$tmp/a.wrk" || echo "Socket errors: none")
  errors=${errors:-0}
  non2xx=${non2xx:-0}
  local total=$((errors + non2xx))
  local ok=0
  [ -n "$rps" ] && [ "$total" = 0 ] && ok=1
  row "a. wrk -t1 -c$A_CONNECTIONS -d${A_SECONDS}s /fast" \
    "$total errors ($sock_line; non-2xx $non2xx); ${rps:-?} req/s, ${requests:-?} requests; exit $rc" "0 errors" "$(verdict $ok)"
}

case_b() {
  start_server b "$LOOPSIM" "" || { row "b. slowloris 500" "server did not start: $(head -c 200 "$srv_err")" "0 open" MISSED; return; }
  client_case="b. slowloris 500"
  run_client b.out slowloris --port "$srv_port" --conns 500 --seconds 15 --probes-at 2,5,8 || { stop_server "$srv_pid" 5; return; }
  local still_alive=1
  alive "$srv_pid" || still_alive=0
  stop_server "$srv_pid" 5
  local open closed connected pmin p50 pmax probes ok_probes pmaxms
  open=$(field still_open "$tmp/b.out")
  closed=$(field closed_by_server "$tmp/b.out")
  connected=$(field connected "$tmp/b.out")
  pmin=$(field close_after_s_min "$tmp/b.out")
  p50=$(field close_after_s_p50 "$tmp/b.out")
  pmax=$(field close_after_s_max "$tmp/b.out")
  probes=$(field probes "$tmp/b.out")
  ok_probes=$(field probes_ok "$tmp/b.out")
  pmaxms=$(field probe_max_ms "$tmp/b.out")
  local closes=""
  [ "${closed:-0}" -gt 0 ] && closes=", after ${pmin}-${pmax} s (p50 ${p50} s)"
  row "b. slowloris 500, 1 byte/s" \
    "$open of $connected still open 15 s after connect; $closed closed by the server$closes" \
    "0 open after head timeout + 5 s" "$(verdict $([ "$open" = 0 ] && echo 1))"
  row "b. /fast during slowloris" "$ok_probes of $probes probes answered (slowest ${pmaxms} ms); server alive: $([ $still_alive = 1 ] && echo yes || echo no)" \
    "all answered" "$(verdict $([ "$ok_probes" = "$probes" ] && [ $still_alive = 1 ] && echo 1))"
}

case_c() {
  start_server c "$LOOPSIM" 64 || { row "c. EMFILE" "server did not start under ulimit -n 64: $(head -c 200 "$srv_err")" "500 answered" MISSED; return; }
  client_case="c. EMFILE"
  run_client c.out burst --port "$srv_port" --clients 500 --hold-ms 2500 --timeout-s 10 --pid "$srv_pid" || { stop_server "$srv_pid" 5; return; }
  local probe_ok=0
  "$liveclient" get --port "$srv_port" --timeout-ms 2000 >"$tmp/c.probe" && probe_ok=1
  stop_server "$srv_pid" 5
  local answered cpu fds rec lost
  answered=$(field answered_2xx "$tmp/c.out")
  cpu=$(field cpu_pct_blocked "$tmp/c.out")
  fds=$(field server_sockets_blocked "$tmp/c.out")
  rec=$(field recovery_ms "$tmp/c.out")
  lost=$(others "$tmp/c.out")
  row "c. EMFILE (ulimit -n 64), 500 clients" \
    "$answered of 500 answered${lost:+ (lost: $lost)}; last answer ${rec} ms after release; /fast after: $([ $probe_ok = 1 ] && echo answered || echo NOT answered)" \
    "500 answered, 0 lost" "$(verdict $([ "$answered" = 500 ] && [ $probe_ok = 1 ] && echo 1))"
  row "c. CPU while blocked" "${cpu:-?}% over 1 s (the server held ${fds:-?} sockets; descriptor limit 64)" "~0% (<= 2%)" \
    "$(verdict $([ -n "$cpu" ] && le "$cpu" 2 && echo 1))"
}

case_d() {
  # 20 handlers of 2 s at once need 20 handler threads; on the loop's thread they take 40 s.
  local started_d=0 mode
  if supports --set; then
    mode="handlers on a pool of 20 threads"
    start_server d "$LOOPSIM" "" --set loop.mode=pool --set loop.pool_threads=20 && started_d=1
    if [ $started_d = 0 ]; then
      echo "not supported by this build: --set loop.pool_threads ($(head -n1 "$srv_err"))"
      mode="handlers on the pool's default threads (this build refused loop.pool_threads=20)"
      start_server d "$LOOPSIM" "" --set loop.mode=pool && started_d=1
    fi
  fi
  if [ $started_d = 0 ]; then
    mode="handlers on the loop's thread, one after another (this build has no --set loop.mode=pool)"
    start_server d "$LOOPSIM" "" && started_d=1
  fi
  [ $started_d = 1 ] ||
    { row "d. SIGTERM, 20 in flight" "server did not start: $(head -c 200 "$srv_err")" "20 of 20" MISSED; return; }
  local pid=$srv_pid
  client_case="d. SIGTERM, 20 in flight"
  run_client d.out inflight --port "$srv_port" --pid "$pid" --count 20 --path '/slow?ms=2000' \
    --signal-after-ms 200 --probe-after-ms 100 --wait-s 15 || { stop_server "$pid" 5; return; }
  local exited=1
  alive "$pid" && exited=0
  reap "$pid" 0  # already gone, or killed now: it outlived the 15 s bound
  local rc=$stop_rc
  local answered probe exit_ms closed_after lost
  answered=$(field answered_200 "$tmp/d.out")
  probe=$(field probe "$tmp/d.out")
  exit_ms=$(field exit_after_signal_ms "$tmp/d.out")
  closed_after=$(field closed_after_answer "$tmp/d.out")
  lost=$(others "$tmp/d.out")
  row "d. SIGTERM, 20 × /slow?ms=2000 in flight" \
    "$answered of 20 answered${lost:+ (others, 15 s after SIGTERM: $lost)}; $closed_after keep-alives closed by the server after their answer; $mode" \
    "20 of 20" "$(verdict $([ "$answered" = 20 ] && echo 1))"
  local exit_text="exit status $rc, ${exit_ms} ms after SIGTERM"
  [ $exited = 0 ] && exit_text="still running 15 s after SIGTERM, killed (status $rc)"
  row "d. exit after SIGTERM" "$exit_text" "status 0" "$(verdict $([ $exited = 1 ] && [ "$rc" = 0 ] && echo 1))"
  local probe_ok=0
  [[ $probe == refused || $probe == answered-200 ]] && probe_ok=1
  row "d. new connection 100 ms after SIGTERM" "$probe" "refused, or answered" "$(verdict $probe_ok)"
}

case_e() {
  start_server e "$LOOPSIM" "" || { row "e. 8 × 100 MiB pipelined" "server did not start: $(head -c 200 "$srv_err")" "<= 64 MiB" MISSED; return; }
  client_case="e. 8 × 100 MiB pipelined"
  run_client e.out pipeline --port "$srv_port" --pid "$srv_pid" --conns 8 --bytes $((100 << 20)) --seconds 20 \
    --probes 200 --rss-cap-mib "$PIPELINE_RSS_CAP_MIB" || { stop_server "$srv_pid" 5; return; }
  stop_server "$srv_pid" 5
  local start peak after written flood capped p50 p99 okp tmo fail hwm closed
  start=$(field rss_start_kib "$tmp/e.out")
  peak=$(field rss_peak_kib "$tmp/e.out")
  hwm=$(field vmhwm_kib "$tmp/e.out")
  after=$(field rss_after_kib "$tmp/e.out")
  written=$(field written_mib "$tmp/e.out")
  flood=$(field flood_s "$tmp/e.out")
  capped=$(field rss_capped "$tmp/e.out")
  closed=$(field closed_by_server "$tmp/e.out")
  p50=$(field probe_p50_ms "$tmp/e.out")
  p99=$(field probe_p99_ms "$tmp/e.out")
  okp=$(field probes_ok "$tmp/e.out")
  tmo=$(field probe_timeouts "$tmp/e.out")
  fail=$(field probe_failures "$tmp/e.out")
  local cap_note=""
  [ "$capped" = 1 ] && cap_note="; writing stopped at the ${PIPELINE_RSS_CAP_MIB} MiB safety cap"
  row "e. 8 × 100 MiB pipelined, unread: RSS" \
    "start $(mib "$start") MiB, peak $(mib "$peak") MiB (VmHWM $(mib "$hwm")); $written MiB written in $flood s, $closed connections closed by the server$cap_note" \
    "<= 64 MiB" "$(verdict $([ "$peak" -le $((64 * 1024)) ] && echo 1))"
  row "e. /fast latency meanwhile" "p50 $p50 ms, p99 $p99 ms ($okp answered, $tmo timed out, $fail failed)" \
    "p50 <= 10 ms" "$(verdict $([ "$okp" -gt 0 ] && le "$p50" 10 && echo 1))"
  row "e. RSS 2 s after the 8 close" "$(mib "$after") MiB (start $(mib "$start") MiB)" "<= start + 8 MiB" \
    "$(verdict $([ "$after" -ge 0 ] && [ "$after" -le $((start + 8 * 1024)) ] && echo 1))"
}

case_f() {
  local name="f. $FUZZ_REQUESTS fuzzed requests, seed $FUZZ_SEED"
  if [ ! -x "$LOOPSIM_SANITIZE_BIN" ]; then
    row "$name" "skipped: no sanitizer build at $LOOPSIM_SANITIZE_BIN (set LOOPSIM_SANITIZE_BIN)" "0 crashes" SKIPPED
    return
  fi
  # Reports go to stderr and the process goes on where it can: all of them are counted.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=0:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=0}
  start_server f "$LOOPSIM_SANITIZE_BIN" "" || { row "$name" "server did not start: $(head -c 200 "$srv_err")" "0 crashes" MISSED; return; }
  local pid=$srv_pid err=$srv_err
  client_case=$name
  run_client f.out fuzz --port "$srv_port" --requests "$FUZZ_REQUESTS" --seed "$FUZZ_SEED" --conns 64 --seconds 90 || { stop_server "$pid" 5; return; }
  local survived=0 probe_ok=0
  alive "$pid" && survived=1
  "$liveclient" get --port "$srv_port" --timeout-ms 3000 >"$tmp/f.probe" 2>&1 && probe_ok=1
  stop_server "$pid" 10
  local rc=$stop_rc
  local reports
  reports=$(grep -cE 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error' "$err" || true)
  local sent responses resets timeouts c2 c4 c5 elapsed
  sent=$(field requests "$tmp/f.out")
  responses=$(field responses "$tmp/f.out")
  resets=$(field resets "$tmp/f.out")
  timeouts=$(field timeouts "$tmp/f.out")
  c2=$(field responses_2xx "$tmp/f.out")
  c4=$(field responses_4xx "$tmp/f.out")
  c5=$(field responses_5xx "$tmp/f.out")
  elapsed=$(field elapsed_s "$tmp/f.out")
  local crashes=$((reports + (1 - survived)))
  row "$name" \
    "$crashes crashes: alive after $(field connections "$tmp/f.out") connections: $([ $survived = 1 ] && echo yes || echo NO), /fast after: $([ $probe_ok = 1 ] && echo answered || echo NOT answered), sanitizer reports: $reports, exit status on SIGTERM $rc; $responses responses (2xx ${c2:-0}, 4xx ${c4:-0}, 5xx ${c5:-0}), $resets resets, $timeouts client timeouts, ${elapsed} s" \
    "0 crashes" "$(verdict $([ $crashes = 0 ] && [ $probe_ok = 1 ] && echo 1))"
  if [ "$reports" -gt 0 ] || [ $survived = 0 ]; then
    echo "--- sanitizer build stderr (first 40 lines) ---" >&2
    head -n 40 "$err" >&2
  fi
}

case_g() {
  local conns
  for conns in 60 200; do
    start_server "g$conns" "$LOOPSIM" "" ||
      { row "g. $conns × 16 MiB answers unread" "server did not start: $(head -c 200 "$srv_err")" "bounded" MISSED; continue; }
    client_case="g. $conns × 16 MiB answers unread"
    run_client "g$conns-client.out" pipeline --port "$srv_port" --pid "$srv_pid" --conns "$conns" --bytes $((1 << 20)) \
      --seconds 4 --probes 50 --path '/bytes?n=16777216' || { stop_server "$srv_pid" 5; continue; }
    stop_server "$srv_pid" 5
    local start peak after
    start=$(field rss_start_kib "$tmp/g$conns-client.out")
    peak=$(field rss_peak_kib "$tmp/g$conns-client.out")
    after=$(field rss_after_kib "$tmp/g$conns-client.out")
    row "g. $conns × 16 MiB answers unread: RSS" "before $(mib "$start") MiB, peak $(mib "$peak") MiB, 2 s after close $(mib "$after") MiB" \
      "peak <= before + $((conns / 4)) MiB; after <= before + 8 MiB" \
      "$(verdict $([ "$peak" -le $((start + conns * 256)) ] && [ "$after" -le $((start + 8 * 1024)) ] && echo 1))"
  done
}

case_h() {
  start_server h "$LOOPSIM" "" || { row "h. 2 × 1 MB pipelined" "server did not start: $(head -c 200 "$srv_err")" "2 of 2" MISSED; return; }
  client_case="h. 2 × 1 MB pipelined"
  "$liveclient" pipelined --port "$srv_port" --paths '/bytes?n=1000000,/bytes?n=1000000' --timeout-ms 5000 >"$tmp/h-client.out" 2>&1 || true
  stop_server "$srv_pid" 5
  local answered
  answered=$(field answered "$tmp/h-client.out")
  row "h. 2 × 1 MB pipelined on one connection" "${answered:-0} of 2 answered in $(field ms "$tmp/h-client.out") ms" "2 of 2" \
    "$(verdict $([ "${answered:-0}" = 2 ] && echo 1))"
}

case_i() {
  start_server i "$LOOPSIM" "" --drain-timeout 3s ||
    { row "i. drain bounded" "server did not start: $(head -c 200 "$srv_err")" "<= 5 s" MISSED; return; }
  local pid=$srv_pid
  client_case="i. drain bounded"
  run_client i-client.out inflight --port "$srv_port" --pid "$pid" --count 10 --path '/slow?ms=2000' \
    --signal-after-ms 200 --probe-after-ms 100 --wait-s 25 || { stop_server "$pid" 5; return; }
  local exit_ms rc
  reap "$pid" 5
  rc=$stop_rc
  exit_ms=$(field exit_after_signal_ms "$tmp/i-client.out")
  row "i. --drain-timeout 3s, 10 × 2 s handlers on the loop, SIGTERM" "exit status $rc, ${exit_ms:-?} ms after SIGTERM ($(tail -n1 "$srv_err"))" \
    "status 4 within 5000 ms (3 s + one handler)" "$(verdict $([ "$rc" = 4 ] && [ -n "$exit_ms" ] && le "$exit_ms" 5000 && echo 1))"
}

case_j() {
  start_server j "$LOOPSIM" "" --workers 4 --set loop.max_connections=8 ||
    { row "j. --workers 4, cap 8" "server did not start: $(head -c 200 "$srv_err")" "32 held" MISSED; return; }
  client_case="j. --workers 4, cap 8"
  run_client j-client.out hold --port "$srv_port" --conns 32 --timeout-ms 3000 || { stop_server "$srv_pid" 5; return; }
  stop_server "$srv_pid" 5
  row "j. --workers 4, max_connections 8: 32 keep-alives" "$(field held "$tmp/j-client.out") held and answered" "32 held" \
    "$(verdict $([ "$(field held "$tmp/j-client.out")" = 32 ] && echo 1))"
}

case_k() {
  local layout at rc_text last
  for layout in "accept thread" "worker 0 accepts"; do
    at=()
    [ "$layout" = "worker 0 accepts" ] && at=(--set loop.accept_thread=false)
    start_server k "$LOOPSIM" "" --workers 2 "${at[@]}" ||
      { row "k. --workers 2, 8 × 1 s handlers ($layout)" "server did not start: $(head -c 200 "$srv_err")" "<= 4500 ms" MISSED; continue; }
    client_case="k. --workers 2, 8 × 1 s handlers ($layout)"
    run_client k-client.out burst --port "$srv_port" --clients 8 --hold-ms 0 --stagger-ms 100 --timeout-s 15 \
      --path '/slow?ms=1000' || { stop_server "$srv_pid" 5; continue; }
    stop_server "$srv_pid" 5
    last=$(field recovery_ms "$tmp/k-client.out")
    if [ "$layout" = "accept thread" ]; then
      row "k. --workers 2, 8 × /slow?ms=1000 one every 100 ms" \
        "$(field answered_2xx "$tmp/k-client.out") of 8 answered, the last ${last} ms after the first connect" \
        "8 of 8, <= 4500 ms" "$(verdict $([ "$(field answered_2xx "$tmp/k-client.out")" = 8 ] && le "${last:-99999}" 4500 && echo 1))"
    else
      row "k. the same, \`--set loop.accept_thread=false\` (the loop before)" "the last answered ${last} ms after the first connect" "(for comparison)" "—"
    fi
  done
}

case_l() {
  local sets=()
  [ -n "${L_SET:-}" ] && sets=(--set "$L_SET")
  start_server l "$LOOPSIM" "" "${sets[@]}" || { row "l. wrk -c100, SIGTERM" "server did not start: $(head -c 200 "$srv_err")" "0 errors" MISSED; return; }
  local pid=$srv_pid rc=0
  wrk -t1 -c100 -d6s "http://127.0.0.1:$srv_port/fast" >"$tmp/l.wrk" 2>&1 &
  local wrk_pid=$!
  sleep 2
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 200; i++)); do alive "$pid" || break; sleep 0.05; done
  reap "$pid" 1
  rc=$stop_rc
  # wrk stops at once when the server is gone: its reconnects to the closed port would count
  # as write errors, which are not what this case asks about.
  kill -INT "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" 2>/dev/null || true
  local connect read write timeout requests
  # "Socket errors: connect 0, read 0, write 0, timeout 0" appears only when one is not 0.
  read -r connect read write timeout < <(awk '/Socket errors/ { gsub(",", ""); print $4, $6, $8, $10 }' "$tmp/l.wrk")
  requests=$(awk '/requests in/ { print $1 }' "$tmp/l.wrk")
  row "l. wrk -t1 -c100 on /fast, SIGTERM 2 s in" \
    "${requests:-?} requests; errors: read ${read:-0}, timeout ${timeout:-0}; refused reconnects (wrk's write errors): ${write:-0}, connect ${connect:-0}; exit status $rc" \
    "0 read and timeout errors; status 0" \
    "$(verdict $([ "${read:-0}" = 0 ] && [ "${timeout:-0}" = 0 ] && [ "$rc" = 0 ] && echo 1))"
}

case_m() {
  local second name rc exit_ms second_ms last
  for second in "" 1500 3500; do
    name="m. --drain-timeout 3s, 20 × 2 s handlers on a pool of 4, SIGTERM"
    [ -n "$second" ] && name="$name, a second one $second ms after"
    start_server m "$LOOPSIM" "" --drain-timeout 3s --set loop.mode=pool --set loop.pool_threads=4 ||
      { row "$name" "server did not start: $(head -c 200 "$srv_err")" "status 4" MISSED; continue; }
    local pid=$srv_pid
    client_case=$name
    run_client m-client.out inflight --port "$srv_port" --pid "$pid" --count 20 --path '/slow?ms=2000' \
      --signal-after-ms 200 --probe-after-ms 100 --wait-s 15 ${second:+--second-signal-after-ms "$second"} ||
      { stop_server "$pid" 5; continue; }
    reap "$pid" 5
    rc=$stop_rc
    exit_ms=$(field exit_after_signal_ms "$tmp/m-client.out")
    last=$(tail -n1 "$srv_err")
    if [ -z "$second" ]; then
      row "$name" "exit status $rc, ${exit_ms:-?} ms after SIGTERM ($last)" \
        "status 4 within 5000 ms (3 s + one handler), the count on stderr" \
        "$(verdict $([ "$rc" = 4 ] && [[ $last == *unfinished* ]] && [ -n "$exit_ms" ] && le "$exit_ms" 5000 && echo 1))"
    else
      second_ms=$(field exit_after_second_signal_ms "$tmp/m-client.out")
      local when="${second_ms:-?} ms after the second SIGTERM"
      [ -z "$(field second_signal_after_ms "$tmp/m-client.out")" ] && when="exited before the second SIGTERM was due"
      row "$name" "exit status $rc, $when, ${exit_ms:-?} ms after the first ($last)" \
        "status 4 (not 143), the count on stderr" \
        "$(verdict $([ "$rc" = 4 ] && [[ $last == *unfinished* ]] && echo 1))"
    fi
  done
}

case_n() {
  local config=$tmp/n.toml name="n. SIGHUP reload"
  printf 'name = "live"\n[loop]\nhead_timeout = "10s"\n' >"$config"
  start_server n "$LOOPSIM" "" --config "$config" || { row "$name" "server did not start: $(head -c 200 "$srv_err")" "408 within 3 s" MISSED; return; }
  local pid=$srv_pid
  printf 'name = "live"\n[loop]\nhead_timeout = "1s"\n' >"$config"
  kill -HUP "$pid"
  sleep 0.5
  local took
  took=$(python3 - "$srv_port" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /fast HTTP/1.1\r\nHost: x\r\n")
began = time.monotonic()
s.settimeout(12)
data = s.recv(4096)
print(f"{int((time.monotonic() - began) * 1000)} {data[:12].decode(errors='replace')}")
PY
)
  printf 'name = "live"\n[loop]\nhead_timeout = "soon"\n' >"$config"
  kill -HUP "$pid"
  sleep 0.5
  local status refused
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$srv_port/fast" || true)
  refused=$(grep -c "reload refused" "$srv_err" || true)
  local ms=${took%% *}
  row "$name" "after the reload, 408 in ${ms:-?} ms (${took#* }); a bad file: $refused refusal(s) on stderr, /fast then $status; alive: $(alive "$pid" && echo yes || echo no)" \
    "408 within 3000 ms; the bad file refused; /fast 200" \
    "$(verdict $([ -n "$ms" ] && le "$ms" 3000 && [[ $took == *408* ]] && [ "$refused" = 1 ] && [ "$status" = 200 ] && echo 1))"
  stop_server "$pid" 5
}

for c in $CASES; do
  echo "case $c ..." >&2
  t=$SECONDS
  "case_$c"
  echo "case $c: $((SECONDS - t)) s" >&2
done

echo
echo "## loopsim live reliability ($(basename "$LOOPSIM"), $(nproc) cores, cases $CASES)"
echo
echo "| case | figure | target | verdict |"
echo "| --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
for n in "${notes[@]+"${notes[@]}"}"; do echo; echo "$n"; done
echo
echo "wall time: $((SECONDS - started)) s"
