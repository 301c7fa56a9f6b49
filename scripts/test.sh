#!/usr/bin/env bash
# The test job: both builds, every test in each, and the determinism check (every arm of
# every scenario run twice must write byte-identical traces).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== release build"
bash scripts/build.sh release
echo "== tests (release)"
ctest --test-dir build --output-on-failure -j 2

echo "== example targets: unmodified programs on the simulated kernel (loopsim check examples/)"
./build/loopsim check examples/

echo "== package: the .deb built, checked, installed, served from, purged (docs/deploy.md)"
bash scripts/package_test.sh build

echo "== library: the dev component installed, examples/own-kernel-loop built out of tree against it"
bash scripts/library_test.sh build

echo "== threads (ThreadSanitizer): the live build's workers, hand-offs, pool and drain"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOPSIM_TSAN=ON >/dev/null
cmake --build build-tsan -j 2
TSAN_OPTIONS=halt_on_error=1 ./build-tsan/loopsim_tsan_tests "[threads]"

echo "== sanitize build (ASan + UBSan)"
bash scripts/build.sh sanitize
echo "== tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j 2

echo "== fuzz: each libFuzzer harness 45 s (ASan + UBSan), two at a time, seed 1 (fuzz/README.md)"
FUZZ_SEED=1 FUZZ_JOBS=2 bash fuzz/run.sh 45

echo "== determinism: every arm of every scenario twice, trace digests compared, each exit 0"
bash scripts/determinism.sh build/loopsim

echo "== search audit: every arm's search audited (states with one digest are one state), and pruning on and off agree"
bash scripts/audit.sh build/loopsim

echo "== seed tables: docs/seed-tables.md is what loopsim seeds writes now"
bash scripts/seed_tables_current.sh build/loopsim

echo "== deploy: the Kubernetes and Slurm files pass deploy/validate.sh, and broken copies do not"
bash deploy/validate_test.sh

echo "all test stages passed"
