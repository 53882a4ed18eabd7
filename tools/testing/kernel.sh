#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel.sh - configure, verify and build the statsfd 6.12 debug test kernel.
#
# Usage: kernel.sh BUILD_DIR
#
# The tree lands in BUILD_DIR/kernel/linux-6.12, configured from tinyconfig
# plus tools/testing/config/{base,debug}.config, built in place (so it is a
# valid KDIR for `make M=...`).  A stamp keyed on the linux-source package
# version, the fragments and RECIPE below makes a warm run a no-op.
set -euo pipefail

# Bump when the steps below change in a way that needs a rebuild.
RECIPE=1

here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath -m "${1:?usage: kernel.sh BUILD_DIR}")
tarball=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
pkg=${KERNEL_PACKAGE:-linux-source-6.12}
jobs=${JOBS:-$(nproc)}
kdir=$build/kernel/linux-6.12
frags=("$here/config/base.config" "$here/config/debug.config")
log=$build/logs/kernel-build.log

mkdir -p "$build/kernel" "$build/logs"
# Several make invocations may want the kernel at once: one builds, the
# others wait and then find the stamp.
exec 9>"$build/kernel/.lock"
flock 9

pkgver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
[ -n "$pkgver" ] || pkgver=$(stat -c %Y "$tarball")
key="recipe=$RECIPE source=$pkg:$pkgver frags=$(cat "${frags[@]}" | sha256sum | cut -c1-16)"

if [ -f "$kdir/.statsfd-stamp" ] && [ "$(cat "$kdir/.statsfd-stamp")" = "$key" ] &&
	[ -f "$kdir/arch/x86/boot/bzImage" ] && [ -f "$kdir/Module.symvers" ]; then
	exit 0
fi

mkdir -p "$build/kernel" "$build/logs"
echo "kernel: building 6.12 debug test kernel ($key), log: $log"
start=$SECONDS

# A different source version needs a fresh tree; anything else rebuilds
# incrementally in the existing one.
if [ ! -f "$kdir/.statsfd-source" ] || [ "$(cat "$kdir/.statsfd-source")" != "$pkgver" ]; then
	rm -rf "$kdir" "$build/kernel/linux-source-6.12"
	echo "kernel: extracting $tarball"
	tar -xf "$tarball" -C "$build/kernel"
	mv "$build/kernel/linux-source-6.12" "$kdir"
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
echo "kernel: built in $((SECONDS - start))s: $kdir/arch/x86/boot/bzImage"
