#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# stock.sh - Debian's stock 6.1 kernel (with its modules, kvm among them)
# and busybox for the test guests, unpacked into the per-user cache and
# never installed on the host.
#
# Usage: stock.sh KCACHE [KDIR]
#
# KDIR is the stock headers tree our modules are built against (default:
# the newest /usr/src/linux-headers-6.1.*-amd64, from linux-headers-amd64);
# the kernel image must be the same release.  Prints the root it unpacked
# into, KCACHE/stock-<release>, which holds boot/vmlinuz-<release>,
# lib/modules/<release>/ and bin/busybox.
#
# Why not apt-get install linux-image-amd64 busybox-static: installing a
# kernel package rebuilds the host's initrd (twice, with the triggers
# busybox-static and friends fire), which took 4 of the 7 minutes a fresh
# machine spent on `make demo`, and it changes what the host boots next.
# The guests need neither.  `apt-get download` + `dpkg-deb -x` takes
# seconds.  A stamp keyed on both package versions makes a warm run a
# no-op; when the archive no longer has the headers' exact image version,
# a matching image installed on the host is used instead.
set -euo pipefail

usage="usage: stock.sh KCACHE [KDIR]"
kcache=$(realpath -m "${1:?$usage}")
kdir=${2:-$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
[ -n "$kdir" ] && [ -f "$kdir/include/generated/utsrelease.h" ] ||
	{ echo "stock.sh: no stock 6.1 headers (linux-headers-amd64, tools/testing/deps.sh)" >&2; exit 1; }
krel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h")
hver=$(dpkg-query -W -f='${Version}' "linux-headers-$krel" 2>/dev/null || true)
root=$kcache/stock-$krel
image=linux-image-$krel

have() {
	[ -f "$root/boot/vmlinuz-$krel" ] && [ -d "$root/lib/modules/$krel/kernel" ] &&
		[ -x "$root/bin/busybox" ]
}

mkdir -p "$kcache"
exec 9>"$root.lock"
flock 9
if have && [ -f "$root/.stamp" ] && grep -qxF "image=$hver" "$root/.stamp"; then
	echo "$root"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fetch() {
	(cd "$tmp" && apt-get download -q "$image${hver:+=$hver}" busybox-static) >"$tmp/apt.log" 2>&1
}
if ! fetch; then
	# No package lists yet (a fresh machine that installed nothing), or
	# stale ones: refresh once.
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq >/dev/null 2>&1 || true
	fetch || true
fi

rm -rf "$root.new"
mkdir -p "$root.new"
if ls "$tmp"/"$image"_*.deb >/dev/null 2>&1 && ls "$tmp"/busybox-static_*.deb >/dev/null 2>&1; then
	for deb in "$tmp"/*.deb; do
		dpkg-deb -x "$deb" "$root.new"
	done
	bbver=$(dpkg-deb -f "$tmp"/busybox-static_*.deb Version)
	# busybox-static ships /bin/busybox (usrmerge moves it in some releases).
	if [ ! -x "$root.new/bin/busybox" ] && [ -x "$root.new/usr/bin/busybox" ]; then
		mkdir -p "$root.new/bin"
		ln -s ../usr/bin/busybox "$root.new/bin/busybox"
	fi
	printf 'image=%s\nbusybox=%s\nfrom=archive\n' "$hver" "$bbver" >"$root.new/.stamp"
elif [ -f "/boot/vmlinuz-$krel" ] && [ -d "/lib/modules/$krel/kernel" ] && command -v busybox >/dev/null; then
	echo "stock.sh: $image=$hver not downloadable ($(tail -n 1 "$tmp/apt.log")); using the host's installed one" >&2
	mkdir -p "$root.new/boot" "$root.new/lib/modules" "$root.new/bin"
	ln -s "/boot/vmlinuz-$krel" "$root.new/boot/vmlinuz-$krel"
	ln -s "/lib/modules/$krel" "$root.new/lib/modules/$krel"
	ln -s "$(command -v busybox)" "$root.new/bin/busybox"
	printf 'image=%s\nfrom=host\n' "$hver" >"$root.new/.stamp"
else
	sed 's/^/stock.sh: /' "$tmp/apt.log" >&2
	echo "stock.sh: cannot get $image${hver:+ $hver} and busybox-static from the archive" >&2
	rm -rf "$root.new"
	exit 1
fi
rm -rf "$root"
mv "$root.new" "$root"
have || { echo "stock.sh: $root is incomplete after unpacking" >&2; exit 1; }
echo "$root"
