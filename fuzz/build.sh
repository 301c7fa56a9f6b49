#!/usr/bin/env bash
# Configures and builds the libFuzzer harnesses (fuzz/CMakeLists.txt) with clang into BUILD_DIR
# (default build-fuzz/, under the project's root): one fuzz_NAME for each harness NAME.cpp
# (fuzz/README.md lists them). Usage: fuzz/build.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-fuzz}
case "$dir" in /*) ;; *) dir=$root/$dir ;; esac
jobs=${JOBS:-2}
cmake -S "$root/fuzz" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build "$dir" -j "$jobs"
