#!/usr/bin/env bash
# docs/seed-tables.md is current: its simulated figures (row, seed, loopsim, command) are what
# `loopsim seeds` writes now. The document may carry a "loopsim live" column (seeds --live),
# which varies run to run; it is left out of the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
loopsim=${1:-build/loopsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loopsim" seeds --out "$tmp/now.md" >/dev/null
# Each table row as "row | seed | loopsim | command", whether or not a live column sits
# between loopsim and the command.
simulated() {
  awk -F' [|] ' '/^\| / && !/^\| row \|/ && !/^\|---/ {
    live = (NF == 6) ? 1 : 0
    sub(/^\| /, "", $1)
    print $1 " | " $2 " | " $3 " | " $(4 + live)
  }' "$1"
}
simulated docs/seed-tables.md >"$tmp/kept"
simulated "$tmp/now.md" >"$tmp/now"
[ -s "$tmp/now" ] || { echo "seed tables: loopsim seeds wrote no rows" >&2; exit 1; }
if ! diff -u "$tmp/kept" "$tmp/now" >"$tmp/diff"; then
  cat "$tmp/diff" >&2
  echo "seed tables: docs/seed-tables.md is out of date: rerun loopsim seeds --live --out docs/seed-tables.md" >&2
  exit 1
fi
echo "seed tables: $(wc -l <"$tmp/now") rows, as loopsim seeds writes them now"
