#!/usr/bin/env bash
# shellcheck disable=SC2154  # the figures (spin_verify_wall, ...) are set with printf -v
# SPIN and `loopsim explore` side by side on the accept loop, at the same bounds.
#
#   bench/explore_vs_spin.sh [--arrivals N] [--batch B] [--runs R] [--liveness]
#                            [--loopsim PATH] [--keep DIR] [--limit SECONDS]
#   bench/explore_vs_spin.sh --sweep [--runs R] [--limit SECONDS]
#
# --sweep runs 8, 16, 32 and 64 arrivals at batch 3 and prints one table of the verify runs, with
# loopsim's wall time as a ratio of SPIN's.
#
# SPIN checks bench/spin/accept_loop.pml (an abstract Promela model of the loop); loopsim explores
# bench/spin/accept-small.toml (the real loop code on the simulated kernel). Each side runs twice:
#   verify: the loop as designed (a batch stopped by its count owes the door): must find nothing;
#   find:   the sabotage "nothing owed" (OWE=0, loop.owe_unfinished_batch=false): must find the
#           stranded backlog (when 0 < batch < arrivals; otherwise it cannot strand).
# Each figure is the median of R runs (default 5). SPIN's wall time includes `spin -a` and the
# compilation of pan.c. Every command runs under `timeout LIMIT` (default 120 s); a run cut off
# by it is reported as not finished. loopsim explores without a depth or execution bound, so its
# none_found (exit 0) is an exhaustive verdict.
#
# Defaults: 5 arrivals, batch 2. Exit status: 0 every expectation met, 1 one was not, 2 bad usage
# or a missing tool. Needs `spin` and `cc` (Debian: apt-get install spin gcc); jq or python3 to
# read loopsim's JSON.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
model="$here/spin/accept_loop.pml"
scenario="$here/spin/accept-small.toml"

arrivals=5
batch=2
runs=5
liveness=0
loopsim="$root/build/loopsim"
keep=""
limit=120
sweep=0

usage() { awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --arrivals|-a|--batch|-b|--runs|-r|--loopsim|--keep|--limit)
      [ $# -ge 2 ] || { echo "explore_vs_spin: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --arrivals|-a) arrivals="${2:-}"; shift 2 ;;
    --batch|-b) batch="${2:-}"; shift 2 ;;
    --runs|-r) runs="${2:-}"; shift 2 ;;
    --liveness) liveness=1; shift ;;
    --loopsim) loopsim="${2:-}"; shift 2 ;;
    --keep) keep="${2:-}"; shift 2 ;;
    --limit) limit="${2:-}"; shift 2 ;;
    --sweep) sweep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "explore_vs_spin: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

int() { [[ "$1" =~ ^[0-9]+$ ]]; }
if ! int "$arrivals" || [ "$arrivals" -lt 1 ] || [ "$arrivals" -gt 255 ]; then
  echo "explore_vs_spin: --arrivals must be 1..255 (the model counts in bytes)" >&2; exit 2
fi
if ! int "$batch" || [ "$batch" -gt 255 ]; then
  echo "explore_vs_spin: --batch must be 0..255 (0 drains until EAGAIN)" >&2; exit 2
fi
if ! int "$runs" || [ "$runs" -lt 1 ]; then
  echo "explore_vs_spin: --runs must be >= 1" >&2; exit 2
fi
if [ "$sweep" -eq 1 ]; then
  echo "explore_vs_spin --sweep: batch 3, median of $runs runs, limit ${limit} s a command"
  printf '%-9s  %-16s %-12s  %-16s %-12s %-12s  %s\n' arrivals "SPIN wall" "SPIN states" \
    "loopsim wall" "states" "states/s" "loopsim/SPIN"
  for a in 8 16 32 64; do
    out=$("${BASH_SOURCE[0]}" --arrivals "$a" --batch 3 --runs "$runs" --limit "$limit" --loopsim "$loopsim")
    s_row=$(printf '%s\n' "$out" | awk '$1 == "SPIN" && $2 == "accept_loop.pml"')
    l_row=$(printf '%s\n' "$out" | awk '$1 == "loopsim" && $2 == "accept-small.toml"')
    # Rows: tool, model (3 words for SPIN, 4 for loopsim), verify wall (value, unit), states,
    # states/s, then the find columns.
    s_wall=$(awk '{ print $5, $6 }' <<<"$s_row"); s_states=$(awk '{ print $7 }' <<<"$s_row")
    l_wall=$(awk '{ print $6, $7 }' <<<"$l_row"); l_states=$(awk '{ print $8 }' <<<"$l_row")
    l_rate=$(awk '{ print $9 }' <<<"$l_row")
    [[ "$s_row" == *failed* ]] && { s_wall="not finished"; s_states="-"; }
    ratio=$(awk -v l="${l_wall% ms}" -v s="${s_wall% ms}" 'BEGIN { if (s + 0 > 0 && l + 0 > 0) printf "%.3f", l / s; else print "-" }')
    printf '%-9s  %-16s %-12s  %-16s %-12s %-12s  %s\n' "$a" "$s_wall" "$s_states" "$l_wall" "$l_states" "$l_rate" "$ratio"
    printf '%s\n' "$out" | grep -E '^(FAILED|  loopsim verify)' | sed 's/^/    /'
  done
  exit 0
