#!/usr/bin/env bash
# The search checked against itself, on every arm of every scenario and example (and
# tests/data/explore/, whose horizon-edge.toml has windows that end at the horizon):
#  - `explore --audit`: states with one digest must be one state (exit 4 names the field);
#  - the same search with --no-prune: pruning may only cut work, never change a verdict. A
#    search that ended none_found and one that ended violated on the same arm contradict each
#    other, whichever merged; a bound (exit 3) proves nothing and contradicts nothing. Where
#    the audited search merged nothing (a property measures history), --no-prune would be the
#    same search; the pair is then run judging only the properties a state decides
#    (--judge answered,no_stranded_backlog,liveness, those the arm expects), which merges.
# Bounds are small (AUDIT_EXECUTIONS runs, AUDIT_SECONDS each), so that this fits in CI.
# Scenarios are audited AUDIT_JOBS at a time (default 2, CI's cores); lines print in file order.
# `audit.sh [LOOPSIM]`, build/loopsim by default.
set -euo pipefail
cd "$(dirname "$0")/.."
loopsim=${1:-build/loopsim}
executions=${AUDIT_EXECUTIONS:-300}
seconds=${AUDIT_SECONDS:-3}
jobs=${AUDIT_JOBS:-2}
command -v jq >/dev/null || { echo "audit: needs jq (apt-get install jq)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verdict FILE ARM OPTIONS: runs one search in $work, prints its verdict ("error" on exit 2 or 4).
verdict() {
  local status=0
  "$loopsim" explore "$1" --arm "$2" $3 --no-shrink --max-executions "$executions" \
    --time-limit "${seconds}s" --json --out "$work/out" >"$work/search.json" 2>"$work/search.err" || status=$?
  case $status in
    0 | 1 | 3) jq -r .verdict "$work/search.json" ;;
    4) echo "audit: $1, arm $2: $(jq -r .audit_failure "$work/search.json")" >&2; echo error ;;
    *) echo "audit: $1, arm $2 ($3): exit $status: $(head -c 400 "$work/search.err")" >&2; echo error ;;
  esac
}

# audit_scenario FILE WORK: audits every arm of FILE in the folder WORK, leaving its line in
# WORK/line and its counts in WORK/counts (searched compared trees judged_pairs decisive bounded
# failures).
audit_scenario() {
  local scenario=$1 work=$2 status=0 line arm arms started audited compared_here merged judged unpruned
  local searched=0 compared=0 decisive=0 bounded=0 trees=0 judged_pairs=0 failures=0
  "$loopsim" run "$scenario" --json >"$work/all.json" || status=$?
  mapfile -t arms < <(jq -r '.arms[].name' "$work/all.json" 2>/dev/null || true)
  [ "${#arms[@]}" -gt 0 ] || { echo "audit: $scenario: no arms in its report (exit $status)" >&2; return 1; }
  line="  $scenario"
  for arm in "${arms[@]}"; do
    started=$SECONDS
    audited=$(verdict "$scenario" "$arm" --audit)
    compared_here=$(jq -r '.audit_compared // 0' "$work/search.json" 2>/dev/null || echo 0)
    merged=$(jq -r '.merged // false' "$work/search.json" 2>/dev/null || echo false)
    searched=$((searched + 1))
    compared=$((compared + compared_here))
    judged=""
    if [ "$merged" != true ]; then
      [ "$audited" != error ] || failures=$((failures + 1))
      trees=$((trees + 1))
      line+=" $arm=$audited,tree"
      judged=$(jq -r --arg arm "$arm" '[.arms[] | select(.name == $arm) | .properties[].property
        | select(. == "answered" or . == "no_stranded_backlog" or . == "liveness")] | unique | join(",")' "$work/all.json")
      if [ -z "$judged" ]; then
        line+="($((SECONDS - started))s)"
        continue
      fi
      audited=$(verdict "$scenario" "$arm" "--audit --judge $judged")
      compared=$((compared + $(jq -r '.audit_compared // 0' "$work/search.json" 2>/dev/null || echo 0)))
      if [ "$(jq -r '.merged // false' "$work/search.json" 2>/dev/null || echo false)" != true ]; then
        line+="($((SECONDS - started))s)"
        continue
      fi
      judged_pairs=$((judged_pairs + 1))
      line+=",judged:"
    fi
    unpruned=$(verdict "$scenario" "$arm" "--no-prune${judged:+ --judge $judged}")
    if [ "$audited" = error ] || [ "$unpruned" = error ]; then
      failures=$((failures + 1))
    elif { [ "$audited" = none_found ] && [ "$unpruned" = violated ]; } ||
         { [ "$audited" = violated ] && [ "$unpruned" = none_found ]; }; then
      echo "audit: $scenario, arm $arm: pruned says $audited, unpruned says $unpruned" >&2
      failures=$((failures + 1))
    elif [ "$audited" = bound_reached ] || [ "$unpruned" = bound_reached ]; then
      bounded=$((bounded + 1))
    else
      decisive=$((decisive + 1))
    fi
    [ -n "$judged" ] || line+=" $arm="
    line+="$audited/$unpruned($((SECONDS - started))s)"
  done
  echo "$line" >"$work/line"
  echo "$searched $compared $trees $judged_pairs $decisive $bounded $failures" >"$work/counts"
}

files=(scenarios/*.toml examples/*/*.toml bench/spin/*.toml tests/data/explore/*.toml)
searched=0 compared=0 decisive=0 bounded=0 trees=0 judged_pairs=0 failures=0
printed=0
# flush: prints, in file order, the lines of every scenario finished so far, adding its counts.
flush() {
  while [ "$printed" -lt "${#files[@]}" ] && [ -f "$tmp/$printed/counts" ]; do
    cat "$tmp/$printed/line"
    read -r a b c d e f g <"$tmp/$printed/counts"
    searched=$((searched + a)) compared=$((compared + b)) trees=$((trees + c))
    judged_pairs=$((judged_pairs + d)) decisive=$((decisive + e)) bounded=$((bounded + f))
    failures=$((failures + g))
    printed=$((printed + 1))
  done
}
for i in "${!files[@]}"; do
  mkdir -p "$tmp/$i"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; flush; done
  audit_scenario "${files[$i]}" "$tmp/$i" &
done
wait || true
flush
[ "$printed" -eq "${#files[@]}" ] || { echo "audit: ${files[$printed]}: not audited" >&2; exit 1; }
echo "audit: $searched arms searched; $compared states compared again by digest;" \
  "$((searched - trees)) merged as they are and $judged_pairs more judging only what a state decides;" \
  "of those pruned/unpruned pairs $decisive agree decisively and $bounded were cut by a bound;" \
  "$failures failures"
[ "$failures" -eq 0 ]
