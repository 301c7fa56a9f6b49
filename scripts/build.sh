#!/usr/bin/env bash
# Configures and builds one flavour of the tree: `build.sh release` (build/) or
# `build.sh sanitize` (build-sanitize/, ASan + UBSan). Warnings are errors in both.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
jobs=${JOBS:-2}
case "$flavour" in
  release)  dir=build;          extra=() ;;
  # One unit of several files per target (tests apart): the sanitized build compiles in about
  # half the time. The release build stays a unit per file, as a user's build is.
  sanitize) dir=build-sanitize; extra=(-DLOOPSIM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=ON) ;;
  *) echo "usage: build.sh [release|sanitize]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DLOOPSIM_WERROR=ON "${extra[@]}" >/dev/null
cmake --build "$dir" -j "$jobs"