fi

for tool in spin cc timeout; do
  command -v "$tool" >/dev/null ||
    { echo "explore_vs_spin: '$tool' not found (Debian: apt-get install spin gcc coreutils)" >&2; exit 2; }
done

# The sabotage can only strand a backlog when a batch can stop by its count with work left.
if [ "$batch" -gt 0 ] && [ "$batch" -lt "$arrivals" ]; then can_strand=1; else can_strand=0; fi

if [ -n "$keep" ]; then
  mkdir -p "$keep" && work="$(cd "$keep" && pwd)"
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/explore_vs_spin.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi

now() { date +%s%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
ms() { awk -v ns="$1" 'BEGIN { if (ns == "-" || ns == "") print "-"; else printf "%.1f ms", ns / 1e6 }'; }
rate() {  # states, nanoseconds -> states/s
  awk -v s="$1" -v ns="$2" 'BEGIN { if (s == "-" || ns == "-" || ns <= 0) print "-"; else printf "%.0f", s * 1e9 / ns }'
}

failures=()

# ---------------------------------------------------------------- SPIN
# One run: spin -a, cc, ./pan in a fresh directory. Prints "wall_ns spin_ns cc_ns pan_ns errors
# states rate" (rate is pan's own "states/second" line, or "-" when pan printed none: it does
# not when its elapsed time rounds to 0).
spin_once() {  # OWE DIR
  local owe="$1" dir="$2" t0 t1 t2 t3 out errors states prate
  mkdir -p "$dir" && cp "$model" "$dir/accept_loop.pml" || return 1
  local defs=(-DARRIVALS="$arrivals" -DBATCH="$batch" -DOWE="$owe")
  local ccflags=(-O2 -DSAFETY -DNOCLAIM) panflags=()
  if [ "$liveness" -eq 1 ]; then defs+=(-DLIVENESS); ccflags=(-O2); panflags=(-a); fi
  t0=$(now)
  (cd "$dir" && timeout "$limit" spin "${defs[@]}" -a accept_loop.pml >spin.out 2>&1) || return 1
  t1=$(now)
  (cd "$dir" && timeout "$limit" cc "${ccflags[@]}" -o pan pan.c >cc.out 2>&1) || return 1
  t2=$(now)
  (cd "$dir" && timeout "$limit" ./pan "${panflags[@]}" >pan.out 2>&1)
  local rc=$?
  t3=$(now)
  [ "$rc" -eq 124 ] && return 1
  out="$dir/pan.out"
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | tail -1)
  states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$out" | tail -1)
  prate=$(sed -n 's/^pan: rate *\([0-9.e+]*\) states\/second.*/\1/p' "$out" | tail -1)
  [ -n "$errors" ] && [ -n "$states" ] || return 1
  echo "$((t3 - t0)) $((t1 - t0)) $((t2 - t1)) $((t3 - t2)) $errors $states ${prate:--}"
}

# Median over the runs of each column; sets spin_<what>_{wall,spin,cc,pan,errors,states,rate}.
spin_side() {  # what OWE
  local what="$1" owe="$2" i line col
  local -a rows=()
  for ((i = 1; i <= runs; i++)); do
    if ! line=$(spin_once "$owe" "$work/spin-$what-$i"); then
      echo "explore_vs_spin: SPIN $what run $i failed; see $work/spin-$what-$i" >&2
      keep_work
      return 1
    fi
    rows+=("$line")
  done
  local names=(wall spin cc pan errors states rate)
  for col in 0 1 2 3 4 5 6; do
    local m
    m=$(printf '%s\n' "${rows[@]}" | awk -v c=$((col + 1)) '$c != "-" { print $c }' | median)
    printf -v "spin_${what}_${names[$col]}" '%s' "$m"
  done
  # The trail of the last run, for the report.
  # (spin names it after its preprocessed copy, _accept_loop.pml.trail, when given -D options)
  ls "$work/spin-$what-$runs/"*accept_loop.pml.trail >/dev/null 2>&1 && spin_trail_dir="$work/spin-$what-$runs"
  return 0
}

keep_work() { [ -z "$keep" ] && trap - EXIT; }

