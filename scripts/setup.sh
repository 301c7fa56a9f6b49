#!/usr/bin/env bash
# Installs what loopsim needs from Debian's packages, and only what is missing. Idempotent.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config git
  catch2 librapidcheck-dev libcli11-dev libtomlplusplus-dev
  libboost-context-dev libboost-graph-dev libgraphviz-dev nlohmann-json3-dev libxxhash-dev
  spin
  clang libclang-rt-14-dev llvm-14  # libFuzzer and the sanitizers' runtimes (fuzz/), symbolized stacks
  libuv1-dev libevent-dev nginx-light python3  # the example targets (examples/), run on the seam
  redis-server memcached lighttpd nodejs mosquitto haproxy beanstalkd python3-tornado
  golang-go  # the Go example (examples/go/), its runtime's own system calls served by the trap
  busybox-static  # busybox's httpd (examples/busybox/), statically linked: the seam loads it
  dpkg-dev file systemd man-db  # the package stage: dpkg-shlibdeps, CPack's ELF check, systemd-analyze, man
  jq  # the determinism stage reads each scenario's arms from loopsim run --json
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# deploy/validate.sh installs its schema checkers with npm. Debian's nodejs comes without it;
# a nodejs that carries its own npm would clash with Debian's npm package, so only when absent.
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: every package is present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
# nginx-light's package would start nginx as a service on port 80 (and fail to install where
# the port is taken): loopsim only runs the binary, so services are not started meanwhile.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && made_policy=1
fi
status=0
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" || status=$?
[ -z "$made_policy" ] || $sudo rm -f "$policy"
exit "$status"
