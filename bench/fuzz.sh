#!/usr/bin/env bash
# Long fuzzing runs, on demand: each libFuzzer harness (fuzz/README.md) in turn, going on after
# findings, with its corpus kept in BUILD_DIR/corpus/ from one run to the next; prints the table
# of fuzz/run.sh (executions, exec/s, findings) and exits as it does.
#
#   bench/fuzz.sh [SECONDS] [BUILD_DIR]
#
# With SECONDS: each harness runs that long. Without: each runs until 10,000,000 executions,
# at most 3 h each. At the rates measured on the project's 2-core machine (ASan + UBSan, one
# harness at a time, runs of 150 to 600 s), scenario does 1,700-2,900 executions/s, trace
# 1,300-3,100, http 5,000-12,000 and choices 2,300-3,400. So 10 M executions take about
# 1-1.6 h for scenario, 0.9-2.1 h for trace, 15-35 min for http and 0.8-1.2 h for choices: about
# 4-5 h in all. The three added later ran, two at a time for 40 s: merge about 23,000
# executions/s, answer 27,000, wire 100,000 (10 M in 7, 6 and 2 min). The cap only stops a
# harness that runs far below these rates.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-build-fuzz}
case "$dir" in /*) ;; *) dir=$root/$dir ;; esac
if [ $# -ge 1 ]; then
  seconds=$1
else
  seconds=10800
  export FUZZ_RUNS=${FUZZ_RUNS:-10000000}
fi
export FUZZ_KEEP_GOING=${FUZZ_KEEP_GOING:-1}
export FUZZ_CORPUS=${FUZZ_CORPUS:-$dir/corpus}
exec bash "$root/fuzz/run.sh" "$seconds" "$dir"
