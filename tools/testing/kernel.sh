#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel.sh - configure, verify and build a statsfd 6.12 test kernel.
#
# Usage: kernel.sh VARIANT KDIR LOGDIR
#
#   VARIANT  debug (KASAN, lockdep, kmemleak, ..., KVM: make check,
#            make check-kvm), kcsan (the data-race detector instead of
#            KASAN: make check-kcsan) or bench (KVM, no sanitizer: B17)
#   KDIR     where the tree lives, configured from tinyconfig plus
#            tools/testing/config/base.config, VARIANT.config and the
#            fragments its "# Also: F" lines name, and built
#            in place (so it is a valid KDIR for `make M=...`).  The
#            Makefile puts it in the per-user cache (KCACHE, default
#            ${XDG_CACHE_HOME:-$HOME/.cache}/statsfd), outside any work
#            tree, so a fresh clone on a machine that built it once is warm.
#   LOGDIR   receives kernel-build-VARIANT.log
#
# A stamp keyed on the linux-source package version, the fragments and
# RECIPE below makes a warm run a no-op.
set -euo pipefail

# Bump when the steps below change in a way that needs a rebuild.
RECIPE=2

usage="usage: kernel.sh VARIANT KDIR LOGDIR"
here=$(cd "$(dirname "$0")" && pwd)
variant=${1:?$usage}
kdir=$(realpath -m "${2:?$usage}")
logdir=$(realpath -m "${3:?$usage}")
tarball=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
pkg=${KERNEL_PACKAGE:-linux-source-6.12}
jobs=${JOBS:-$(nproc)}
frags=("$here/config/base.config" "$here/config/$variant.config")
# A variant names the shared fragments it also wants: "# Also: kvm.config".
for f in $(sed -n 's/^# Also: //p' "$here/config/$variant.config" 2>/dev/null); do
	frags+=("$here/config/$f")
done
log=$logdir/kernel-build-$variant.log
[ -f "$here/config/$variant.config" ] || { echo "kernel.sh: unknown variant '$variant'" >&2; exit 2; }

parent=$(dirname "$kdir")
mkdir -p "$parent" "$logdir"
# Several make invocations (or clones) may want the kernel at once: one
# builds, the others wait and then find the stamp.
exec 9>"$kdir.lock"
flock 9

pkgver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
[ -n "$pkgver" ] || pkgver=$(stat -c %Y "$tarball")
key="recipe=$RECIPE source=$pkg:$pkgver frags=$(cat "${frags[@]}" | sha256sum | cut -c1-16)"

if [ -f "$kdir/.statsfd-stamp" ] && [ "$(cat "$kdir/.statsfd-stamp")" = "$key" ] &&
	[ -f "$kdir/arch/x86/boot/bzImage" ] && [ -f "$kdir/Module.symvers" ]; then
	exit 0
fi

echo "kernel: building 6.12 $variant test kernel in $kdir ($key), log: $log"
start=$SECONDS

# A different source version needs a fresh tree; anything else rebuilds
# incrementally in the existing one.
if [ ! -f "$kdir/.statsfd-source" ] || [ "$(cat "$kdir/.statsfd-source")" != "$pkgver" ]; then
	rm -rf "$kdir" "$kdir.extract"
	mkdir -p "$kdir.extract"
	echo "kernel: extracting $tarball"
	tar -xf "$tarball" -C "$kdir.extract"
	mv "$kdir.extract/linux-source-6.12" "$kdir"
	rmdir "$kdir.extract"
	echo "$pkgver" >"$kdir/.statsfd-source"
fi
rm -f "$kdir/.statsfd-stamp"

{
	make -C "$kdir" ARCH=x86_64 tinyconfig
	"$kdir/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "${frags[@]}"
	make -C "$kdir" ARCH=x86_64 olddefconfig
} >"$log" 2>&1 || { echo "kernel: configuration failed, see $log" >&2; exit 1; }

# Kconfig silently drops options whose dependencies are unmet (KASAN under
# SLUB_TINY, for one): check every requested line made it into .config.
dropped=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		sym=${line%%=*}
		if ! grep -qxF "$line" "$kdir/.config"; then
			got=$(grep -E "^(# )?$sym[= ]" "$kdir/.config" || echo "$sym absent")
			echo "kernel: DROPPED: wanted '$line', got '$got'" >&2
			dropped=1
		fi
		;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }
		sym=${sym%% *}
		if grep -qE "^$sym=" "$kdir/.config"; then
			echo "kernel: DROPPED: wanted '$line', got '$(grep -E "^$sym=" "$kdir/.config")'" >&2
			dropped=1
		fi
		;;
	esac
done < <(cat "${frags[@]}")
if [ "$dropped" -ne 0 ]; then
	echo "kernel: Kconfig dropped requested options (listed above); fix the fragments" >&2
	exit 1
fi

# `modules` also writes Module.symvers and leaves the tree ready for M= builds.
if ! make -C "$kdir" ARCH=x86_64 -j"$jobs" bzImage modules >>"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "kernel: build failed, full log: $log" >&2
	exit 1
fi

echo "$key" >"$kdir/.statsfd-stamp"
echo "kernel: $variant built in $((SECONDS - start))s: $kdir/arch/x86/boot/bzImage"
