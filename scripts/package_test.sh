#!/usr/bin/env bash
# The package stage: builds the Debian package, checks what is in it, installs it for real,
# verifies the service's unit and the man page, serves one request with the installed binary,
# runs the installed scenarios and a target example on the installed seam, then purges the
# package so the machine is left as it was. Needs root (CI's container is) and
# the packages setup.sh installs. `package_test.sh [BUILD_DIR]`, build-pkg/ by default: a
# Release build of its own; a folder that is configured already is built as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-pkg}
jobs=${JOBS:-2}

fail() { echo "package: $*" >&2; exit 1; }
indent() { sed 's/^/    /'; }
[ "$(id -u)" -eq 0 ] || fail "dpkg -i needs root"

if dpkg-query -W -f='${Status}' loopsim 2>/dev/null | grep -q "ok installed"; then
  fail "a loopsim package is installed already; this test would replace it, then remove it"
fi

# A build folder already configured (CI passes the release build, build/) is used as it is:
# reconfiguring it would rebuild everything.
if [ -f "$dir/CMakeCache.txt" ]; then
  echo "== package: build ($dir, as configured)"
else
  echo "== package: build ($dir, Release)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOPSIM_WERROR=OFF >/dev/null
fi
cmake --build "$dir" -j "$jobs" --target loopsim loopsim_man loopsim_seam

echo "== package: cpack"
rm -f "$dir"/loopsim_*.deb
(cd "$dir" && cpack -G DEB >/dev/null)
debs=("$dir"/loopsim_*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then fail "cpack made no single loopsim_*.deb in $dir"; fi
deb=${debs[0]}
echo "  $deb"

echo "== package: contents (dpkg-deb -c, -I)"
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/loopsim ./usr/share/man/man1/loopsim.1.gz \
            ./lib/systemd/system/loopsim-live.service ./etc/default/loopsim-live \
            ./usr/lib/loopsim/libloopsim_seam.so ./usr/share/loopsim/scenarios/accept-burst.toml \
            ./usr/share/loopsim/examples/python/py-poll.toml ./usr/share/loopsim/examples/python/poll_http.py \
            ./usr/share/doc/loopsim/README.md ./usr/share/doc/loopsim/design.md; do
  grep -q " $path\$" <<<"$contents" || { echo "$contents" >&2; fail "$path is not in the package"; }
done
grep -q -- '-rwxr-xr-x root/root .* ./usr/bin/loopsim$' <<<"$contents" || fail "/usr/bin/loopsim is not 0755 root's"
info=$(dpkg-deb -I "$deb")
for field in "Package: loopsim" "Maintainer: loopsim developers" "Depends: " "Architecture: $(dpkg --print-architecture)"; do
  grep -q "^ $field" <<<"$info" || { echo "$info" >&2; fail "the control file has no \"$field\""; }
done
version=$(dpkg-deb -f "$deb" Version)
echo "  version $version, depends: $(dpkg-deb -f "$deb" Depends)"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = /etc/default/loopsim-live ] ||
  fail "conffiles is not exactly /etc/default/loopsim-live"
for script in postinst prerm postrm; do
  grep -q "^ .* $script " <<<"$info" || fail "no $script in the control archive"
done

echo "== package: dpkg -i"
# From here on the package is installed: purge it however the test ends.
installed=""
tmp=$(mktemp -d)
server=""
cleanup() {
  [ -z "$server" ] || kill -KILL "$server" 2>/dev/null || true
  rm -rf "$tmp"
  if [ -n "$installed" ]; then
    echo "== package: dpkg --purge loopsim"
    dpkg --purge loopsim >/dev/null
  fi
}
trap cleanup EXIT
installed=1
dpkg -i "$deb" >/dev/null
[ "$(dpkg-query -W -f='${Version}' loopsim)" = "$version" ] || fail "dpkg does not list loopsim $version"
[ -x /usr/bin/loopsim ] || fail "/usr/bin/loopsim is missing after dpkg -i"
dpkg-query -W -f='${Conffiles}\n' loopsim | grep -q '/etc/default/loopsim-live ' ||
  fail "dpkg does not hold /etc/default/loopsim-live as a conffile"
if [ -d /run/systemd/system ]; then
  # Installing must not have enabled or started it.
  ! systemctl is-enabled --quiet loopsim-live.service || fail "dpkg -i enabled loopsim-live"
  ! systemctl is-active --quiet loopsim-live.service || fail "dpkg -i started loopsim-live"
fi
[ ! -e /etc/systemd/system/multi-user.target.wants/loopsim-live.service ] || fail "dpkg -i enabled loopsim-live"

# Docker's slim images tell dpkg to leave out man pages: there the page in the package is checked.
man_page=/usr/share/man/man1/loopsim.1.gz
page=$man_page
if [ ! -e "$man_page" ]; then
  grep -qs '^path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/* ||
    fail "$man_page was not installed"
  page=$tmp/loopsim.1.gz
  dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/man/man1/loopsim.1.gz >"$page"
fi

