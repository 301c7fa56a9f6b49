#!/usr/bin/env bash
# SPIN and `loopsim explore` asked one question: does the accept loop of R1-R2 accept every
# arrival, when each arrival and a held connection's request are free to land at any step?
#
#   bench/explore_vs_spin.sh [--question anchor|windows] [--arrivals N] [--batch B] [--runs R]
#                            [--loopsim PATH] [--keep DIR] [--limit SECONDS]
#   bench/explore_vs_spin.sh --sweep [--question Q] [--runs R] [--batch B] [--loopsim PATH] [--limit SECONDS]
#
# Two questions (bench/spin/README.md says what each side abstracts):
#   anchor (the default): the anchors' counting question. SPIN checks bench/spin/accept_counting.pml
#           (-DB=N -DBATCH -DOWED) and, where ../shared/anchors/accept_loop.pml is present beside
#           the project, the anchor itself with the same options; loopsim explores
#           bench/spin/accept-anchor.toml with N clients.
#   windows: SPIN checks bench/spin/accept_loop.pml; loopsim explores bench/spin/accept-free.toml
#           with its count, held window and horizon set for N.
# Each side runs twice:
#   verify: the loop as designed (a batch stopped by its count owes the door): must find nothing,
#           and loopsim must say so exhaustively (exit 0, no bound named);
#   find:   the sabotage "nothing owed" (OWE=0, loop.owe_unfinished_batch=false): must find the
#           stranded backlog, in a file whose own timing does not strand (checked: `loopsim run`
#           with the sabotage must exit 0).
#
# Costs are reported apart, as CPU time (user + system). SPIN: `spin -a` and `cc -O2` of pan.c
# (its compile cost), then pan's search, each its own figure; pan's hash table is sized from a
# first calibration run (-w = log2 of the states it stored, plus 1) and its depth bound from the
# depth it reached. loopsim: no per-model compile step; its CPU time is the whole command's, and
# its search time wall_ns from its JSON. Every figure is the median of R runs (default 5). Every
# command runs under `timeout LIMIT` (default 300 s); a run cut off is reported as not finished.
# With the anchor question, the `loopsim run` check below is reported, not required: each
# client's window is the whole range, so the file's own timing may strand without a search.
#
# --sweep runs N = 4, 8, 16 and 32 (anchor) or 8, 16, 32 and 64 (windows) and prints one table,
# loopsim's CPU time as a ratio of pan's. Defaults: the anchor question, 8 arrivals, batch 3.
#
# Exit status: 0 every expectation met, 1 one was not, 2 bad usage or a missing tool. Needs
# `spin`, `cc` and `jq` (Debian: apt-get install spin gcc jq) and ./build/loopsim.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
question=anchor

arrivals=8
batch=3
runs=5
loopsim="$root/build/loopsim"
keep=""
limit=300
sweep=0

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --arrivals|-a|--batch|-b|--runs|-r|--loopsim|--keep|--limit|--question|-q)
      [ $# -ge 2 ] || { echo "explore_vs_spin: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --arrivals|-a) arrivals="$2"; shift 2 ;;
    --batch|-b) batch="$2"; shift 2 ;;
    --runs|-r) runs="$2"; shift 2 ;;
    --loopsim) loopsim="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --limit) limit="$2"; shift 2 ;;
    --question|-q) question="$2"; shift 2 ;;
    --sweep) sweep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "explore_vs_spin: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

int() { [[ "$1" =~ ^[0-9]+$ ]]; }
case "$question" in
  anchor)
    model="$here/spin/accept_counting.pml"; scenario="$here/spin/accept-anchor.toml"
    anchor="$root/../shared/anchors/accept_loop.pml"; [ -f "$anchor" ] || anchor="" ;;
  windows)
    model="$here/spin/accept_loop.pml"; scenario="$here/spin/accept-free.toml"; anchor="" ;;
  *) echo "explore_vs_spin: --question must be anchor or windows" >&2; exit 2 ;;
esac
if ! int "$arrivals" || [ "$arrivals" -lt 1 ] || [ "$arrivals" -gt 200 ]; then
  echo "explore_vs_spin: --arrivals must be 1..200 (the model counts ticks in a byte)" >&2; exit 2
