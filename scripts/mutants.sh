#!/usr/bin/env bash
# Mutation check: applies a fixed set of small defects ("mutants") one at a time to a scratch
# copy of the tree at HEAD, rebuilds it incrementally, and runs the tests that should catch each.
# A mutant the tests do not fail on "survives": the tests could not have caught that bug.
#
#   scripts/mutants.sh [SCRATCH_DIR]
#
# SCRATCH_DIR (default $LOOPSIM_MUTANTS_DIR, else $TMPDIR/loopsim-mutants) holds a detached git
# worktree of HEAD and its build; it is kept between runs, so only the first run builds the whole
# tree. The caller's working tree and build are never touched. The scratch tree is reset to HEAD
# before each run and after each mutant. Prints a table and "N killed, M survived"; exits 1 if
# any mutant survived, did not apply or did not build (and non-zero if the setup fails).
#
# Too slow for CI (a full build of the scratch tree, then one rebuild and one test run per
# mutant): run it on demand, and after changing the tests it names. docs/testing.md records
# the last measured run.
set -euo pipefail

repo=$(git rev-parse --show-toplevel)
revision=$(git -C "$repo" rev-parse HEAD)
scratch=${1:-${LOOPSIM_MUTANTS_DIR:-${TMPDIR:-/tmp}/loopsim-mutants}}
src="$scratch/src"
build="$src/build"
jobs=${LOOPSIM_MUTANTS_JOBS:-2}

# Each mutant: name | file | sed script | ctest regex of the tests expected to kill it.
# The sed script must change the file (checked), and the change must build.
mutants=(
  "K2: EMFILE one descriptor past the limit|model/sim_kernel.cpp|s/if (fd >= config_.rlimit_nofile) return -EMFILE;/if (fd > config_.rlimit_nofile) return -EMFILE;/|^K2 "
  "digest: Scheduler::Thread::in_call skipped|model/scheduler_thread.hpp|s/loopsim::state::f::value(\"in_call\")/loopsim::state::f::skip(\"in_call\")/|^digest completeness"
  "latency: bound tolerance doubled|checker/properties.cpp|s/  v.held = v.measured <= v.bound;\$/  v.held = v.measured <= 2 * v.bound;/|^latency "
  "seam: errno not restored after a call that succeeds|posix/interpose.hpp|s/^  errno = saved;\$/  (void)saved;/|^seam: fstat"
  "R4: emfile_retry knob inverted|realloop/accept.cpp|s/  if (!config_.emfile_retry) return;/  if (config_.emfile_retry) return;/|^R4 "
)

say() { printf '%s\n' "$*" >&2; }

prepare() {
  mkdir -p "$scratch"
  if [[ ! -e "$src/.git" ]]; then
    git -C "$repo" worktree add --detach "$src" "$revision" >/dev/null
  fi
  git -C "$src" checkout --quiet --force --detach "$revision"
  git -C "$src" clean --quiet -fd --exclude=build
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$src" -B "$build" -G Ninja -DLOOPSIM_WERROR=ON "${launcher[@]}" >/dev/null
  say "building the scratch tree at ${revision:0:12} ($src)"
  cmake --build "$build" -j "$jobs" --target loopsim_tests >/dev/null
}

# The tests that failed in a ctest log, joined with "; ".
failed_tests() {
  sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Failed\|Subprocess aborted\|SEGFAULT\|Exception\|Timeout\|Child aborted\).*/\1/p' "$1" |
    paste -sd ';' - | sed 's/;/; /g'
}

killed=0
survived=0
rows=()

run_one() {
  local name=$1 file=$2 script=$3 tests=$4
  local path="$src/$file" log="$scratch/mutant-$((killed + survived + 1)).log" start=$SECONDS verdict by
  cp "$path" "$scratch/original"
  sed -i -e "$script" "$path"
  if cmp -s "$path" "$scratch/original"; then
    rows+=("$name|$file|NOT APPLIED (the line moved: update this script)|-|0")
    survived=$((survived + 1))
    return
  fi
  if ! cmake --build "$build" -j "$jobs" --target loopsim_tests >"$log" 2>&1; then
    verdict="DID NOT BUILD"
    by="(see $log)"
    survived=$((survived + 1))
  elif ctest --test-dir "$build" -R "$tests" --output-on-failure >"$log" 2>&1; then
    verdict="SURVIVED"
    by="-"
    survived=$((survived + 1))
  else
    verdict="killed"
    by=$(failed_tests "$log")
    killed=$((killed + 1))
  fi
  git -C "$src" checkout --quiet -- "$file"
  rows+=("$name|$file|$verdict|$by|$((SECONDS - start))")
}

began=$SECONDS
prepare
say "scratch tree built in $((SECONDS - began)) s"
for mutant in "${mutants[@]}"; do
  IFS='|' read -r name file script tests <<<"$mutant"
  say "mutant: $name"
  run_one "$name" "$file" "$script" "$tests"
done
# Leave the scratch build matching HEAD, so that the next run starts from it.
cmake --build "$build" -j "$jobs" --target loopsim_tests >/dev/null

printf '%-52s %-13s %-6s %s\n' "mutant" "verdict" "secs" "killed by"
for row in "${rows[@]}"; do
  IFS='|' read -r name file verdict by secs <<<"$row"
  printf '%-52s %-13s %-6s %s\n' "$name" "$verdict" "$secs" "$by"
done
printf '%d killed, %d survived (%d s in all)\n' "$killed" "$survived" "$((SECONDS - began))"
[[ $survived -eq 0 ]]
