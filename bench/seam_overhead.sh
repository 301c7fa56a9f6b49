#!/usr/bin/env bash
# The seam's overhead: 10,000 requests over 100 keep-alive connections, served by the libuv
# example (examples/libuv/uv_http.c, unmodified, under the POSIX seam) and by the built-in loop
# in loopsim's own process, on the same scenario; and a threaded row: the same shape of
# workload (10,000 "get" requests of memcached's text protocol) served by Debian's memcached
# with four worker threads, whose every request crosses threads on the seam's baton; a Go row:
# the Go example (examples/go/go_http.go, cgo build), whose runtime makes every system call
# itself, each one trapped (posix/interpose_trap.cpp); the statically linked builds of the libuv
# and Go examples, which the seam loads (posix/loaded.cpp) and whose every call is trapped; and
# the trap's own cost: 200,000 clock reads by the program's own system call (trapped) against as
# many through libc (interposed), and none, by the seam's probe, and as many through the static
# probe's own libc (trapped).
#
#   bench/seam_overhead.sh [--runs R] [--loopsim PATH]
#
# Each figure is the median of R runs (default 5) of `loopsim run` (wall, including starting
# the target's process). Prints, for each side: wall ms, requests answered, wall per request;
# then the ratio seam / built-in (target: within 3x) and the calls the seam served per request
# (from the last line of the target's stderr). Exits 1 if a side did not answer every request.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
loopsim="$root/build/loopsim"
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a value}"; shift 2 ;;
    --loopsim) loopsim="${2:?--loopsim needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "seam_overhead: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$loopsim" ] || { echo "seam_overhead: no loopsim at $loopsim (build it first)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 100 connections, each asking 100 times, 1 ms apart.
requests=$(for k in $(seq 0 99); do printf '{ at = "%dms", path = "/fast" }, ' $((10 + k)); done)
clients=$(printf '[[clients]]\nname = "echo"\ncount = 100\nconnect_at = "10ms"\nkeep_alive = true\nrequests = [ %s]\n\n[[expect]]\nproperty = "answered"\n' "$requests")
printf 'name = "echo-builtin"\nhorizon = "1s"\n\n%s' "$clients" >"$work/echo-builtin.toml"
printf 'name = "echo-seam"\nhorizon = "1s"\n\n[target]\nexec = ["uv_http", "--port", "8080"]\nport = 8080\n\n%s' \
  "$clients" >"$work/echo-seam.toml"
gets=$(for k in $(seq 0 99); do printf '{ at = "%dms", bytes = "get key\\r\\n" }, ' $((10 + k)); done)
printf 'name = "echo-threads"\nhorizon = "1s"\n\n[target]\nexec = ["memcached", "-p", "11311", "-l", "127.0.0.1", "-t", "4", "-U", "0", "-u", "root"]\nport = 11311\n\n[[clients]]\nname = "echo"\ncount = 100\nconnect_at = "10ms"\nkeep_alive = true\nframing = "terminator"\nterminator = "END\\r\\n"\nrequests = [ %s]\n\n[[expect]]\nproperty = "answered"\n' \
  "$gets" >"$work/echo-threads.toml"
printf 'name = "echo-go"\nhorizon = "1s"\n\n[target]\nexec = ["go_http", "--port", "8080"]\nport = 8080\n\n%s' \
  "$clients" >"$work/echo-go.toml"
printf 'name = "echo-static"\nhorizon = "1s"\n\n[target]\nexec = ["uv_http_static", "--port", "8080"]\nport = 8080\n\n%s' \
  "$clients" >"$work/echo-static.toml"
printf 'name = "echo-gostatic"\nhorizon = "1s"\n\n[target]\nexec = ["go_http_static", "--port", "8080"]\nport = 8080\n\n%s' \
  "$clients" >"$work/echo-gostatic.toml"
sides="builtin seam"
command -v memcached >/dev/null && sides="$sides threads" || echo "seam_overhead: no memcached on PATH: the threaded row is left out" >&2
[ -x "$root/build/examples/go_http" ] && sides="$sides go" || echo "seam_overhead: no build/examples/go_http: the Go row is left out" >&2
[ -x "$root/build/examples/uv_http_static" ] && sides="$sides static" || echo "seam_overhead: no build/examples/uv_http_static: its row is left out" >&2
[ -x "$root/build/examples/go_http_static" ] && sides="$sides gostatic" || echo "seam_overhead: no build/examples/go_http_static: its row is left out" >&2

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A wall answered
for side in $sides; do
  times=()
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    out=$("$loopsim" run "$work/echo-$side.toml" --json --trace "$work/$side.jsonl")
    status=$?
    end=$(date +%s%N)
    [ "$status" -eq 0 ] || { echo "seam_overhead: $side: exit $status" >&2; exit 1; }
    times+=($(( (end - start) / 1000 )))
  done
  wall[$side]=$(printf '%s\n' "${times[@]}" | median)
  answered[$side]=$(printf '%s' "$out" | grep -o '"answered": *[0-9]*' | head -1 | grep -o '[0-9]*$')
  [ "${answered[$side]}" = 10000 ] || { echo "seam_overhead: $side answered ${answered[$side]} of 10000" >&2; exit 1; }
  printf '%-8s %8.1f ms wall  %5d answered  %6.2f us/request\n' "$side" \
    "$(echo "${wall[$side]} / 1000" | bc -l)" "${answered[$side]}" "$(echo "${wall[$side]} / ${answered[$side]}" | bc -l)"
