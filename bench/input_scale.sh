#!/usr/bin/env bash
# How loading and running grow with the size of the input: many [[clients]] groups (one
# connection and one request each), and many pipelined requests on one keep-alive connection.
#
#   bench/input_scale.sh [--runs R] [--loopsim PATH]
#
# For each size, the median wall time of R runs (default 3) of `loopsim run`, and the ratio to
# the size before it. Doubling the input should about double the time (a ratio near 2); a ratio
# near 4 is a quadratic cost.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
loopsim="$root/build/loopsim"
runs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a value}"; shift 2 ;;
    --loopsim) loopsim="${2:?--loopsim needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "input_scale: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$loopsim" ] || { echo "input_scale: no loopsim at $loopsim (build it first)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

groups() {  # N groups, the i-th connecting and asking at i µs
  echo 'horizon = "10s"'
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++)
    printf "[[clients]]\nname = \"g%d\"\nconnect_at = \"%dus\"\nrequests = [{ at = \"%dus\", path = \"/fast\" }]\n", i, i, i }'
  printf '[[expect]]\nproperty = "answered"\n'
}

pipelined() {  # one keep-alive connection sending N requests at once
  printf 'horizon = "100s"\n[[clients]]\nname = "p"\nkeep_alive = true\nrequests = ['
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s{ at = \"1ms\", path = \"/fast\" }", (i ? ", " : "") }'
  printf ']\n[[expect]]\nproperty = "answered"\n'
}

median_ms() {  # the median wall time of `loopsim run FILE`, in ms
  local file="$1" i start end
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    "$loopsim" run "$file" >/dev/null 2>&1 || { echo "input_scale: $file did not hold" >&2; exit 1; }
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
  done | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

for shape in groups pipelined; do
  sizes="10000 20000 40000 80000"
  previous=""
  printf '%-10s %8s %10s %8s\n' "$shape" size "wall ms" ratio
  for n in $sizes; do
    "$shape" "$n" >"$work/$shape-$n.toml"
    ms=$(median_ms "$work/$shape-$n.toml")
    ratio="-"
    [ -n "$previous" ] && ratio=$(awk -v a="$ms" -v b="$previous" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    printf '%-10s %8d %10d %8s\n' "" "$n" "$ms" "$ratio"
    previous="$ms"
  done
done
