#!/usr/bin/env bash
# Runs each libFuzzer harness for SECONDS (FUZZ_JOBS at a time; by default one after the
# other), on seed corpora prepared in a temporary folder (fuzz/seed_corpus.sh), and prints one line a harness: its executions, their
# rate and its findings (0, or the file that reproduces one). Exits 1 if any harness found a
# crash, a leak, a timeout, an out-of-memory or a sanitizer report; 2 if one could not run.
# CI calls `FUZZ_SEED=1 FUZZ_JOBS=2 bash fuzz/run.sh 45`.
#
# Usage: fuzz/run.sh SECONDS [BUILD_DIR]   (BUILD_DIR: default build-fuzz, built if needed)
#
# Environment:
#   FUZZ_ONLY="http trace"  run only these harnesses (scenario, trace, http, choices, merge,
#                           answer, wire, shape)
#   FUZZ_JOBS=N             run N harnesses at once (default 1; CI runs 2 on its 2 cores)
#   FUZZ_RUNS=N             also stop each harness after N executions
#   FUZZ_SEED=N             libFuzzer's -seed: the same inputs tried in the same order on every
#                           run (CI sets it, so that a red run replays; bench/fuzz.sh does not)
#   FUZZ_KEEP_GOING=1       go on after a finding (libFuzzer's -fork=1 -ignore_crashes=1 ...)
#                           and report how many inputs were kept; fuzz/triage.sh sorts them
#   FUZZ_CORPUS=DIR         keep the corpora in DIR/NAME across runs (seeded when empty)
#                           instead of a temporary folder
# Findings are kept in BUILD_DIR/findings/NAME/, logs in BUILD_DIR/logs/NAME.log. Reproduce one
# with BUILD_DIR/fuzz_NAME FILE. The findings stay on the machine that ran; so that a run
# elsewhere (CI) can be replayed from its log alone, each new finding is also printed after the
# table: the report's first lines and the input in base64. `base64 -d >FILE` gives it back.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:?usage: run.sh SECONDS [BUILD_DIR]}
dir=${2:-build-fuzz}
case "$dir" in /*) ;; *) dir=$root/$dir ;; esac
harnesses=(${FUZZ_ONLY:-scenario trace http choices merge answer wire shape})

# The longest input each harness takes: a scenario file, a trace (cut; the seeds are longer), a
# connection's bytes (past the 8192-byte head limit), a choices list or recording.
# A shard document, a server's bytes (past the 64 KiB head bound), a target's messages, a shape
# (a scenario file). The shape harness reads scenario files: it shares their dictionary.
declare -A max_len=([scenario]=8192 [trace]=16384 [http]=10240 [choices]=4096 [merge]=8192 [answer]=70000 [wire]=16384 [shape]=8192)
declare -A dict_of=([shape]=scenario)

mkdir -p "$dir/logs"
bash "$root/fuzz/build.sh" "$dir" >"$dir/logs/build.log" 2>&1 || { cat "$dir/logs/build.log" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=${FUZZ_CORPUS:-$work/corpus}
case "$corpus" in /*) ;; *) corpus=$PWD/$corpus ;; esac
if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
  bash "$root/fuzz/seed_corpus.sh" "$corpus" >/dev/null
fi
source "$root/fuzz/sanitizer_options.sh"

# One harness: its line of the table in $work/line.NAME, its status (0, 1 found, 2 could not
# run) in $work/status.NAME.
run_one() {
  local name=$1 status=0 log findings options rc runs rate last time new known found
  log=$dir/logs/$name.log
  findings=$dir/findings/$name
  mkdir -p "$findings"
  ls "$findings" | sort >"$work/before.$name"
  options=(-max_total_time="$seconds" -max_len="${max_len[$name]}" -timeout=10 -rss_limit_mb=2048
           -dict="$root/fuzz/dict/${dict_of[$name]:-$name}.dict" -print_final_stats=1 -artifact_prefix="$findings/")
  [ -n "${FUZZ_RUNS:-}" ] && options+=(-runs="$FUZZ_RUNS")
  [ -n "${FUZZ_SEED:-}" ] && options+=(-seed="$FUZZ_SEED")
  [ "${FUZZ_KEEP_GOING:-0}" = 1 ] && options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  rc=0
  (cd "$work" && "$dir/fuzz_$name" "${options[@]}" "$corpus/$name") >"$log" 2>&1 || rc=$?

  # One process: its final stats. -fork: the last status line ("#N: cov: ... time: Ns ..."),
  # whose exec/s is the last job's; the rate is the executions over the time.
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  if [ -z "$runs" ]; then
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -n 1 || true)
    runs=$(sed -n 's/^#\([0-9]*\): .*/\1/p' <<<"$last")
    time=$(sed -n 's/.* time: \([0-9]*\)s .*/\1/p' <<<"$last")
    [ -n "$runs" ] && [ "${time:-0}" -gt 0 ] && rate=$((runs / time))
  fi
  ls "$findings" | sort | comm -13 "$work/before.$name" - >"$work/new.$name"
  new=$(wc -l <"$work/new.$name")
  # A crash whose input is already kept (the file is named by its SHA-1) adds no file.
  known=$(grep -cE 'Test unit written|oom/timeout/crash: ([1-9]|[0-9]+/[1-9]|[0-9]+/[0-9]+/[1-9])' "$log" || true)
  if [ "$new" -eq 0 ] && [ "$known" -gt 0 ]; then
    found="an input already in $findings/, see $log"
    status=1
  elif [ "$new" -eq 0 ] && [ "$rc" -eq 0 ]; then
    found=0
  elif [ "$new" -eq 1 ]; then
    found=$findings/$(cat "$work/new.$name")
    status=1
  elif [ "$new" -gt 1 ]; then
    found="$new inputs in $findings/ (fuzz/triage.sh $name $findings)"
    status=1
  else
    found="exit status $rc, see $log"
    [ "$status" -ne 0 ] || status=2
  fi
  printf '%-10s %14s %10s  %s\n' "$name" "${runs:-?}" "${rate:-?}" "$found" >"$work/line.$name"
  echo "$status" >"$work/status.$name"
}

for name in "${harnesses[@]}"; do
  [ -n "${max_len[$name]:-}" ] || { echo "unknown harness: $name" >&2; exit 2; }
done
# FUZZ_JOBS harnesses at once (default 1): CI runs two on its two cores.
jobs=${FUZZ_JOBS:-1}
running=0
for name in "${harnesses[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

status=0
printf '%-10s %14s %10s  %s\n' harness executions exec/s findings
for name in "${harnesses[@]}"; do
  cat "$work/line.$name" 2>/dev/null || printf '%-10s %14s %10s  %s\n' "$name" ? ? "did not finish"
  s=$(cat "$work/status.$name" 2>/dev/null || echo 2)
  if [ "$s" -eq 1 ] || { [ "$s" -eq 2 ] && [ "$status" -eq 0 ]; }; then status=$s; fi
done
for name in "${harnesses[@]}"; do
  [ -s "$work/new.$name" ] || continue
  while read -r file; do
    echo "== finding of $name: $file"
    grep -a -m 12 -E 'fuzz finding|ERROR|SUMMARY|runtime error|^    #[0-9] ' "$dir/logs/$name.log" || true
    echo "-- the input, $(wc -c <"$dir/findings/$name/$file") bytes, base64:"
    base64 -w 76 "$dir/findings/$name/$file"
  done <"$work/new.$name"
done
exit "$status"
