#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# pristine.sh - the pristine debootstrap chroot of make check-deb and make
# check-systemd: SUITE, minbase, from MIRROR, cached as
# KCACHE/chroot-SUITE-minbase.tar.zst and made once (about 90 s).
#
# Usage: pristine.sh KCACHE SUITE MIRROR LOG    (prints the tarball's path)
set -uo pipefail
usage="usage: pristine.sh KCACHE SUITE MIRROR LOG"
kcache=$(realpath -m "${1:?$usage}")
suite=${2:?$usage}
mirror=${3:?$usage}
log=${4:?$usage}
pristine=$kcache/chroot-$suite-minbase.tar.zst

mkdir -p "$kcache"
exec 9>"$pristine.lock"
flock 9
if [ ! -s "$pristine" ]; then
	echo "# debootstrap $suite (minbase) from $mirror, once: $pristine" >&2
	tmp=$(mktemp -d "$kcache/chroot.XXXXXX")
	if ! debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$log" 2>&1; then
		rm -rf "$tmp"
		exit 1
	fi
	tar -C "$tmp" --numeric-owner -cf - . | zstd -q -T0 >"$pristine.new" && mv "$pristine.new" "$pristine"
	rm -rf "$tmp"
fi
echo "$pristine"
