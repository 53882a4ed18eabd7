#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/testing/deps.sh's detection, driven with package lists that include
# packages this machine does not have (its --missing dry run installs
# nothing).  A fresh machine is the case where every package is unknown to
# dpkg; the first release died right there, before apt-get ran.
# Usage: deps_test.sh   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
deps=$(cd "$(dirname "$0")/../testing" && pwd)/deps.sh

nopkg=statsfd-no-such-package-$$
out=$("$deps" --missing bash "$nopkg" 2>&1)
rc=$?
check "--missing survives a package dpkg has never seen (exit 0, got $rc)" test "$rc" -eq 0
check "--missing names exactly the unknown package ('$out')" test "$out" = "$nopkg"

out=$("$deps" --missing "$nopkg" "$nopkg-2" 2>&1)
check "--missing with nothing installed lists every package" \
	test "$out" = "$(printf '%s\n%s' "$nopkg" "$nopkg-2")"

out=$("$deps" --missing bash coreutils 2>&1)
check "--missing is silent when every package is installed" test -z "$out"

# A package dpkg knows but that is not installed ("config-files" or
# "not-installed" status) must count as missing too.
known=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' 2>/dev/null |
	awk '$1 != "installed" { print $2; exit }')
if [ -n "$known" ]; then
	out=$("$deps" --missing "$known" 2>&1)
	check "--missing lists '$known', known to dpkg but not installed" test "$out" = "$known"
fi

# --list: the full list, which --missing checks by default; it names no
# server the tests run (tools/testing/servers.sh unpacks those instead: their
# packages enable services on the host).
list=$("$deps" --list)
rc=$?
check "--list prints the package list (exit $rc, $(wc -l <<<"$list") packages)" \
	bash -c "[ $rc -eq 0 ] && grep -qx build-essential <<<'$list' && grep -qx dkms <<<'$list'"
servers=$("${deps%/*}/servers.sh" --packages)
check "--list names none of servers.sh's packages ($(paste -sd' ' <<<"$servers"))" \
	bash -c "! grep -xF -f <(cat <<<'$servers') <<<'$list'"

"$deps" --bogus >/dev/null 2>&1
check "an unknown option is a usage error (exit 2)" test $? -eq 2

# The project's own list on this machine: make check already installed it,
# so nothing is missing and the real run is the one-dpkg-query no-op.
out=$("$deps" --missing 2>&1)
check "the project's package list is complete here ('$out')" test -z "$out"
# An apt-get (and sudo) that fail loudly: reaching them would be the bug.
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
printf '#!/bin/sh\necho "apt-get called: $*" >&2\nexit 99\n' >"$fake/apt-get"
cp "$fake/apt-get" "$fake/sudo"
chmod +x "$fake/apt-get" "$fake/sudo"
start=$(date +%s%N)
PATH=$fake:$PATH "$deps" >/dev/null 2>&1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "deps.sh with everything present exits 0 and never runs apt-get" test "$rc" -eq 0
echo "# deps.sh no-op run took ${ms} ms"

# The install path on a "fresh machine": the fake apt-get logs and
# succeeds without installing, so deps.sh must call it for exactly the
# missing package and trust its exit status (naming what dpkg still does
# not list, without failing).
printf '#!/bin/sh\necho "$*" >>"%s/apt.log"\nexit 0\n' "$fake" >"$fake/apt-get"
printf '#!/bin/sh\nexec "$@"\n' >"$fake/sudo"
DEPS_PACKAGES="bash $nopkg" PATH=$fake:$PATH "$deps" >"$fake/out" 2>&1
rc=$?
check "install path reaches apt-get install for the missing package only" \
	grep -qxE -- "install -y -qq --no-install-recommends $nopkg" "$fake/apt.log"
check "install path succeeds when apt-get does (exit 0, got $rc)" test "$rc" -eq 0
check "install path names what dpkg still does not list" \
	grep -q "does not list as installed after apt-get: $nopkg" "$fake/out"

# A failing apt-get fails deps.sh (and so make check) with its status.
printf '#!/bin/sh\ncase "$1" in install) exit 100 ;; esac\nexit 0\n' >"$fake/apt-get"
DEPS_PACKAGES="$nopkg" PATH=$fake:$PATH "$deps" >/dev/null 2>&1
rc=$?
check "a failing apt-get install fails deps.sh (exit 100, got $rc)" test "$rc" -eq 100
finish
