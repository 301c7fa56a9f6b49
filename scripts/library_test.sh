#!/usr/bin/env bash
# loopsim as a library: install the dev component of BUILD to a scratch prefix, build
# examples/own-kernel-loop/ out of tree against it (find_package, and again with pkg-config),
# judge its scenario, and serve one request live with the same loop.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scratch=$(mktemp -d)
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$scratch"' EXIT

cmake --install "$build" --prefix "$scratch/prefix" --component dev >/dev/null
echo "library: installed $(find "$scratch/prefix" -type f | wc -l) files"

cmake -S examples/own-kernel-loop -B "$scratch/example" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/example" >/dev/null
tiny="$scratch/example/tiny_loop"
# The base holds and each sabotage arm is caught: exit 0.
(cd examples/own-kernel-loop && "$tiny" check burst.toml)

# pkg-config: the same program from loopsim.pc alone.
export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
c++ -O1 -o "$scratch/tiny_pc" examples/own-kernel-loop/main.cpp $(pkg-config --cflags --libs loopsim)
(cd examples/own-kernel-loop && "$scratch/tiny_pc" check burst.toml >/dev/null)
echo "library: built with pkg-config $(pkg-config --modversion loopsim), and it holds"

# Live: the same loop on epoll answers a request, and stops on SIGTERM.
port=$((20000 + RANDOM % 20000))
"$tiny" live "$port" >"$scratch/live.log" 2>&1 &
server=$!
for _ in $(seq 50); do grep -q serving "$scratch/live.log" && break; sleep 0.1; done
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' >&3
answer=$(timeout 5 cat <&3)
exec 3>&-
case "$answer" in
  "HTTP/1.1 200 OK"*ok) echo "library: live answer: 200 ok" ;;
  *) echo "library: live answer was: $answer" >&2; exit 1 ;;
esac
kill -TERM "$server"
wait "$server"
server=
echo "library: the out-of-tree loop was judged and served"
