#!/usr/bin/env bash
# `loopsim explore` with snapshots (a branch resumes from a copy of the arena the world lives in,
# explore/arena.hpp) against replays (every branch run again from time 0), on the same
# exhaustive searches.
#
#   bench/explore_snapshots.sh [--runs R] [--loopsim PATH]
#
# Scenarios: bench/snapshots/late-choices.toml (its choices come after 3 s of posts: long
# replays), and bench/spin/accept-free.toml at 16 arrivals (short executions, many branches).
# Each figure is the median of R runs (default 3). Prints per scenario: wall with snapshots, wall replaying, their ratio, and
# the steps replayed each way. Both ways must reach the same states and executions, or it says
# so and exits 1.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
loopsim="$root/build/loopsim"
runs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a value}"; shift 2 ;;
    --loopsim) loopsim="${2:?--loopsim needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "explore_snapshots: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$loopsim" ] || { echo "explore_snapshots: no loopsim at $loopsim (build it first)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed -e "s/^count = [0-9]*\(.*\)/count = 16\1/" -e 's/"1ms\.\.111ms"/"1ms..191ms"/' \
  -e 's/^horizon = .*/horizon = "310ms"/' "$here/spin/accept-free.toml" >"$work/accept-free-16.toml"

field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

status=0
printf '%-22s %12s %12s %8s %14s %14s %10s\n' scenario "snapshots ms" "replays ms" ratio \
  "replayed (s)" "replayed (r)" snapshots
for scenario in "$here/snapshots/late-choices.toml" "$work/accept-free-16.toml"; do
  name="$(basename "$scenario" .toml)"
  for mode in 2048 0; do
    : >"$work/$mode.walls"
    for _ in $(seq "$runs"); do
      "$loopsim" explore "$scenario" --json --depth 100000000 \
        --max-executions 1000000000 --snapshot-mib "$mode" >"$work/$mode.json" 2>/dev/null
      [ $? -eq 0 ] || { echo "explore_snapshots: $name --snapshot-mib $mode did not finish with none_found" >&2; status=1; }
      echo $(( $(field "$work/$mode.json" wall_ns) / 1000000 )) >>"$work/$mode.walls"
    done
  done
  for key in states executions transitions; do
    if [ "$(field "$work/2048.json" $key)" != "$(field "$work/0.json" $key)" ]; then
      echo "explore_snapshots: $name: $key differ between snapshots and replays" >&2
      status=1
    fi
  done
  s=$(median <"$work/2048.walls")
  r=$(median <"$work/0.walls")
  printf '%-22s %12s %12s %8s %14s %14s %10s\n' "$name" "$s" "$r" \
    "$(awk -v s="$s" -v r="$r" 'BEGIN { printf "%.3f", (r > 0 ? s / r : 0) }')" \
    "$(field "$work/2048.json" replayed_steps)" "$(field "$work/0.json" replayed_steps)" \
    "$(field "$work/2048.json" snapshots)"
done
exit $status
