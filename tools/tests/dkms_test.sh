#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves that the repository's dkms.conf builds statsfd.ko and statsfd_vm.ko
# with `dkms build` against the stock Debian 6.1 headers, in a private DKMS
# tree (--dkmstree/--sourcetree/--installtree): /var/lib/dkms and
# /lib/modules are never touched, nothing is installed or loaded.
# Usage: dkms_test.sh   (TAP on stdout)
set -u
# Called from make: O= and friends in MAKEFLAGS would leak into the kernel
# build that dkms starts (O= would redirect it to the tools' build dir).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
root=$(cd "$(dirname "$0")/../.." && pwd)
n=0
check() { local d=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fi; }
skip() { echo "ok 1 - dkms build # SKIP $*"; echo "1..1"; exit 0; }

command -v dkms >/dev/null || skip "dkms not installed"
kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kdir" ] || skip "no stock 6.1 headers in /usr/src"
kver=${kdir#/usr/src/linux-headers-}
[ -e "/lib/modules/$kver/build" ] || skip "/lib/modules/$kver/build missing"
[ -f "$root/src/core/Kbuild" ] && [ -f "$root/src/vm/Kbuild" ] ||
	skip "module sources (src/core, src/vm) not present yet"

before=$(ls -la /var/lib/dkms 2>/dev/null)
tmp=$(mktemp -d /tmp/statsfd-dkms-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms.conf")
src=$tmp/source/statsfd-$ver
mkdir -p "$src" "$tmp/tree" "$tmp/install"
# What a source package would ship: the Kbuild tree and dkms.conf.
cp -r "$root/Kbuild" "$root/dkms.conf" "$root/include" "$root/src" "$src/"
[ -d "$root/tests" ] && cp -r "$root/tests" "$src/"
find "$src" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete

# Debian's dkms signs modules, creating a MOK key pair on first use: keep
# that key in the private tree too (dkms reads these from the environment).
export mok_signing_key=$tmp/mok.key mok_certificate=$tmp/mok.pub
opts=(--dkmstree "$tmp/tree" --sourcetree "$tmp/source" --installtree "$tmp/install")
dkms add -m statsfd -v "$ver" "${opts[@]}" >"$tmp/add.log" 2>&1
check "dkms add (private tree)" test $? -eq 0
dkms build -m statsfd -v "$ver" -k "$kver" "${opts[@]}" >"$tmp/build.log" 2>&1
rc=$?
check "dkms build against $kver headers (rc $rc)" test $rc -eq 0
if [ $rc -ne 0 ]; then
	sed 's/^/#   /' "$tmp/build.log" | tail -n 30
	find "$tmp/tree" -name make.log -exec tail -n 30 {} \; | sed 's/^/#   make.log: /'
fi
for m in statsfd statsfd_vm; do
	ko=$(find "$tmp/tree" -path "*/$kver/*/module/$m.ko*" | head -n 1)
	check "$m.ko built for $kver (vermagic $(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1))" \
		bash -c "[ -n '$ko' ] && modinfo -F vermagic '$ko' | grep -q '^$kver '"
done
check "modules signed with the private key, nothing written to /var/lib/dkms" \
	test -f "$tmp/mok.key" -a "$before" = "$(ls -la /var/lib/dkms 2>/dev/null)"
echo "1..$n"
