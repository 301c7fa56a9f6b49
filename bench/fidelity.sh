#!/usr/bin/env bash
# Fidelity: every scenario whose shape runs live, simulated and live (loopsim probe --live self),
# one line each: what agreed within 10 %, what did not, and why a scenario could not run live.
#
#   bash bench/fidelity.sh [--time-limit 30s] [SCENARIO...]    (default: scenarios/*.toml)
#
# Bounded: each live run lasts at most --time-limit (and stops early once nothing is left to
# happen); loopback only. LOOPSIM=path/to/loopsim picks the binary (default build/loopsim).
set -uo pipefail
cd "$(dirname "$0")/.."
loopsim=${LOOPSIM:-build/loopsim}
limit=30s
if [ "${1:-}" = "--time-limit" ]; then limit=$2; shift 2; fi
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(scenarios/*.toml)
[ -x "$loopsim" ] || { echo "fidelity: $loopsim is not built (bash scripts/build.sh release)" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-20s %-6s %s\n' scenario exit "what the probe found"
for file in "${files[@]}"; do
  name=$(basename "$file" .toml)
  "$loopsim" probe "$file" --live self --time-limit "$limit" >"$out/$name.txt" 2>"$out/$name.err"
  status=$?
  if [ "$status" -ge 2 ]; then
    printf '%-20s %-6s %s\n' "$name" "$status" "not live: $(grep -m1 'error:' "$out/$name.err" | sed 's/^error: [^ ]* //')"
    continue
  fi
  apart=$(grep -m1 '^beyond 10 % apart' "$out/$name.txt" | sed 's/^beyond 10 % apart[^:]*: //')
  skipped=$(grep '^live: not applied' "$out/$name.txt" | sed 's/^live: not applied: //' | paste -sd';' -)
  ended=$(grep -m1 '^live: ' "$out/$name.txt" | sed 's/.*: //')
  verdict="agree within 10 %"
  [ -z "$apart" ] || verdict="apart: $apart"
  [ -z "$skipped" ] || verdict="$verdict (not applied live: $skipped)"
  printf '%-20s %-6s %s [%s]\n' "$name" "$status" "$verdict" "$ended"
done
