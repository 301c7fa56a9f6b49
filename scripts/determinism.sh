#!/usr/bin/env bash
# Determinism: every arm of every scenario, run twice, must write byte-identical traces, and
# every run must meet its expectation (exit 0: the base held, a sabotage arm was caught).
# `determinism.sh [LOOPSIM]`, build/loopsim by default.
set -euo pipefail
cd "$(dirname "$0")/.."
loopsim=${1:-build/loopsim}
command -v jq >/dev/null || { echo "determinism: needs jq (apt-get install jq)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arms_run=0
for scenario in scenarios/*.toml examples/*/*.toml; do
  status=0
  "$loopsim" run "$scenario" --json >"$tmp/all.json" || status=$?
  [ "$status" -eq 0 ] || { echo "determinism: $scenario: exit $status, not 0" >&2; exit 1; }
  mapfile -t arms < <(jq -r '.arms[].name' "$tmp/all.json")
  [ "${#arms[@]}" -gt 0 ] || { echo "determinism: $scenario: no arms in its report" >&2; exit 1; }
  line="  $scenario"
  for arm in "${arms[@]}"; do
    for i in 1 2; do
      status=0
      "$loopsim" run "$scenario" --arm "$arm" --trace "$tmp/$i.jsonl" >/dev/null || status=$?
      [ "$status" -eq 0 ] || { echo "determinism: $scenario, arm $arm: exit $status, not 0" >&2; exit 1; }
    done
    a=$(sha256sum <"$tmp/1.jsonl" | cut -d' ' -f1)
    b=$(sha256sum <"$tmp/2.jsonl" | cut -d' ' -f1)
    [ "$a" = "$b" ] || { echo "determinism: $scenario, arm $arm: traces differ" >&2; exit 1; }
    line+=" $arm=${a:0:12}"
    arms_run=$((arms_run + 1))
  done
  echo "$line"
done
echo "determinism: $arms_run arms, each run twice, traces identical"
