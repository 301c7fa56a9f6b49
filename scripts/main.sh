#!/usr/bin/env bash
# The main job: build, then run the default scenarios (every file in scenarios/) and judge them,
# then draw accept-burst's pass timeline. Exit status: nonzero if any scenario failed.
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

# The seed story as a picture: the base arm of accept-burst, as SVG and PNG.
echo "=== pass timeline of accept-burst (base)"
for picture in out/accept-burst.svg out/accept-burst.png; do
  ./build/loopsim run scenarios/accept-burst.toml --arm base --timeline "$picture" >/dev/null || status=$?
done
echo "    pictures: $(pwd)/out/accept-burst.svg and $(pwd)/out/accept-burst.png"
exit "$status"
