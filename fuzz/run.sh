#!/usr/bin/env bash
# Runs each libFuzzer harness for SECONDS, one after the other, on seed corpora prepared in a
# temporary folder (fuzz/seed_corpus.sh), and prints one line a harness: its executions, their
# rate and its findings (0, or the file that reproduces one). Exits 1 if any harness found a
# crash, a leak, a timeout, an out-of-memory or a sanitizer report; 2 if one could not run.
# CI calls `bash fuzz/run.sh 60`.
#
# Usage: fuzz/run.sh SECONDS [BUILD_DIR]   (BUILD_DIR: default build-fuzz, built if needed)
#
# Environment:
#   FUZZ_ONLY="http trace"  run only these harnesses (scenario, trace, http, choices)
#   FUZZ_RUNS=N             also stop each harness after N executions
#   FUZZ_KEEP_GOING=1       go on after a finding (libFuzzer's -fork=1 -ignore_crashes=1 ...)
#                           and report how many inputs were kept; fuzz/triage.sh sorts them
# Findings are kept in BUILD_DIR/findings/NAME/, logs in BUILD_DIR/logs/NAME.log. Reproduce one
# with BUILD_DIR/fuzz_NAME FILE.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:?usage: run.sh SECONDS [BUILD_DIR]}
dir=${2:-build-fuzz}
case "$dir" in /*) ;; *) dir=$root/$dir ;; esac
harnesses=(${FUZZ_ONLY:-scenario trace http choices})

# The longest input each harness takes: a scenario file, a trace (cut; the seeds are longer), a
# connection's bytes (past the 8192-byte head limit), a choices list or recording.
declare -A max_len=([scenario]=8192 [trace]=16384 [http]=10240 [choices]=4096)

bash "$root/fuzz/build.sh" "$dir" >"$dir.build.log" 2>&1 || { cat "$dir.build.log" >&2; exit 2; }
rm -f "$dir.build.log"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$root/fuzz/seed_corpus.sh" "$work/corpus" >/dev/null
mkdir -p "$dir/logs"
source "$root/fuzz/sanitizer_options.sh"

status=0
printf '%-10s %14s %10s  %s\n' harness executions exec/s findings
for name in "${harnesses[@]}"; do
  [ -n "${max_len[$name]:-}" ] || { echo "unknown harness: $name" >&2; exit 2; }
  log=$dir/logs/$name.log
  findings=$dir/findings/$name
  mkdir -p "$findings"
  ls "$findings" | sort >"$work/before"
  options=(-max_total_time="$seconds" -max_len="${max_len[$name]}" -timeout=10 -rss_limit_mb=2048
           -dict="$root/fuzz/dict/$name.dict" -print_final_stats=1 -artifact_prefix="$findings/")
  [ -n "${FUZZ_RUNS:-}" ] && options+=(-runs="$FUZZ_RUNS")
  [ "${FUZZ_KEEP_GOING:-0}" = 1 ] && options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  rc=0
  (cd "$work" && "$dir/fuzz_$name" "${options[@]}" "$work/corpus/$name") >"$log" 2>&1 || rc=$?

  # One process: its final stats. -fork: the last status line ("#N: cov: ... exec/s N ...").
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  if [ -z "$runs" ]; then
    runs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -n 1)
    rate=$(sed -n 's/^#[0-9]*: cov:.* exec\/s \([0-9]*\) .*/\1/p' "$log" | tail -n 1)
  fi
  ls "$findings" | sort | comm -13 "$work/before" - >"$work/new"
  new=$(wc -l <"$work/new")
  if [ "$new" -eq 0 ] && [ "$rc" -eq 0 ]; then
    found=0
  elif [ "$new" -eq 1 ]; then
    found=$findings/$(cat "$work/new")
    status=1
  elif [ "$new" -gt 1 ]; then
    found="$new inputs in $findings/ (fuzz/triage.sh $name $findings)"
    status=1
  else
    found="exit status $rc, see $log"
    [ "$status" -ne 0 ] || status=2
  fi
  printf '%-10s %14s %10s  %s\n' "$name" "${runs:-?}" "${rate:-?}" "$found"
done
exit "$status"
