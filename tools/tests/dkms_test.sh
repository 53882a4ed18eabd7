#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves that the repository's dkms.conf builds statsfd.ko, statsfd_vm.ko and statsfd_host.ko,
# and no test module, with `dkms build` against the stock Debian 6.1
# headers, in a private DKMS tree (--dkmstree/--sourcetree/--installtree):
# /var/lib/dkms and /lib/modules are never touched, nothing is installed
# or loaded.  Its BUILD_EXCLUSIVE_KERNEL takes 6.1 and later only, and
# dkms skips an older kernel instead of building for it.
# Usage: dkms_test.sh   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
# Called from make: O= and friends in MAKEFLAGS would leak into the kernel
# build that dkms starts (O= would redirect it to the tools' build dir).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
root=$(cd "$(dirname "$0")/../.." && pwd)

# The supported kernels, as dkms matches them (bash =~ on `uname -r`).
excl=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' "$root/dkms.conf")
for k in 6.1.0-57-amd64 6.1.0 6.12.5 6.10.0-rc1 7.0.0 10.2.1; do
	check "BUILD_EXCLUSIVE_KERNEL accepts $k" bash -c '[[ $1 =~ $2 ]]' _ "$k" "$excl"
done
for k in 6.0.12 5.10.0-30-amd64 5.19.0 4.19.0 61.x; do
	check "BUILD_EXCLUSIVE_KERNEL refuses $k" bash -c '! [[ $1 =~ $2 ]]' _ "$k" "$excl"
done
check "MAKE[0] builds the modules only (STATSFD_MODULES_ONLY=1, honoured by Kbuild)" \
	bash -c "grep -q '^MAKE\[0\]=.*STATSFD_MODULES_ONLY=1' '$root/dkms.conf' &&
		 grep -q 'ifeq (\$(STATSFD_MODULES_ONLY),)' '$root/Kbuild'"

command -v dkms >/dev/null || skip_all "dkms build" "dkms not installed"
kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kdir" ] || skip_all "dkms build" "no stock 6.1 headers in /usr/src"
kver=${kdir#/usr/src/linux-headers-}
[ -e "/lib/modules/$kver/build" ] || skip_all "dkms build" "/lib/modules/$kver/build missing"
[ -f "$root/src/core/Kbuild" ] && [ -f "$root/src/vm/Kbuild" ] ||
	skip_all "dkms build" "module sources (src/core, src/vm) not present yet"

before=$(ls -la /var/lib/dkms 2>/dev/null)
tmp=$(mktemp -d /tmp/statsfd-dkms-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms.conf")
src=$tmp/source/statsfd-$ver
mkdir -p "$src" "$tmp/tree" "$tmp/install"
# What a source package would ship: the Kbuild tree, modules.mk and dkms.conf.
cp -r "$root/Kbuild" "$root/modules.mk" "$root/dkms.conf" "$root/include" "$root/src" "$src/"
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
for m in statsfd statsfd_vm statsfd_host; do
	ko=$(find "$tmp/tree" -path "*/$kver/*/module/$m.ko*" | head -n 1)
	check "$m.ko built for $kver (vermagic $(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1))" \
		bash -c "[ -n '$ko' ] && modinfo -F vermagic '$ko' | grep -q '^$kver '"
done
built=$(find "$tmp/tree" -name '*.ko*' -printf '%f\n' | sed 's/\.ko.*//' | sort -u | tr '\n' ' ')
check "only statsfd.ko, statsfd_vm.ko and statsfd_host.ko built (${built% })" \
	test "$built" = "statsfd statsfd_host statsfd_vm "
# An older kernel: skipped by BUILD_EXCLUSIVE_KERNEL (dkms exits 77), not built.
dkms build -m statsfd -v "$ver" -k 5.10.0-30-amd64 "${opts[@]}" >"$tmp/old.log" 2>&1
rc=$?
check "dkms build for 5.10.0-30-amd64: skipped as excluded (rc $rc)" \
	bash -c "[ $rc -eq 77 ] && grep -qi 'BUILD_EXCLUSIVE' '$tmp/old.log'"
[ $rc -eq 77 ] || sed 's/^/#   /' "$tmp/old.log" | tail -n 10
check "modules signed with the private key, nothing written to /var/lib/dkms" \
	test -f "$tmp/mok.key" -a "$before" = "$(ls -la /var/lib/dkms 2>/dev/null)"
finish
