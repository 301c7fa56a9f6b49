#!/usr/bin/env bash
# Builds the harnesses' seed corpora from the project's own files into OUT/scenario, OUT/trace,
# OUT/http and OUT/choices. Usage: fuzz/seed_corpus.sh OUT
#
#   scenario: scenarios/, examples/ and bench/ scenario files and tests/data/bad-input/*.toml, as
#             they are and with some `--set` lines after a "--set" separator; a counterexample
#             written by `loopsim explore`.
#   trace:    traces of the scenarios' base and first arm (`loopsim run --trace`), cut to a few
#             pieces (the head, the end, the choices), and tests/data/bad-input/*.jsonl.
#   http:     fuzz/corpus/http/ (hand-written requests) and a head over the 8192-byte limit.
#   choices:  the choices lists of the counterexample and of tests/data/bad-input, the choice
#             lines of the traces (recordings), and a few chooser texts ("replay ...").
#   Every harness also gets the inputs kept in fuzz/findings/ under its name: a regression
#   there fails the run that meets it.
#
# Traces come from ./build/loopsim (the release build); without it, the trace and recording
# seeds are only those of tests/data/bad-input.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: seed_corpus.sh OUT}
mkdir -p "$out"/{scenario,trace,http,choices,merge,answer,wire,shape}
out=$(cd "$out" && pwd)
cd "$root"
loopsim=./build/loopsim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- scenarios, and the same with --set lines --------------------------------------------
overrides=("loop.accept_batch=0" "kernel.poller=kqueue" "loop.inverted=true" "loop.yield_batch=1"
           "loop.mode=pool" "seed=7" "horizon=\"1s\"" "loop.workers=2" "kernel.timer_slack=[\"0us\", \"10us\"]"
           "loop.nope=1" "=3" "clients.count=2" "loop.accept_batch = 1e3")
i=0
for f in scenarios/*.toml examples/*/*.toml bench/*/*.toml tests/data/bad-input/*.toml; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .toml)
  cp "$f" "$out/scenario/$name.toml"
  {
    cat "$f"
    echo "--set"
    echo "${overrides[$((i % ${#overrides[@]}))]}"
    echo "${overrides[$(((i + 5) % ${#overrides[@]}))]}"
  } >"$out/scenario/$name-set.toml"
  i=$((i + 1))
done

counterexample=
if [ -x "$loopsim" ]; then
  "$loopsim" explore bench/spin/accept-small.toml --set loop.owe_unfinished_batch=false --out "$work/explore" \
    >/dev/null 2>&1 || true  # exit 1: a counterexample was found
  counterexample=$(find "$work/explore" -name "*.toml" 2>/dev/null | sort | sed -n 1p)
  [ -n "$counterexample" ] && cp "$counterexample" "$out/scenario/counterexample.toml"
fi

# ---- traces ------------------------------------------------------------------------------
cp tests/data/bad-input/*.jsonl "$out/trace/"
if [ -x "$loopsim" ]; then
  for f in scenarios/*.toml; do
    name=$(basename "$f" .toml)
    [ "$name" = flood ] && continue  # 77 MB of the same events as the others
    first_arm=$(awk '/^\[\[arms\]\]/ { arms = 1 } arms && /^name *=/ { gsub(/.*= *"|".*/, ""); print; exit }' "$f")
    for arm in base $first_arm; do
      t=$work/$name-$arm.jsonl
      timeout 60 "$loopsim" run "$f" --arm "$arm" --trace "$t" >/dev/null 2>&1 || true  # 1: violated
      [ -s "$t" ] || continue
      head -n 40 "$t" >"$out/trace/$name-$arm-head"
      head -n 400 "$t" >"$out/trace/$name-$arm-head400"
      { head -n 1 "$t"; tail -n 40 "$t"; } >"$out/trace/$name-$arm-end"
      if grep -q '"ev":"choice"' "$t"; then
        { head -n 1 "$t"; grep -m 50 '"ev":"choice"' "$t"; } >"$out/choices/$name-$arm-recording"
      fi
    done
  done