echo "== package: systemd-analyze verify"
# verify loads the unit offline, so it runs without systemd as PID 1 (a container). Anything it
# prints about our unit is a finding and fails the stage; if the tool cannot run at all, the
# stage says so and goes on, since that is the machine, not the unit.
unit=/lib/systemd/system/loopsim-live.service
if ! command -v systemd-analyze >/dev/null; then
  echo "  skipped: systemd-analyze is not installed (Debian's systemd package has it)"
else
  # Without man-db or the installed page, the unit's Documentation=man:loopsim(1) cannot be
  # looked up: not a finding.
  man_check=yes
  command -v man >/dev/null && [ "$page" = "$man_page" ] || man_check=no
  status=0
  report=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man="$man_check" "$unit" 2>&1) || status=$?
  if grep -q "loopsim-live" <<<"$report"; then
    echo "$report" >&2
    fail "systemd-analyze verify found problems in $unit"
  elif [ "$status" -ne 0 ]; then
    echo "  systemd-analyze could not check the unit here (exit $status), nothing about it reported:"
    indent <<<"$report"
  else
    [ -z "$report" ] || indent <<<"$report"
    echo "  $unit: no findings"
  fi
fi

echo "== package: man page"
[ "$page" = "$man_page" ] || echo "  dpkg here leaves out /usr/share/man (path-exclude): the package's copy is checked"
zcat "$page" | grep -q '^\.TH LOOPSIM 1 ' || fail "$man_page has no .TH line"
if command -v man >/dev/null; then
  # --warnings makes groff report malformed requests; any of them fails the stage.
  rendered=$(MANWIDTH=80 man --warnings -l "$page" 2>"$tmp/man.err")
  [ ! -s "$tmp/man.err" ] || { cat "$tmp/man.err" >&2; fail "man reports problems in $man_page"; }
  subcommands=$(/usr/bin/loopsim --help | sed -n '/^Subcommands:$/,/^$/s/^  \([a-z][a-z0-9-]*\)  .*/\1/p')
  for command in $subcommands; do
    grep -q "^   loopsim $command\$" <<<"$rendered" || fail "the man page has no section for loopsim $command"
  done
  echo "  rendered $(wc -l <<<"$rendered") lines, a section for each of: ${subcommands//$'\n'/ }"
else
  echo "  man is not installed (man-db): checked the .TH line only"
fi

echo "== package: the installed loopsim live serves"
mkfifo "$tmp/out"
/usr/bin/loopsim live --listen 127.0.0.1:0 >"$tmp/out" 2>"$tmp/err" &
server=$!
exec 3<"$tmp/out"
line=""
read -r -t 10 line <&3 || true
[[ $line =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || { cat "$tmp/err" >&2; fail "first line was \"$line\", not \"listening on 127.0.0.1:PORT\""; }
port=${BASH_REMATCH[1]}
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&4
response=""
IFS= read -r -t 10 response <&4 || true
exec 4<&-
[[ $response =~ ^HTTP/1\.[01]\ 200 ]] || fail "GET /fast answered \"${response%$'\r'}\", not 200"
echo "  127.0.0.1:$port GET /fast: ${response%$'\r'}"
kill -TERM "$server"
status=0
wait "$server" || status=$?
server=""
exec 3<&-
[ "$status" -eq 0 ] || { cat "$tmp/err" >&2; fail "loopsim live exited $status after SIGTERM, not 0"; }
echo "  SIGTERM: exit 0"

echo "== package: the installed scenarios and a target example, on the installed seam"
# From a folder of no importance, as a user would: the seam must be found from /usr/bin/loopsim
# alone, and the example's program (python3, its script beside the scenario) run from there.
mkdir "$tmp/user"
status=0
(cd "$tmp/user" && env -u LOOPSIM_SEAM /usr/bin/loopsim check /usr/share/loopsim/scenarios >"$tmp/check.out" 2>&1) || status=$?
[ "$status" -eq 0 ] || { tail -20 "$tmp/check.out" >&2; fail "loopsim check /usr/share/loopsim/scenarios exited $status, not 0"; }
echo "  loopsim check /usr/share/loopsim/scenarios: $(grep -E '^[0-9]+ scenarios' "$tmp/check.out")"
status=0
(cd "$tmp/user" && env -u LOOPSIM_SEAM /usr/bin/loopsim run /usr/share/loopsim/examples/python/py-poll.toml >"$tmp/run.out" 2>&1) || status=$?
[ "$status" -eq 0 ] || { tail -20 "$tmp/run.out" >&2; fail "loopsim run of the installed py-poll example exited $status, not 0"; }
grep -q "keep-alive: caught by" "$tmp/run.out" || { cat "$tmp/run.out" >&2; fail "the py-poll example's keep-alive arm was not caught"; }
echo "  loopsim run /usr/share/loopsim/examples/python/py-poll.toml: $(grep -cE '^  [a-z0-9-]+: (held|caught by)' "$tmp/run.out") arms as expected"

trap - EXIT
cleanup
dpkg-query -W loopsim >/dev/null 2>&1 && fail "loopsim is still known to dpkg after the purge"
for path in /usr/bin/loopsim "$man_page" "$unit" /etc/default/loopsim-live /usr/lib/loopsim /usr/share/loopsim \
            /usr/share/doc/loopsim; do
  [ ! -e "$path" ] || fail "the purge left $path behind"
done
echo "package stage passed"