spin_trail_dir=""
echo "explore_vs_spin: $arrivals arrivals, batch $batch, median of $runs runs$([ "$liveness" -eq 1 ] && echo ', SPIN liveness (LTL, pan -a)')"
echo "  SPIN: $(spin -V 2>&1 | head -1); model $model"
spin_ok=1
spin_side verify 1 || spin_ok=0
spin_side find 0 || spin_ok=0
if [ "$spin_ok" -eq 1 ]; then
  [ "$spin_verify_errors" = 0 ] || failures+=("SPIN verify: pan reported $spin_verify_errors error(s) on the owed loop")
  if [ "$can_strand" -eq 1 ]; then
    [ "$spin_find_errors" != 0 ] || failures+=("SPIN find: pan found no error on the nothing-owed loop")
  else
    [ "$spin_find_errors" = 0 ] || failures+=("SPIN find: pan reported an error although batch $batch cannot strand $arrivals arrivals")
  fi
else
  failures+=("SPIN: a run failed")
fi

# ---------------------------------------------------------------- loopsim explore
json_get() {  # FILE KEY -> value or "-"
  local v=""
  if command -v jq >/dev/null; then
    v=$(jq -r --arg k "$2" '.[$k] // empty' "$1" 2>/dev/null)
  elif command -v python3 >/dev/null; then
    v=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d.get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null)
  fi
  echo "${v:--}"
}

explore_available() {
  [ -x "$loopsim" ] || return 1
  "$loopsim" --help 2>/dev/null | grep -qE '^[[:space:]]+explore([[:space:]]|$)' || return 1
  "$loopsim" explore --help >/dev/null 2>&1 || return 1
  command -v jq >/dev/null || command -v python3 >/dev/null || return 1
  return 0
}

loopsim_ok=0
loopsim_note=""
if explore_available; then
  loopsim_ok=1
  small="$work/accept-small.toml"
  sed "s/^count = [0-9]*\(.*\)/count = $arrivals\1/" "$scenario" >"$small"
  grep -q "^count = $arrivals" "$small" || { echo "explore_vs_spin: could not set the burst's count" >&2; exit 2; }
  out_flag=0
  "$loopsim" explore --help 2>&1 | grep -qE '(^|[[:space:]])--out([[:space:],=]|$)' && out_flag=1

  # One run. Prints "proc_ns wall_ns states executions transitions verdict rc".
  explore_once() {  # what dir sets...
    local what="$1" dir="$2"; shift 2
    mkdir -p "$dir"
    local args=(explore "$small" --json --set "loop.accept_batch=$batch" --depth 100000000
                --max-executions 1000000000 --time-limit "${limit}s" "$@")
    [ "$out_flag" -eq 1 ] && args+=(--out "$dir/out")
    local t0 t1 rc
    t0=$(now)
    timeout "$limit" "$loopsim" "${args[@]}" >"$dir/explore.json" 2>"$dir/explore.err"
    rc=$?
    t1=$(now)
    echo "$((t1 - t0)) $(json_get "$dir/explore.json" wall_ns) $(json_get "$dir/explore.json" states)" \
         "$(json_get "$dir/explore.json" executions) $(json_get "$dir/explore.json" transitions)" \
         "$(json_get "$dir/explore.json" verdict) $rc"
  }

  explore_side() {  # what sets...
    local what="$1" i col; shift
    local -a rows=()
    for ((i = 1; i <= runs; i++)); do
      rows+=("$(explore_once "$what" "$work/loopsim-$what-$i" "$@")")
    done
    local names=(proc wall states executions transitions)
    for col in 0 1 2 3 4; do
      local m
      m=$(printf '%s\n' "${rows[@]}" | awk -v c=$((col + 1)) '$c != "-" && $c ~ /^[0-9.e+]+$/ { print $c }' | median)
      printf -v "ls_${what}_${names[$col]}" '%s' "$m"
    done
    # verdict and exit status: every run must agree; keep the distinct ones.
    printf -v "ls_${what}_verdict" '%s' "$(printf '%s\n' "${rows[@]}" | awk '{ print $6 }' | sort -u | paste -sd/)"
    printf -v "ls_${what}_rc" '%s' "$(printf '%s\n' "${rows[@]}" | awk '{ print $7 }' | sort -u | paste -sd/)"
    ls_last_dir="$work/loopsim-$what-$runs"
  }

  explore_side verify
  verify_dir="$ls_last_dir"
  explore_side find --set loop.owe_unfinished_batch=false
  find_dir="$ls_last_dir"

  case "$ls_verify_rc:$ls_verify_verdict" in
    0:none_found) ;;
    *) failures+=("loopsim verify: exit $ls_verify_rc, verdict $ls_verify_verdict (want exit 0, none_found; see $verify_dir)") ;;
  esac
  if [ "$can_strand" -eq 1 ]; then
    [ "$ls_find_rc:$ls_find_verdict" = "1:violated" ] ||
      failures+=("loopsim find: exit $ls_find_rc, verdict $ls_find_verdict (want exit 1, violated; see $find_dir)")
  fi
  if [ "${#failures[@]}" -gt 0 ]; then keep_work; fi
