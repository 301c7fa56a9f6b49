#!/usr/bin/env bash
# The POSIX seam's engine under AddressSanitizer, inside unmodified targets (C, Go, statically linked).
#
#   bash scripts/seam_asan.sh [BUILD_DIR]     (default build/, a release build)
#
# The release build makes libloopsim_seam_asan.so beside libloopsim_seam.so: the same seam with
# its own code but the interposers, and its scheduler (for the fiber annotations), built with
# -fsanitize=address (the interposers stay plain: ASan's runtime calls getrlimit before it has
# mapped its shadow, and lands in them). The layers it links are the release build's. A target runs it
# with ASan's runtime preloaded first (LOOPSIM_SEAM_PRELOAD) and without loopsim's memory cap,
# which would refuse ASan's shadow reservation.
#
# First the stage shows it can fail: with LOOPSIM_SEAM_TEST_OVERRUN the seam reads one byte past
# a heap block of its own, and the run must end in ASan's report. Then each scenario below must
# come out as its arms expect, with no report. Python and Node targets are left out: they run
# under ASan for minutes each (py-asyncio's base arm took 138 s).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
loopsim=$build/loopsim
seam=$build/libloopsim_seam_asan.so
[[ -x $loopsim && -f $seam ]] || { echo "seam_asan: build first (bash scripts/build.sh release): $seam" >&2; exit 2; }
runtime=$(readlink -f "$(gcc -print-file-name=libasan.so)")
[[ -f $runtime ]] || { echo "seam_asan: no ASan runtime (gcc -print-file-name=libasan.so gave $runtime)" >&2; exit 2; }

export LOOPSIM_SEAM=$PWD/$seam LOOPSIM_SEAM_PRELOAD=$runtime
# The targets are not built with ASan: the link order check would refuse them. Leaks are the
# target's own business, and most are its globals at exit.
export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:halt_on_error=1
export PATH=$PWD/$build/examples:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The stage can fail: a planted overrun in the seam is reported, and the run does not hold.
status=0
LOOPSIM_SEAM_TEST_OVERRUN=8 "$loopsim" run examples/epoll/et-emfile.toml --arm base --trace "$work/overrun.trace" \
  >"$work/overrun.out" 2>&1 || status=$?
if [[ $status -eq 0 ]] || ! grep -q "AddressSanitizer: heap-buffer-overflow" "$work"/overrun.*stderr 2>/dev/null; then
  echo "seam_asan: the planted overrun went unreported (exit $status); the seam is not running under ASan" >&2
  cat "$work/overrun.out" >&2
  ls "$work" >&2
  exit 1
fi
echo "seam_asan: the planted overrun is reported (exit $status, AddressSanitizer: heap-buffer-overflow)"

# With statically linked programs, which the seam loads (posix/loaded.cpp), and Go's.
scenarios=(examples/epoll/et-emfile.toml examples/epoll/et-pipelined.toml examples/libuv/uv-burst.toml
  examples/libevent/ev-burst.toml examples/libevent/ev-windows.toml examples/libuv/uv-burst-static.toml
  examples/go/go-http.toml examples/go/go-http-static.toml examples/busybox/busybox-httpd.toml)
"$loopsim" check "${scenarios[@]}"
echo "seam_asan: ${#scenarios[@]} scenarios ran with the seam's engine under AddressSanitizer, no report"

# The seam's own tests, their targets run with the sanitized seam. Left out: the memory cap's,
# which this configuration drops for ASan's shadow.
PATH=$PWD/$build/examples:$PATH ./"$build"/loopsim_tests 'seam*' '~*and running past it is its end' --warn NoTests
PATH=$PWD/$build/examples:$PATH ./"$build"/loopsim_tests 'loaded:*' --warn NoTests
echo "seam_asan: the seam's tests passed with their targets on the sanitized seam"
