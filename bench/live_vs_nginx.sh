#!/usr/bin/env bash
# `loopsim live` against nginx on GET /fast, on 127.0.0.1: req/s, p99 latency and the server's
# CPU per request, with wrk, keep-alive and `Connection: close`, at 1 worker and at one worker
# per core. Prints Markdown tables: each server's medians over the rounds, then the ratios
# loopsim / nginx against the targets, PASS or MISSED (never hidden):
#   requests per CPU-second >= 1.2 × nginx's on keep-alive, >= nginx's on close;
#   p99 <= nginx's.
#
#   bench/live_vs_nginx.sh
#   LOOPSIM=build-bench/loopsim ROUNDS=5 DURATION=20 bench/live_vs_nginx.sh
#
# Environment: LOOPSIM (default build/loopsim; a relative path is taken from the current
# directory, else from the repository root), ROUNDS (3), DURATION (seconds a run, 10),
# CONNECTIONS (64), WRK_THREADS (1), WORKERS (the worker counts, default "1 $(nproc)"),
# LIVE_ARGS (more arguments for `loopsim live`, e.g. "--reuse-port"; with several workers only).
#
# How: both servers run side by side, one idle while the other is measured; runs alternate
# between them (the first of each round alternating too) so that drift in the machine hits
# both alike. nginx is Debian's /usr/sbin/nginx (nginx-light) with its own config in a temp
# dir: `return 200 "fast\n"`, access_log off, keepalive_requests 1000000; master_process off at
# 1 worker (one process against one process), on with N workers. A run is
# `wrk -tT -cC -dDs --latency [-H 'Connection: close']`; CPU is utime + stime
# (/proc/PID/stat fields 14 and 15, clock ticks of `getconf CLK_TCK`) of the server process
# and all its descendants, read before and after the run; CPU per request is that over wrk's
# request count. A build that refuses --workers N gets "not supported by this build" in that
# row (and neither server is run for it). wrk and nginx-light are installed with apt-get when
# missing (as root). Exits 0 when the tables were printed, whatever the verdicts; 2 when it
# could not run.
# Answers: both answer /fast with a status line, Date, Content-Type, Content-Length and "fast\n";
# nginx adds `Server: nginx` (server_tokens off; nginx-light cannot drop the field) and, on
# keep-alive, `Connection: keep-alive`. So that both servers move the same bytes, loopsim is
# asked for /bytes?n=N instead, N being 5 plus what nginx's answer has more, measured with curl
# for each mode and worker count (EQUAL_BYTES=0: /fast on both, unequal). The answers are then
# of equal size, not equal headers. Each answer's bytes are printed beside the tables.
# STRACE=1: after the rounds, one more run of STRACE_SECONDS (3) a mode and server under
# `strace -c -f`, for system calls per request (strace slows the server: these runs are not in
# the timing tables).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
resolve() {
  case "$1" in /*) echo "$1" ;; *) if [ -e "$1" ]; then echo "$PWD/$1"; else echo "$root/$1"; fi ;; esac
}
LOOPSIM=$(resolve "${LOOPSIM:-build/loopsim}")
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
DURATION=${DURATION%s}
CONNECTIONS=${CONNECTIONS:-64}
WRK_THREADS=${WRK_THREADS:-1}
cores=$(nproc)
WORKERS=${WORKERS:-$( [ "$cores" -gt 1 ] && echo "1 $cores" || echo 1 )}
NGINX=${NGINX:-/usr/sbin/nginx}

die() { echo "live_vs_nginx: $*" >&2; exit 2; }
[ -x "$LOOPSIM" ] || die "no loopsim at $LOOPSIM (build it, or set LOOPSIM)"
for v in ROUNDS DURATION CONNECTIONS WRK_THREADS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number, not '${!v}'"
done
need() {  # need PATH-OR-COMMAND PACKAGE
  command -v "$1" >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "$1 is missing: apt-get install -y $2"
  echo "installing $2" >&2
  # RUNLEVEL=1: Debian's nginx package would start the system's nginx on port 80 at install;
  # this tells invoke-rc.d not to, so that no server is left running.
  RUNLEVEL=1 apt-get install -y "$2" >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 && RUNLEVEL=1 apt-get install -y "$2" >/dev/null 2>&1; } ||
    die "could not install $2"
}
need wrk wrk
need "$NGINX" nginx-light
ulimit -Sn 4096 2>/dev/null || true
tck=$(getconf CLK_TCK)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/live_vs_nginx.XXXXXX")
servers=()
alive() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [ "${s:0:1}" != Z ]
}
stop() {  # stop PID: SIGTERM, 5 s, SIGKILL; reaped, untracked
  local pid=$1 i keep=() p
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.05; done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
  for p in "${servers[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  servers=("${keep[@]+"${keep[@]}"}")
}
cleanup() {
  local pid
  for pid in "${servers[@]}"; do stop "$pid"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# utime + stime, in ticks, of PID and every descendant (nginx's workers; loopsim's, if it forks).
tree_ticks() {
  local top=$1 f line rest pid total=0
  local -A kids=() ticks=()
  local -a fs
  for f in /proc/[0-9]*/stat; do
    { line=$(<"$f"); } 2>/dev/null || continue
    pid=${f#/proc/}
    pid=${pid%/stat}
    rest=${line##*) }
    read -ra fs <<<"$rest"  # fs[0] is field 3 (state): ppid is fs[1], utime fs[11], stime fs[12]
    kids[${fs[1]}]+=" $pid"
    ticks[$pid]=$((fs[11] + fs[12]))
  done
  local queue=("$top") p
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    total=$((total + ${ticks[$p]:-0}))
    for pid in ${kids[$p]:-}; do queue+=("$pid"); done
  done
  echo "$total"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_nginx WORKERS: sets nginx_pid, nginx_port, or returns 1 (the log says why).
start_nginx() {
  local workers=$1 dir=$tmp/nginx-$1 master=on try port i
  [ "$workers" = 1 ] && master=off
  mkdir -p "$dir"
  for try in 1 2 3 4 5; do
    # Below the ephemeral range, so that wrk's own ports never take it.
    port=$((20000 + RANDOM % 12000))
    port_in_use "$port" && continue
    cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process $master;
worker_processes $workers;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 65s;
  server_tokens off;
  default_type text/plain;
  server {
    listen 127.0.0.1:$port;
    location /fast { return 200 "fast\n"; }
  }
}
EOF
    "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" >"$dir/stdout" 2>&1 &
    nginx_pid=$!
    servers+=("$nginx_pid")
    for ((i = 0; i < 100; i++)); do
      if port_in_use "$port"; then
        nginx_port=$port
        return 0
      fi
      alive "$nginx_pid" || break
      sleep 0.05
    done
    stop "$nginx_pid"
    grep -q "in use" "$dir/error.log" "$dir/stdout" 2>/dev/null || break
  done
  echo "nginx did not start: $(tail -n 3 "$dir/error.log" "$dir/stdout" 2>/dev/null | tr '\n' ' ')" >&2
  return 1
}

# start_loopsim WORKERS: sets loopsim_pid, loopsim_port; or returns 1 with loopsim_error.
start_loopsim() {
  local workers=$1 out=$tmp/loopsim-$1.out err=$tmp/loopsim-$1.err line i
  local extra=()
  [ "$workers" -gt 1 ] && read -ra extra <<<"${LIVE_ARGS:-}"
  "$LOOPSIM" live --listen 127.0.0.1:0 --workers "$workers" "${extra[@]}" >"$out" 2>"$err" &
  loopsim_pid=$!
  servers+=("$loopsim_pid")
  for ((i = 0; i < 200; i++)); do
    line=$(head -n1 "$out" 2>/dev/null || true)
    if [[ $line =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
      loopsim_port=${BASH_REMATCH[1]}
      return 0
    fi
    alive "$loopsim_pid" || break
    sleep 0.05
  done
  stop "$loopsim_pid"
  loopsim_error=$(head -n 1 "$err")
  return 1
}

to_us() {  # wrk's latency (e.g. 812.00us, 1.23ms, 2.01s) in microseconds
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    f = (u == "us") ? 1 : (u == "ms") ? 1000 : (u == "s") ? 1000000 : (u == "m") ? 60000000 : -1
    if (f < 0) print "nan"; else printf "%.1f", n * f }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# target SERVER MODE: the path a server is asked for in a mode (set per worker count below).
target() {
  if [ "$1" = loopsim ] && [ "$2" = close ]; then echo "$loopsim_close_path"
  elif [ "$1" = loopsim ]; then echo "$loopsim_keepalive_path"
  else echo /fast; fi
}
# answer_bytes PORT PATH [close]: the bytes of one answer, head and body.
answer_bytes() {
  local hdr=()
  [ "${3:-}" = close ] && hdr=(-H 'Connection: close')
  curl -s -D- "${hdr[@]+"${hdr[@]}"}" "http://127.0.0.1:$1$2" | wc -c
}

# run SERVER PID PORT WORKERS MODE ROUND: one wrk run; appends a line to $tmp/results:
# workers mode server round rps p99_us requests ticks errors
run() {
  local server=$1 pid=$2 port=$3 workers=$4 mode=$5 round=$6 out before after
  out=$tmp/wrk-$server-$workers-$mode-$round.txt
  local hdr=()
  [ "$mode" = close ] && hdr=(-H 'Connection: close')
  before=$(tree_ticks "$pid")
  wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "${hdr[@]+"${hdr[@]}"}" "http://127.0.0.1:$port$(target "$server" "$mode")" >"$out" 2>&1 || true
  after=$(tree_ticks "$pid")
  local rps p99 requests errors non2xx
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
  p99=$(awk '$1 == "99%" { print $2 }' "$out")
  requests=$(awk '/requests in/ { print $1 }' "$out")
  errors=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$out")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $5 }' "$out")
  alive "$pid" || echo "warning: $server ($workers workers) died during a $mode run" >&2
  echo "$workers $mode $server $round ${rps:-0} $(to_us "${p99:-nan}") ${requests:-0} $((after - before)) $((${errors:-0} + ${non2xx:-0}))" >>"$tmp/results"
  printf '  %-7s %-10s round %d: %10s req/s  p99 %8s  cpu %5d ticks  errors %d\n' "$server" "$mode" "$round" "${rps:-?}" "${p99:-?}" \
    "$((after - before))" "$((${errors:-0} + ${non2xx:-0}))" >&2
}

# Which worker counts this build takes, before the estimate: a refused one is not measured.
started=$SECONDS
unsupported=()
rows_count=0
for w in $WORKERS; do
  if start_loopsim "$w"; then
    stop "$loopsim_pid"
    rows_count=$((rows_count + 1))
  else
    unsupported+=("$w")
    echo "not supported by this build: --workers $w ($loopsim_error)"
  fi
done
estimate=$((rows_count * 2 * 2 * ROUNDS * (DURATION + 1) + rows_count * 3))
echo "live_vs_nginx: $LOOPSIM against $("$NGINX" -v 2>&1 | sed 's/.*version: //'), workers: $WORKERS, $ROUNDS rounds of ${DURATION} s, $CONNECTIONS connections${LIVE_ARGS:+, loopsim live $LIVE_ARGS with several workers}; about $estimate s"
: >"$tmp/results"

for w in $WORKERS; do
  [[ " ${unsupported[*]-} " == *" $w "* ]] && continue
  start_loopsim "$w" || die "loopsim --workers $w started once, then not: $loopsim_error"
  if ! start_nginx "$w"; then
    stop "$loopsim_pid"
    die "nginx did not start with $w workers"
  fi
  echo "workers $w: loopsim pid $loopsim_pid port $loopsim_port, nginx pid $nginx_pid port $nginx_port" >&2
  loopsim_keepalive_path=/fast
  loopsim_close_path=/fast
  if [ "${EQUAL_BYTES:-1}" != 0 ]; then
    for mode in keepalive close; do
      more=$(($(answer_bytes "$nginx_port" /fast "$mode") - $(answer_bytes "$loopsim_port" /fast "$mode")))
      if ((more < 0)); then
        echo "warning: loopsim's $mode answer is $((-more)) bytes longer than nginx's: both asked for /fast" >&2
        continue
      fi
      # The body grows by the bytes nginx's head has more; its length field may grow by a digit.
      n=$((5 + more))
      for _ in 1 2; do
        extra=$(($(answer_bytes "$nginx_port" /fast "$mode") - $(answer_bytes "$loopsim_port" "/bytes?n=$n" "$mode")))
        n=$((n + extra))
      done
      printf -v "loopsim_${mode}_path" '%s' "/bytes?n=$n"
    done
  fi
  for s_p in "loopsim $loopsim_port" "nginx $nginx_port"; do
    read -r s p <<<"$s_p"
    echo "$w $s $(target "$s" keepalive) $(answer_bytes "$p" "$(target "$s" keepalive)") $(target "$s" close) $(answer_bytes "$p" "$(target "$s" close)" close)" >>"$tmp/bytes"
  done
  for mode in keepalive close; do
    for ((r = 1; r <= ROUNDS; r++)); do
      if ((r % 2)); then
        run loopsim "$loopsim_pid" "$loopsim_port" "$w" "$mode" "$r"
        run nginx "$nginx_pid" "$nginx_port" "$w" "$mode" "$r"
      else
        run nginx "$nginx_pid" "$nginx_port" "$w" "$mode" "$r"
        run loopsim "$loopsim_pid" "$loopsim_port" "$w" "$mode" "$r"
      fi
    done
  done
  if [ "${STRACE:-0}" = 1 ]; then
    for mode in keepalive close; do
      for s_p in "loopsim $loopsim_pid $loopsim_port" "nginx $nginx_pid $nginx_port"; do
        read -r s pid p <<<"$s_p"
        # nginx's workers are its master's children, forked before strace comes: each is named.
        pids=()
        for p_id in "$pid" $(pgrep -P "$pid" || true); do pids+=(-p "$p_id"); done
        strace -c -f "${pids[@]}" -o "$tmp/strace.out" 2>/dev/null &
        st=$!
        sleep 0.5
        hdr=()
        [ "$mode" = close ] && hdr=(-H 'Connection: close')
        req=$(wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${STRACE_SECONDS:-3}"s "${hdr[@]}" "http://127.0.0.1:$p$(target "$s" "$mode")" | awk '/requests in/ { print $1 }')
        kill -INT "$st"
        wait "$st" 2>/dev/null || true
        # strace -c's columns: % time, seconds, usecs/call, calls, [errors,] name.
        calls=$(awk '$NF == "total" { print $4 }' "$tmp/strace.out")
        echo "$w $mode $s ${req:-0} ${calls:-0} $(awk 'NR > 2 && $NF != "total" && $1 !~ /^-/ { printf "%s:%s ", $NF, $4 }' "$tmp/strace.out")" >>"$tmp/syscalls"
      done
    done
  fi
  stop "$loopsim_pid"
  stop "$nginx_pid"
done

# med WORKERS MODE SERVER COLUMN: the median of a results column over the rounds.
med() { awk -v w="$1" -v m="$2" -v s="$3" -v c="$4" '$1 == w && $2 == m && $3 == s { print $c }' "$tmp/results" | median; }
sum_errors() { awk -v w="$1" -v m="$2" -v s="$3" '$1 == w && $2 == m && $3 == s { e += $9 } END { print e + 0 }' "$tmp/results"; }
# Requests per CPU-second and CPU µs per request, per run, then their medians.
per_run() {
  awk -v w="$1" -v m="$2" -v s="$3" -v t="$tck" -v what="$4" '$1 == w && $2 == m && $3 == s {
    cpu = $8 / t
    if (what == "rpcs") print (cpu > 0 ? $7 / cpu : "inf"); else print ($7 > 0 ? cpu * 1e6 / $7 : "nan") }' "$tmp/results" | median
}
fmt() { awk -v v="$1" -v d="${2:-0}" 'BEGIN { if (v == "nan" || v == "inf" || v == "") print v; else printf "%." d "f", v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "nan" || b == "nan") print "nan"; else printf "%.2f", a / b }'; }
check() {  # check VALUE OP LIMIT -> PASS / MISSED
  awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { if (v == "nan") { print "MISSED"; exit }
    ok = (op == ">=") ? (v + 0 >= l + 0) : (v + 0 <= l + 0); print (ok ? "PASS" : "MISSED") }'
}

echo
echo "## loopsim live vs nginx, GET /fast ($cores cores; medians of $ROUNDS runs of ${DURATION} s, wrk -t$WRK_THREADS -c$CONNECTIONS)"
echo
echo "| workers | mode | server | req/s | p99 | CPU µs/request | requests per CPU-s | errors |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
for w in $WORKERS; do
  if [[ " ${unsupported[*]-} " == *" $w "* ]]; then
    echo "| $w | both | loopsim | not supported by this build: --workers $w | | | | |"
    continue
  fi
  for mode in keepalive close; do
    for s in loopsim nginx; do
      echo "| $w | $mode | $s | $(fmt "$(med "$w" $mode $s 5)") | $(fmt "$(awk -v u="$(med "$w" $mode $s 6)" 'BEGIN { print (u == "nan") ? u : u / 1000 }')" 2) ms | $(fmt "$(per_run "$w" $mode $s cpu)" 2) | $(fmt "$(per_run "$w" $mode $s rpcs)") | $(sum_errors "$w" $mode $s) |"
    done
  done
done
echo
echo "| workers | mode | requests per CPU-s, loopsim / nginx | target (keep-alive ≥ 1.20, close ≥ 1.00) | req/s ratio | p99 ratio | target ≤ 1.00 |"
echo "| --- | --- | ---: | --- | ---: | ---: | --- |"
for w in $WORKERS; do
  if [[ " ${unsupported[*]-} " == *" $w "* ]]; then
    echo "| $w | keepalive, close | not supported by this build: --workers $w | MISSED (not measured) | | | MISSED (not measured) |"
    continue
  fi
  for mode in keepalive close; do
    eff=$(ratio "$(per_run "$w" $mode loopsim rpcs)" "$(per_run "$w" $mode nginx rpcs)")
    rps=$(ratio "$(med "$w" $mode loopsim 5)" "$(med "$w" $mode nginx 5)")
    p99=$(ratio "$(med "$w" $mode loopsim 6)" "$(med "$w" $mode nginx 6)")
    target=1.2
    [ "$mode" = close ] && target=1.0
    echo "| $w | $mode | $eff | $(check "$eff" '>=' "$target") | $rps | $p99 | $(check "$p99" '<=' 1.0) |"
  done
done
echo
echo "Answer bytes (keep-alive, Connection: close), with the path asked:"
while read -r w s kp ka cp cl; do echo "- $w worker(s), $s: $ka ($kp), $cl ($cp)"; done <"$tmp/bytes"
if [ -s "$tmp/syscalls" ]; then
  echo
  echo "| workers | mode | server | requests (under strace) | system calls per request | calls |"
  echo "| --- | --- | --- | ---: | ---: | --- |"
  while read -r w mode s req calls rest; do
    echo "| $w | $mode | $s | $req | $(awk -v c="$calls" -v r="$req" 'BEGIN { if (r + 0 == 0) print "nan"; else printf "%.2f", c / r }') | $rest |"
  done <"$tmp/syscalls"
fi
echo
echo "wall time: $((SECONDS - started)) s"
