#!/usr/bin/env bash
# Sorts a harness's findings by what they are: runs BUILD_DIR/fuzz_NAME on each FILE (or each
# file in a folder), and prints one line a kind of finding, with how many inputs show it and the
# smallest of them. A kind is the report's first line (the sanitizer's error, the exception's
# type and what(), the harness's "fuzz finding: ...") and the first frame in the project's
# own code below the harness.
#
# Usage: fuzz/triage.sh NAME FILE|DIR... [-- BUILD_DIR]   (BUILD_DIR: default build-fuzz)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: triage.sh NAME FILE|DIR... [-- BUILD_DIR]}
shift
inputs=()
dir=build-fuzz
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then dir=${2:?}; break; fi
  inputs+=("$1")
  shift
done
case "$dir" in /*) ;; *) dir=$root/$dir ;; esac
binary=$dir/fuzz_$name
source "$root/fuzz/sanitizer_options.sh"

# What the report says first: the error line, with addresses, pids and sizes left out.
what_of() {
  grep -m 1 -E '^(fuzz finding: |  what\(\): |.*runtime error: |==[0-9]+==ERROR: |SUMMARY: libFuzzer: |==[0-9]+== ERROR: libFuzzer: )' "$1" |
    sed -E -e 's/^==[0-9]+== ?//' -e 's/0x[0-9a-f]+/ADDR/g' -e 's/\(pid=[0-9]+\)//' -e 's/[0-9.]+e[+-][0-9]+/N/g' -e 's/[0-9]{6,}/N/g' | cut -c 1-160 || true
}
# The first frame in the project below the harness: "function file:line".
frame_of() {
  grep -E '^ +#[0-9]+ ' "$1" | grep -E " $root/[a-z_]+/[^ ]+\.[ch]pp:[0-9]+" | grep -v " $root/fuzz/" | head -n 1 |
    sed -E -e 's/\(anonymous namespace\)/{anon}/g' -e 's/^ +#[0-9]+ 0x[0-9a-f]+ in //' \
      -e "s|$root/||" -e 's/^([^(]*)\(.*\) ([^ ]+)$/\1 \2/' -e 's/^(.*) ([^ ]+)$/\1 \2/' |
    awk '{ f = $1; sub(/<.*/, "", f); print f, $NF }' || true
}

declare -A count smallest size
for input in "${inputs[@]}"; do
  for file in $( [ -d "$input" ] && find "$input" -type f | sort || echo "$input"); do
    out=$(mktemp)
    "$binary" "$file" >"$out" 2>&1 || true
    what=$(what_of "$out")
    key=${what:+$what | at $(frame_of "$out")}
    key=${key:-runs clean}
    rm -f "$out"
    bytes=$(stat -c %s "$file")
    count[$key]=$(( ${count[$key]:-0} + 1 ))
    if [ -z "${size[$key]:-}" ] || [ "$bytes" -lt "${size[$key]}" ]; then
      size[$key]=$bytes
      smallest[$key]=$file
    fi
  done
done
for key in "${!count[@]}"; do
  printf '%4d  %s\n      smallest: %s (%s bytes)\n' "${count[$key]}" "$key" "${smallest[$key]}" "${size[$key]}"
done