fi
if ! int "$batch" || [ "$batch" -gt 255 ]; then
  echo "explore_vs_spin: --batch must be 0..255 (0 drains until EAGAIN)" >&2; exit 2
fi
if ! int "$runs" || [ "$runs" -lt 1 ]; then echo "explore_vs_spin: --runs must be >= 1" >&2; exit 2; fi
if ! int "$limit" || [ "$limit" -lt 1 ]; then echo "explore_vs_spin: --limit must be >= 1 s" >&2; exit 2; fi
for tool in spin cc jq timeout; do
  command -v "$tool" >/dev/null ||
    { echo "explore_vs_spin: '$tool' not found (Debian: apt-get install spin gcc jq coreutils)" >&2; exit 2; }
done
[ -x "$loopsim" ] || { echo "explore_vs_spin: $loopsim not found (build it: scripts/build.sh release)" >&2; exit 2; }

if [ "$sweep" -eq 1 ]; then
  echo "explore_vs_spin --sweep: the $question question, batch $batch, median of $runs runs, limit ${limit} s a command"
  echo "  CPU times; verify (exhaustive, must find nothing) / find (the nothing-owed strand)"
  printf '%-4s | %-26s | %-18s | %-18s | %-26s | %-26s | %-12s | %s\n' N "SPIN states verify/find" "spin -a + cc v/f" \
    "pan CPU verify/find" "loopsim states verify/find" "loopsim executions v/f" "CPU v/f" "loopsim/pan CPU (verify, find); loopsim states/s"
  status=0
  sizes=(8 16 32 64)
  [ "$question" = anchor ] && sizes=(4 8 16 32)
  for a in "${sizes[@]}"; do
    out=$("${BASH_SOURCE[0]}" --question "$question" --arrivals "$a" --batch "$batch" --runs "$runs" --limit "$limit" --loopsim "$loopsim")
    rc=$?
    [ "$rc" -eq 0 ] || status=1
    printf '%s\n' "$out" | awk -v n="$a" '$1 == "row" { $1 = ""; sub(/^ /, ""); print n " | " $0 }'
    printf '%s\n' "$out" | grep -E '^(FAILED|NOTE|  anchor)' | sed 's/^/     /'
  done
  echo "  (spin -a + cc of pan.c is SPIN's compile cost, paid per model and parameter set, apart from its search)"
  exit "$status"
fi

if [ "$batch" -gt 0 ] && [ "$batch" -lt "$arrivals" ]; then can_strand=1; else can_strand=0; fi

if [ -n "$keep" ]; then
  mkdir -p "$keep" && work="$(cd "$keep" && pwd)"
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/explore_vs_spin.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi
keep_work() { [ -z "$keep" ] && trap - EXIT; }

median() { grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
sum() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else print a + b }'; }
ms() { awk -v s="$1" 'BEGIN { if (s == "-" || s == "") print "-"; else printf "%.1f ms", s * 1000 }'; }
# `timed FILE cmd...`: runs cmd, writes "wall user+sys" seconds to FILE, returns cmd's status.
timed() {
  local file="$1" rc; shift
  local TIMEFORMAT='%R %U %S'
  { time "$@" ; } 2>"$file.time"
  rc=$?
  tail -1 "$file.time" | awk '{ printf "%s %.3f\n", $1, $2 + $3 }' >"$file"
  return "$rc"
}
field() { awk -v c="$2" '{ print $c }' "$1"; }

failures=()
notes=()

# ---------------------------------------------------------------- SPIN
if [ "$question" = anchor ]; then
  defs=(-DB="$arrivals" -DBATCH="$batch"); owe_name=OWED; cc_flags=(-O2 -DSAFETY)
else
  defs=(-DARRIVALS="$arrivals" -DBATCH="$batch"); owe_name=OWE; cc_flags=(-O2 -DSAFETY -DNOCLAIM)
