#!/usr/bin/env bash
# Runs a build's tests with ctest and checks that every test ran: ctest must have run as many
# tests as the test binary defines, each by a name that matched it. A name that matches nothing
# (CMake once split names at ';') would otherwise pass having run nothing.
#   ctest_all.sh BUILD_DIR [ctest arguments...]
set -euo pipefail
dir=${1:?usage: ctest_all.sh BUILD_DIR [ctest arguments...]}
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$log" || status=$?
# Catch2 exits with the number of tests it listed (255 at most), so its status says nothing here.
# The build's test spec (CMakeLists.txt writes it): empty for every test, or the tags it leaves
# out. What a spec leaves out is named, never dropped in silence.
spec=$(cat "$dir/test_spec.txt" 2>/dev/null || true)
names=$("$dir/loopsim_tests" ${spec:+"$spec"} --list-test-names-only || true)
defined=$(grep -c . <<<"$names" || true)
if [ -n "$spec" ]; then
  left=$(comm -23 <("$dir/loopsim_tests" --list-test-names-only | sort) <(sort <<<"$names") || true)
  echo "tests: the spec $spec of $dir leaves out $(grep -c . <<<"$left" || true), each run by the release build:"
  sed 's/^/  /' <<<"$left"
fi
registered=$(ctest --test-dir "$dir" -N | sed -n 's/^Total Tests: \([0-9]*\)$/\1/p')
ran=$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' "$log" | tail -1)
echo "tests: $defined defined in $dir/loopsim_tests${spec:+ under $spec}, $registered registered with ctest, ${ran:-none} run"
if grep -q "No test cases matched" "$log"; then
  echo "ctest_all: a registered name matched no test:" >&2
  grep -B2 "No test cases matched" "$log" >&2
  exit 1
fi
if [ "$registered" != "$defined" ] || [ "${ran:-0}" != "$defined" ]; then
  echo "ctest_all: $defined tests defined, $registered registered, ${ran:-0} run: every test must run once" >&2
  exit 1
fi
exit "$status"
