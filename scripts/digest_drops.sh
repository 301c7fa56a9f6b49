#!/usr/bin/env bash
# The digest-drop test (explore/digest_drop_test.cpp), on demand: each component of the state
# digest must tell two states of some shipped arm apart alone, or change a search left out.
# Prints one line a component (which arm noticed, and how, or NOT NOTICED) and exits 1 if any
# went unnoticed. It takes long (a component nothing notices costs a search of every arm), so
# CI does not run it. DROPS_EXECUTIONS, DROPS_ONLY and DROPS_VERBOSE: see the test's header.
#   scripts/digest_drops.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
exec "$dir/loopsim_tests" "[drops]" --warn NoTests