fi
# Calibration: one run per side with a generous table, for the states and depth pan reaches.
spin_prepare() {  # OWE DIR [MODEL] -> compiles pan in DIR; writes spin.t and cc.t
  local owe="$1" dir="$2" from="${3:-$model}"
  mkdir -p "$dir" && cp "$from" "$dir/model.pml" || return 1
  (cd "$dir" && timed spin.t timeout "$limit" spin "${defs[@]}" -D"$owe_name"="$owe" -a model.pml >spin.out 2>&1) || return 1
  (cd "$dir" && timed cc.t timeout "$limit" cc "${cc_flags[@]}" -o pan pan.c >cc.out 2>&1) || return 1
}
pan_states() { sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$1" | tail -1; }
pan_errors() { sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$1" | tail -1; }
pan_depth() { sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$1" | tail -1; }

declare -A S
spin_side() {  # what OWE [MODEL]
  local what="$1" owe="$2" from="${3:-$model}" i dir
  local -a spin_t cc_t pan_t states errors
  dir="$work/spin-$what-calibrate"
  spin_prepare "$owe" "$dir" "$from" || { failures+=("SPIN $what: spin -a or cc failed (see $dir)"); keep_work; return 1; }
  (cd "$dir" && timeout "$limit" ./pan -w28 -m10000000 >pan.out 2>&1)
  local st dp
  st=$(pan_states "$dir/pan.out"); dp=$(pan_depth "$dir/pan.out")
  [ -n "$st" ] && [ -n "$dp" ] || { failures+=("SPIN $what: pan did not finish (see $dir)"); keep_work; return 1; }
  local w=10
  while [ $((1 << w)) -lt "$st" ]; do w=$((w + 1)); done
  w=$((w + 1))
  local m=$((dp * 2 + 100))
  S[$what.w]=$w; S[$what.m]=$m
  for ((i = 1; i <= runs; i++)); do
    dir="$work/spin-$what-$i"
    spin_prepare "$owe" "$dir" "$from" || { failures+=("SPIN $what run $i: spin -a or cc failed (see $dir)"); keep_work; return 1; }
    (cd "$dir" && timed pan.t timeout "$limit" ./pan -w"$w" -m"$m" >pan.out 2>&1)
    [ $? -eq 124 ] && { failures+=("SPIN $what run $i: pan not finished in ${limit} s"); return 1; }
    grep -q "max search depth too small" "$dir/pan.out" &&
      { failures+=("SPIN $what run $i: pan's depth bound cut the search (see $dir)"); keep_work; return 1; }
    spin_t+=("$(field "$dir/spin.t" 2)"); cc_t+=("$(field "$dir/cc.t" 2)"); pan_t+=("$(field "$dir/pan.t" 2)")
    states+=("$(pan_states "$dir/pan.out")"); errors+=("$(pan_errors "$dir/pan.out")")
  done
  S[$what.spin]=$(printf '%s\n' "${spin_t[@]}" | median)
  S[$what.cc]=$(printf '%s\n' "${cc_t[@]}" | median)
  S[$what.pan]=$(printf '%s\n' "${pan_t[@]}" | median)
  S[$what.states]=$(printf '%s\n' "${states[@]}" | median)
  S[$what.errors]=$(printf '%s\n' "${errors[@]}" | sort -u | paste -sd/)
  return 0
}

echo "explore_vs_spin: the $question question, $arrivals arrivals, batch $batch, median of $runs runs"
echo "  SPIN: $(spin -V 2>&1 | head -1); cc ${cc_flags[*]} (safety: the assertions and end states)"
echo "  loopsim: $("$loopsim" --version 2>/dev/null | head -1)"
spin_ok=1
spin_side verify 1 || spin_ok=0
spin_side find 0 || spin_ok=0
anchor_ok=0
if [ -n "$anchor" ]; then
  anchor_ok=1
  spin_side averify 1 "$anchor" || anchor_ok=0
  spin_side afind 0 "$anchor" || anchor_ok=0
  if [ "$anchor_ok" -eq 1 ]; then
    [ "${S[averify.errors]}" = 0 ] || failures+=("anchor verify: pan reported ${S[averify.errors]} error(s)")
    [ "$can_strand" -eq 0 ] || [ "${S[afind.errors]}" != 0 ] || failures+=("anchor find: pan found no error")
  fi
fi
if [ "$spin_ok" -eq 1 ]; then
  [ "${S[verify.errors]}" = 0 ] || failures+=("SPIN verify: pan reported ${S[verify.errors]} error(s) on the owed loop")
  if [ "$can_strand" -eq 1 ]; then
    [ "${S[find.errors]}" != 0 ] || failures+=("SPIN find: pan found no error on the nothing-owed loop")
  else
    [ "${S[find.errors]}" = 0 ] || failures+=("SPIN find: pan reported an error although batch $batch cannot strand $arrivals arrivals")
  fi
fi

# ---------------------------------------------------------------- loopsim explore
file="$work/accept-$question-$arrivals.toml"
if [ "$question" = anchor ]; then
  sed -e "s/^count = [0-9]* /count = $arrivals /" -e "s/^accept_batch = [0-9]*/accept_batch = $batch/" "$scenario" >"$file"
  grep -q "^count = $arrivals " "$file" ||
    { echo "explore_vs_spin: could not write the scenario for $arrivals arrivals" >&2; exit 2; }
else
sed -e "s/^count = [0-9]* /count = $arrivals /" \
    -e "s/\"1ms\.\.[0-9]*ms\", path/\"1ms..$((10 * arrivals + 31))ms\", path/" \
    -e "s/^horizon = \"[0-9]*ms\"/horizon = \"$((10 * arrivals + 150))ms\"/" \
    -e "s/^accept_batch = [0-9]*/accept_batch = $batch/" "$scenario" >"$file"
grep -q "^count = $arrivals " "$file" && grep -q "1ms..$((10 * arrivals + 31))ms" "$file" ||
  { echo "explore_vs_spin: could not write the scenario for $arrivals arrivals" >&2; exit 2; }
fi

declare -A L
loopsim_side() {  # what sets...
  local what="$1" i dir rc; shift
  local -a wall proc states execs verdicts rcs
  for ((i = 1; i <= runs; i++)); do
    dir="$work/loopsim-$what-$i"; mkdir -p "$dir"
    # loopsim's own limit first, so that a cut search still reports its states (exit 3).
    timed "$dir/explore.t" timeout "$((limit + 60))" "$loopsim" explore "$file" --json --out "$dir/out" \
      --time-limit "${limit}s" "$@" >"$dir/explore.json" 2>"$dir/explore.err"
    rc=$?
    rcs+=("$rc")
    if [ "$rc" -eq 124 ]; then verdicts+=("not-finished"); continue; fi
    verdicts+=("$(jq -r '.verdict + (if (.bounds // []) | length > 0 then "(" + (.bounds | join(",")) + ")" else "" end)' "$dir/explore.json" 2>/dev/null || echo unreadable)")
    wall+=("$(jq -r '.wall_ns / 1e9' "$dir/explore.json")")
    states+=("$(jq -r '.states' "$dir/explore.json")")
    execs+=("$(jq -r '.executions' "$dir/explore.json")")
    proc+=("$(field "$dir/explore.t" 2)")
  done
  L[$what.wall]=$(printf '%s\n' "${wall[@]}" | median)
  L[$what.proc]=$(printf '%s\n' "${proc[@]}" | median)
  L[$what.states]=$(printf '%s\n' "${states[@]}" | median)
  L[$what.execs]=$(printf '%s\n' "${execs[@]}" | median)
  L[$what.verdict]=$(printf '%s\n' "${verdicts[@]}" | sort -u | paste -sd/)
  L[$what.rc]=$(printf '%s\n' "${rcs[@]}" | sort -u | paste -sd/)
  L[$what.dir]="$work/loopsim-$what-$runs"
}

"$loopsim" run "$file" --set loop.owe_unfinished_batch=false >"$work/natural.txt" 2>&1
natural=$?
[ "$natural" -eq 0 ] || [ "$question" = anchor ] ||
  failures+=("the file's own timing strands with the sabotage (loopsim run exit $natural): a search is not needed to find it")

loopsim_side verify
loopsim_side find --set loop.owe_unfinished_batch=false
[ "${L[verify.rc]}:${L[verify.verdict]}" = "0:none_found" ] ||
  failures+=("loopsim verify: exit ${L[verify.rc]}, verdict ${L[verify.verdict]} (want exit 0, none_found; see ${L[verify.dir]})")
if [ "$can_strand" -eq 1 ]; then
  if [ "${L[find.rc]}:${L[find.verdict]}" = "1:violated" ]; then
    cex=$(jq -r '.counterexample' "${L[find.dir]}/explore.json")
    "$loopsim" run "$cex" >"$work/replay.txt" 2>&1
    replay=$?
    [ "$replay" -eq 1 ] || failures+=("loopsim find: its counterexample $cex replays to exit $replay, not 1")
  else
    failures+=("loopsim find: exit ${L[find.rc]}, verdict ${L[find.verdict]} (want exit 1, violated; see ${L[find.dir]})")
  fi
fi
[ "${#failures[@]}" -gt 0 ] && keep_work

# ---------------------------------------------------------------- the report
ratio() { awk -v l="$1" -v s="$2" 'BEGIN { if (l == "-" || s == "-" || s + 0 <= 0) print "-"; else printf "%.1fx", l / s }'; }
per_s() { awk -v n="$1" -v s="$2" 'BEGIN { if (n == "-" || s == "-" || s + 0 <= 0) print "-"; else printf "%.0f", n / s }'; }
echo
if [ "$spin_ok" -eq 1 ]; then
  for what in verify find; do
    printf '  SPIN    %-6s: %s error(s); %s states stored; CPU: spin -a %s, cc %s, pan search %s (pan -w%s -m%s)\n' \
      "$what" "${S[$what.errors]}" "${S[$what.states]}" "$(ms "${S[$what.spin]}")" "$(ms "${S[$what.cc]}")" \
      "$(ms "${S[$what.pan]}")" "${S[$what.w]}" "${S[$what.m]}"
  done
fi
if [ "$anchor_ok" -eq 1 ]; then
  for what in verify find; do
    printf '  anchor  %-6s: %s error(s); %s states stored; CPU: spin -a %s, cc %s, pan search %s (pan -w%s -m%s)\n' \
      "$what" "${S[a$what.errors]}" "${S[a$what.states]}" "$(ms "${S[a$what.spin]}")" "$(ms "${S[a$what.cc]}")" \
      "$(ms "${S[a$what.pan]}")" "${S[a$what.w]}" "${S[a$what.m]}"
  done
fi
for what in verify find; do
  printf '  loopsim %-6s: %s (exit %s); %s states, %s executions; CPU %s (%s states/s); search wall %s\n' \
    "$what" "${L[$what.verdict]}" "${L[$what.rc]}" "${L[$what.states]}" "${L[$what.execs]}" "$(ms "${L[$what.proc]}")" \
    "$(per_s "${L[$what.states]}" "${L[$what.proc]}")" "$(ms "${L[$what.wall]}")"
done
echo "  loopsim run with the sabotage (the file's own timing): exit $natural"
[ "$can_strand" -eq 0 ] &&
  echo "  note: with batch $batch and $arrivals arrivals no batch stops by its count with work left: the sabotage cannot strand"
[ -n "$keep" ] && echo "  kept: $work"
# One machine-readable row, for --sweep.
if [ "$spin_ok" -eq 1 ]; then
  echo "row ${S[verify.states]}/${S[find.states]} |" \
       "$(ms "$(sum "${S[verify.spin]}" "${S[verify.cc]}")")/$(ms "$(sum "${S[find.spin]}" "${S[find.cc]}")") |" \
       "$(ms "${S[verify.pan]}")/$(ms "${S[find.pan]}") |" \
       "${L[verify.states]}/${L[find.states]} | ${L[verify.execs]}/${L[find.execs]} |" \
       "$(ms "${L[verify.proc]}")/$(ms "${L[find.proc]}") | $(ratio "${L[verify.proc]}" "${S[verify.pan]}"), $(ratio "${L[find.proc]}" "${S[find.pan]}");" \
       "$(per_s "${L[verify.states]}" "${L[verify.proc]}")/s"
  [ "$anchor_ok" -eq 1 ] && echo "  anchor: states ${S[averify.states]}/${S[afind.states]}, pan CPU $(ms "${S[averify.pan]}")/$(ms "${S[afind.pan]}"); loopsim/anchor pan CPU $(ratio "${L[verify.proc]}" "${S[averify.pan]}")"
fi
if [ "${#failures[@]}" -gt 0 ]; then
  echo
  printf 'FAILED: %s\n' "${failures[@]}"
  [ -z "$keep" ] && echo "  (work kept in $work)"
  exit 1
fi
exit 0
