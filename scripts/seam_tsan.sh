#!/usr/bin/env bash
# The POSIX seam's engine under ThreadSanitizer, inside unmodified threaded targets.
#
#   bash scripts/seam_tsan.sh [BUILD_DIR]     (default build/, a release build)
#
# What it checks is the baton (posix/threads.hpp). Each of a program's threads is a real OS
# thread, and the seam's data (a thread's request and its answer, its record, the engine's state)
# passes between those OS threads and the engine's only as the baton passes. If the baton did not
# order what one holder wrote before what the next reads, the run would depend on the machine.
#
# The release build makes libloopsim_seam_tsan.so: the seam with its engine and its scheduler
# built with -fsanitize=thread (the interposers stay plain, as for ASan: a runtime calls libc
# before it is set up). The scheduler tells TSan of every switch between fibers. A target runs it
# with TSan's runtime preloaded after the seam (LOOPSIM_SEAM_PRELOAD_AFTER): the program's calls
# reach the seam first, and TSan's interceptors see the seam's calls to libc, the OS threads it
# starts and joins among them.
#
# TSAN_OPTIONS below:
# - symbolize=0: TSan's symbolizer opens the program's files through libc, which would land in
#   the seam's interposers while TSan holds its own locks. A report's frames are then module and
#   offset; on a failure this script names the seam's frames with addr2line.
# - report_signal_unsafe=0: the seam runs the program's signal handlers from its own code, and
#   switches fibers inside its preemption handler; TSan would take each for a handler that calls
#   malloc. Races are what this stage is for.
#
# First the stage shows it can fail: with LOOPSIM_SEAM_TEST_RACE the baton is passed with
# relaxed atomics, ordering nothing, and the run must end in TSan's data-race report. Then each
# scenario below must come out as its arms expect, and the seam's tests pass, with no report.
#
# Left out, each for a reason of TSan's rather than the seam's:
# - what needs a signal delivered to a thread that runs the program's own code: the seam's
#   preemption of a spinning thread, the spin watch, a handler taken while the thread waits
#   (SA_ONSTACK's test), haproxy's descriptor-limit arm (its thread spins until preempted).
#   TSan defers an asynchronous signal until the thread next enters its runtime, which a thread
#   spinning in uninstrumented code never does.
# - programs the seam loads (statically linked: busybox, the static Go and libuv builds, the
#   static probes): their libc is their own, and TSan's runtime never sees their threads. The
#   signal tests that compare both builds of the probe run the dynamic one only here
#   (probe_builds, posix/probe_for_tests.hpp).
# - redis, whose allocator (jemalloc) is linked beside TSan's; and the dynamically linked Go
#   server, whose start faults inside TSan's runtime as the loader runs it.
# And, for time alone, the two `generate` tests (about 160 s here together): they run the same
# single-threaded targets a few hundred times, and the ASan stage runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
loopsim=$build/loopsim
seam=$build/libloopsim_seam_tsan.so
[[ -x $loopsim && -f $seam ]] || { echo "seam_tsan: build first (bash scripts/build.sh release): $seam" >&2; exit 2; }
runtime=$(readlink -f "$(gcc -print-file-name=libtsan.so)")
[[ -f $runtime ]] || { echo "seam_tsan: no TSan runtime (gcc -print-file-name=libtsan.so gave $runtime)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LOOPSIM_SEAM=$PWD/$seam LOOPSIM_SEAM_PRELOAD_AFTER=$runtime
export TSAN_OPTIONS="halt_on_error=1:symbolize=0:report_signal_unsafe=0:log_path=$work/tsan"
export PATH=$PWD/$build/examples:$PATH

# A report, with the seam's frames named.
show_reports() {
  local report
  for report in "$work"/tsan.*; do
    [[ -f $report ]] || continue
    echo "--- $report" >&2
    while IFS= read -r line; do
      echo "$line" >&2
      if [[ $line =~ \(libloopsim_seam_tsan\.so\+(0x[0-9a-f]+)\) ]]; then
        echo "        $(addr2line -f -C -e "$seam" "${BASH_REMATCH[1]}" | paste -sd' ')" >&2
      fi
    done <"$report"
  done
}
no_reports() {
  if compgen -G "$work/tsan.*" >/dev/null; then
    echo "seam_tsan: ThreadSanitizer reported $1" >&2
    show_reports
    exit 1
  fi
}

# The stage can fail: a baton that orders nothing is reported.
status=0
LOOPSIM_SEAM_TEST_RACE=1 "$loopsim" run examples/memcached/memcached.toml --arm base >"$work/plant.out" 2>&1 || status=$?
if [[ $status -eq 0 ]] || ! grep -qs "WARNING: ThreadSanitizer: data race" "$work"/tsan.*; then
  echo "seam_tsan: the planted race went unreported (exit $status); the seam is not running under TSan" >&2
  cat "$work/plant.out" >&2
  exit 1
fi
echo "seam_tsan: the planted race is reported (exit $status, WARNING: ThreadSanitizer: data race)"
rm -f "$work"/tsan.*

scenarios=(examples/memcached/memcached.toml examples/nginx/nginx-threads.toml examples/epoll/et-emfile.toml
  examples/epoll/et-pipelined.toml examples/libuv/uv-burst.toml examples/libevent/ev-burst.toml
  examples/libevent/ev-windows.toml)
"$loopsim" check "${scenarios[@]}" || { show_reports; exit 1; }
no_reports "in a scenario"
echo "seam_tsan: ${#scenarios[@]} scenarios ran with the seam's engine under ThreadSanitizer, no report"

# The seam's own tests, their targets run with the sanitized seam, less those named above.
./"$build"/loopsim_tests 'seam*' '~*and running past it is its end' \
  '~seam: a thread that spins on a lock another holds gives way*' \
  '~seam: a target thread that never makes a served call is reported*' \
  '~seam: a signal an SA_ONSTACK handler takes waits*' \
  '~seam: a child per connection serves the connection its parent accepted*' \
  '~seam: generate draws workloads for a target*' '~seam: generate with a relative target program*' \
  --warn NoTests || { show_reports; exit 1; }
no_reports "in the seam's tests"
echo "seam_tsan: the seam's tests passed with their targets on the sanitized seam, no report"