fi
# The traces need the header line to be a recording too.
cp tests/data/bad-input/*.jsonl "$out/choices/"

# ---- http ----------------------------------------------------------------------------------
cp fuzz/corpus/http/* "$out/http/"
printf 'GET /fast HTTP/1.1\r\nX-Pad: %s\r\n\r\n' "$(head -c 8200 /dev/zero | tr '\0' a)" >"$out/http/too-large"

# ---- choices lists and chooser texts --------------------------------------------------------
for f in $counterexample tests/data/bad-input/choices-*.toml; do
  [ -f "$f" ] || continue
  # choices = [ 'order:2:0', "slack:17:16" ]: one string a line.
  grep '^choices' "$f" | sed -e 's/^choices *= *\[//' -e 's/\].*//' | tr ',' '\n' |
    sed -e "s/^ *['\"]//" -e "s/['\"] *$//" >"$out/choices/list-$(basename "$f" .toml)"
done
printf 'order:3:1\nfault:2:0\nslack:4:3\n' >"$out/choices/list-kinds"
printf 'seeded 1\n' >"$out/choices/portable-seeded"
printf 'seeded 18446744073709551615\n' >"$out/choices/portable-seeded-max"
printf 'replay 0 2 1 1 2 0 2 3 2 0 3 2\n' >"$out/choices/portable-replay"
printf 'replay 0 2 1 1 3 2 2 4 3 0 2 0 1 3 1 2 4 0 0 2 1 1 3 0\n' >"$out/choices/portable-replay-fits"
printf 'replay\n' >"$out/choices/portable-replay-empty"

# ---- merge: shard documents, good and bad -------------------------------------------------
cp tests/data/bad-input-2/merge/*.json "$out/merge/"
if [ -x "$loopsim" ]; then
  for i in 0 1; do
    "$loopsim" explore bench/spin/accept-small.toml --shard "$i/2" --json >"$out/merge/explore-$i.json" 2>/dev/null || true
    "$loopsim" generate --runs 3 --seed 1 --shard "$i/2" --json >"$out/merge/generate-$i.json" 2>/dev/null || true
  done
  find "$out/merge" -empty -delete
fi

# ---- answer: what servers send (a piece size byte first) -----------------------------------
put() { printf '%b' "$2" >"$out/answer/$1"; }
put ok '\x07HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'
put two '\x00HTTP/1.1 200 OK\r\ncontent-length:3\r\n\r\nabcHTTP/1.0 404 No\r\nContent-Length: 0\r\n\r\n'
put continue '\x03HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx'
put no-length '\x10HTTP/1.1 204 No Content\r\n\r\n'
put negative '\x01HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'
put two-lengths '\x02HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nok'
put garbage '\x05garbage\x00\xff\r\n\r\n'
put resp '\x04+OK\r\n'
put chunked '\x08HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'
put huge '\x20HTTP/1.1 200 OK\r\nContent-Length: 576460752303423488\r\n\r\nxxxxxxxx'

# ---- wire: a target's messages (type, u32 length, body) ------------------------------------
wput() { printf '%b' "$2" >"$out/wire/$1"; }
wput choose 'C\x05\x00\x00\x00\x00\x02\x00\x00\x00'
wput choose-take 'C\x05\x00\x00\x00\x04\x02\x00\x00\x00C\x05\x00\x00\x00\x01\x03\x00\x00\x00'
wput report 'R\x1b\x00\x00\x00\x01\x00\x01\x11\x22\x33\x44\x55\x66\x77\x88\x01\x00\x00\x00\x00\x00\x00\x00\x40\x42\x0f\x00\x00\x00\x00\x00'
wput error 'E\x0c\x00\x00\x00\x01limit: time'
wput trace-empty 'J\x10\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00'
wput huge-frame 'J\xff\xff\xff\xff'

# ---- every kept finding (fuzz/findings/NAME-N), so that each run tries it again first --------
for f in fuzz/findings/*-[0-9]*; do
  name=$(basename "$f")
  [ -d "$out/${name%-*}" ] && cp "$f" "$out/${name%-*}/finding-$name"
done

# ---- shape: the scenario files, as generate --shape takes them (those with --set lines are
# scenario text too: the harness reads them as a file) ------------------------------------
cp "$out"/scenario/* "$out/shape/"

for dir in scenario trace http choices merge answer wire shape; do
  echo "$dir: $(ls "$out/$dir" | wc -l) seeds"
done