else
  if [ ! -x "$loopsim" ]; then
    loopsim_note="loopsim explore: not available in this build ($loopsim not found; build it with scripts/build.sh)"
  elif ! command -v jq >/dev/null && ! command -v python3 >/dev/null; then
    loopsim_note="loopsim explore: needs jq or python3 to read its JSON (apt-get install jq)"
  else
    loopsim_note="loopsim explore: not available in this build"
  fi
fi

# ---------------------------------------------------------------- the table
echo
printf '%-8s  %-34s  %-12s %-10s %-12s  %-12s %-10s\n' \
  "tool" "model" "verify wall" "states" "states/s" "find wall" "states"
printf '%-8s  %-34s  %-12s %-10s %-12s  %-12s %-10s\n' \
  "--------" "----------------------------------" "------------" "----------" "------------" "------------" "----------"
if [ "$spin_ok" -eq 1 ]; then
  v_rate="$spin_verify_rate"
  [ "$v_rate" = "-" ] && v_rate="$(rate "$spin_verify_states" "$spin_verify_pan")*"
  printf '%-8s  %-34s  %-12s %-10s %-12s  %-12s %-10s\n' "SPIN" \
    "accept_loop.pml (abstract, $([ "$liveness" -eq 1 ] && echo LTL || echo safety))" \
    "$(ms "$spin_verify_wall")" "$spin_verify_states" "$v_rate" \
    "$(ms "$spin_find_wall")" "$spin_find_states"
else
  printf '%-8s  %-34s  %s\n' "SPIN" "accept_loop.pml" "failed (see above)"
fi
if [ "$loopsim_ok" -eq 1 ]; then
  printf '%-8s  %-34s  %-12s %-10s %-12s  %-12s %-10s\n' "loopsim" "accept-small.toml (real loop code)" \
    "$(ms "$ls_verify_wall")" "$ls_verify_states" "$(rate "$ls_verify_states" "$ls_verify_wall")" \
    "$(ms "$ls_find_wall")" "$ls_find_states"
else
  printf '%-8s  %-34s  %s\n' "loopsim" "accept-small.toml (real loop code)" "$loopsim_note"
fi

echo
echo "details (medians of $runs runs):"
if [ "$spin_ok" -eq 1 ]; then
  for what in verify find; do
    w="spin_${what}_"
    wall="${w}wall" sp="${w}spin" c="${w}cc" p="${w}pan" e="${w}errors" s="${w}states" r="${w}rate"
    printf '  SPIN %-6s (OWE=%s): errors %s; %s states stored; wall %s = spin -a %s + cc %s + pan %s; pan rate %s\n' \
      "$what" "$([ "$what" = verify ] && echo 1 || echo 0)" "${!e}" "${!s}" "$(ms "${!wall}")" \
      "$(ms "${!sp}")" "$(ms "${!c}")" "$(ms "${!p}")" \
      "$([ "${!r}" = "-" ] && echo "not printed (elapsed rounds to 0); $(rate "${!s}" "${!p}") states/s over pan's wall" || echo "${!r} states/s")"
  done
  [ -n "$spin_trail_dir" ] && [ -n "$keep" ] &&
    echo "  SPIN counterexample: cd $spin_trail_dir && spin -t -p$([ "$liveness" -eq 1 ] && echo " -DLIVENESS") -DARRIVALS=$arrivals -DBATCH=$batch -DOWE=0 accept_loop.pml"
  echo "  * states/s computed from pan's wall time when pan printed no rate"
fi
if [ "$loopsim_ok" -eq 1 ]; then
  for what in verify find; do
    pre="ls_${what}_"
    v="${pre}verdict" rc="${pre}rc" pr="${pre}proc" wl="${pre}wall" s="${pre}states" ex="${pre}executions" tr="${pre}transitions"
    printf '  loopsim %-6s: verdict %s (exit %s); %s states, %s executions, %s transitions; wall_ns %s, process %s\n' \
      "$what" "${!v}" "${!rc}" "${!s}" "${!ex}" "${!tr}" "$(ms "${!wl}")" "$(ms "${!pr}")"
  done
  [ -n "$keep" ] && echo "  loopsim JSON and counterexamples: $work/loopsim-*/"
fi
[ "$can_strand" -eq 0 ] &&
  echo "  note: with batch $batch and $arrivals arrivals no batch stops by its count with work left, so the sabotage cannot strand anything"

if [ "${#failures[@]}" -gt 0 ]; then
  echo
  printf 'FAILED: %s\n' "${failures[@]}"
  [ -z "$keep" ] && echo "  (work kept in $work)"
  exit 1
fi
exit 0
