#!/usr/bin/env bash
# The main job: build, then run the default scenarios (every file in scenarios/) and judge them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release >/dev/null
mkdir -p out
status=0
for scenario in scenarios/*.toml; do
  name=$(basename "$scenario" .toml)
  echo "=== $scenario"
  ./build/loopsim run "$scenario" --trace "out/$name.jsonl" || status=$?
  echo "    trace: out/$name.jsonl"
done
exit "$status"