done
calls=$(grep -o 'loopsim seam: [0-9]*' "$work/seam.base.stderr" | grep -o '[0-9]*$')
printf 'ratio seam/builtin: %.2f (target: at most 3)\n' "$(echo "${wall[seam]} / ${wall[builtin]}" | bc -l)"
printf 'seam calls: %d, %.1f per request\n' "$calls" "$(echo "$calls / 10000" | bc -l)"
if [ -n "${wall[threads]:-}" ]; then
  calls=$(grep -o 'loopsim seam: [0-9]*' "$work/threads.base.stderr" | grep -o '[0-9]*$')
  printf 'ratio threads/builtin: %.2f (memcached -t 4; no target set)\n' "$(echo "${wall[threads]} / ${wall[builtin]}" | bc -l)"
  printf 'threads calls: %d, %.1f per request\n' "$calls" "$(echo "$calls / 10000" | bc -l)"
fi
if [ -n "${wall[go]:-}" ]; then
  calls=$(grep -o 'loopsim seam: [0-9]*' "$work/go.base.stderr" | grep -o '[0-9]*$')
  printf 'ratio go/builtin: %.2f (Go net/http, every call trapped; no target set)\n' "$(echo "${wall[go]} / ${wall[builtin]}" | bc -l)"
  printf 'go calls: %d, %.1f per request\n' "$calls" "$(echo "$calls / 10000" | bc -l)"
fi

if [ -n "${wall[static]:-}" ]; then
  calls=$(grep -o 'loopsim seam: [0-9]*' "$work/static.base.stderr" | grep -o '[0-9]*$')
  printf 'ratio static/seam: %.2f (uv_http linked -static, loaded, every call trapped; no target set)\n' "$(echo "${wall[static]} / ${wall[seam]}" | bc -l)"
  printf 'static calls: %d, %.1f per request\n' "$calls" "$(echo "$calls / 10000" | bc -l)"
fi
if [ -n "${wall[gostatic]:-}" ]; then
  printf 'ratio gostatic/go: %.2f (go_http built without cgo, loaded; no target set)\n' "$(echo "${wall[gostatic]} / ${wall[go]}" | bc -l)"
fi

# The trap's cost a call: the probe reads the clock N times, trapped or through libc, or not at
# all, then answers one request; and the static probe through its own libc (trapped).
probe="$root/build/probes/seam_probe_dynamic"
if [ -x "$probe" ]; then
  n=200000
  declare -A call_wall
  static_probe="$root/build/probes/seam_probe_static"
  hows="none raw libc"
  [ -x "$static_probe" ] && hows="$hows static-none static-libc"
  for how in $hows; do
    count=$n
    [ "${how%none}" != "$how" ] && count=0
    program=$probe mode=${how#static-}
    [ "${how#static-}" != "$how" ] && program=$static_probe
    printf 'name = "calls-%s"\nhorizon = "2s"\n\n[target]\nexec = ["%s", "clock-reads", "%s", "%d"]\nport = 8080\n\n[[clients]]\nname = "c"\nconnect_at = "10ms"\nrequests = [{ at = "10ms", path = "/" }]\n' \
      "$how" "$program" "$mode" "$count" >"$work/calls-$how.toml"
    times=()
    for _ in $(seq "$runs"); do
      start=$(date +%s%N)
      "$loopsim" run "$work/calls-$how.toml" >/dev/null || { echo "seam_overhead: calls $how failed" >&2; exit 1; }
      end=$(date +%s%N)
      times+=($(( (end - start) / 1000 )))
    done
    call_wall[$how]=$(printf '%s\n' "${times[@]}" | median)
  done
  printf 'clock read, interposed (libc): %.0f ns a call\n' "$(echo "(${call_wall[libc]} - ${call_wall[none]}) * 1000 / $n" | bc -l)"
  printf 'clock read, trapped (its own syscall): %.0f ns a call\n' "$(echo "(${call_wall[raw]} - ${call_wall[none]}) * 1000 / $n" | bc -l)"
  if [ -n "${call_wall[static-libc]:-}" ]; then
    printf 'clock read, static program through its libc (trapped): %.0f ns a call\n' \
      "$(echo "(${call_wall[static-libc]} - ${call_wall[static-none]}) * 1000 / $n" | bc -l)"
  fi
fi
