#!/usr/bin/env bash
# The test job: both builds, every test in each, and the determinism check (every arm of
# every scenario run twice must write byte-identical traces).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's header says how long the job has run, so that a slow stage shows in the log.
stage() { echo "== $* [$((SECONDS / 60)) min $((SECONDS % 60)) s in]"; }

stage "release build"
bash scripts/build.sh release
stage "tests (release)"
bash scripts/ctest_all.sh build -j 2

stage "example targets: unmodified programs on the simulated kernel (loopsim check examples/)"
./build/loopsim check examples/

stage "seam under ASan: the seam's engine built with AddressSanitizer inside unmodified C targets"
bash scripts/seam_asan.sh build

stage "seam under TSan: the seam's engine built with ThreadSanitizer inside unmodified threaded targets"
bash scripts/seam_tsan.sh build

stage "package: the .deb built, checked, installed, served from, purged (docs/deploy.md)"
bash scripts/package_test.sh build

stage "library: the dev component installed, examples/own-kernel-loop built out of tree against it"
bash scripts/library_test.sh build

stage "threads (ThreadSanitizer): the live build's workers, hand-offs, pool and drain"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOPSIM_TSAN=ON >/dev/null
cmake --build build-tsan -j 2
TSAN_OPTIONS=halt_on_error=1 ./build-tsan/loopsim_tsan_tests "[threads]" --warn NoTests

stage "sanitize build (ASan + UBSan)"
bash scripts/build.sh sanitize
stage "tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  bash scripts/ctest_all.sh build-sanitize -j 2

stage "fuzz: each libFuzzer harness 45 s (ASan + UBSan), two at a time, seed 1 (fuzz/README.md)"
FUZZ_SEED=1 FUZZ_JOBS=2 bash fuzz/run.sh 45

stage "determinism: every arm of every scenario twice, trace digests compared, each exit 0"
bash scripts/determinism.sh build/loopsim

stage "search audit: every arm's search audited (states with one digest are one state), and pruning on and off agree"
bash scripts/audit.sh build/loopsim

stage "seed tables: docs/seed-tables.md is what loopsim seeds writes now"
bash scripts/seed_tables_current.sh build/loopsim

stage "deploy: the Kubernetes and Slurm files pass deploy/validate.sh, and broken copies do not"
bash deploy/validate_test.sh

echo "all test stages passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
