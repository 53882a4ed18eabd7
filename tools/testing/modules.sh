#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# modules.sh - build every statsfd module against one kernel, in a copy of
# the sources private to that kernel, so builds for 6.1 and 6.12 never
# clobber each other's objects (kbuild before 6.13 has no MO=, so an
# external module's objects land next to its sources).
#
# Usage: modules.sh KDIR BUILD_DIR [extra kbuild arguments...]
# MODULES_LOG overrides the log file (build/logs/modules-<major>.<minor>.log).
# Prints the output directory (BUILD_DIR/modules-<major>.<minor>) on stdout.
# rsync keeps modification times, so kbuild rebuilds only what changed.
set -euo pipefail

kdir=$(realpath "${1:?usage: modules.sh KDIR BUILD_DIR [kbuild args]}")
build=$(realpath -m "${2:?usage: modules.sh KDIR BUILD_DIR [kbuild args]}")
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=${JOBS:-$(nproc)}

if [ ! -f "$kdir/include/config/kernel.release" ]; then
	echo "modules.sh: $kdir is not a configured kernel tree (no include/config/kernel.release)" >&2
	exit 1
fi
krel=$(cat "$kdir/include/config/kernel.release")
# 6.12 debug and 6.12 KCSAN share a version: the KCSAN kernel's LOCALVERSION
# (-kcsan, tools/testing/config/kcsan.config) keeps their objects apart.
short=$(echo "$krel" | sed -E 's/^([0-9]+\.[0-9]+)[^-]*(-kcsan)?.*/\1\2/')
out=$build/modules-$short
mkdir -p "$out" "$build/logs"
# Concurrent builds of one tree would trample each other's objects.
exec 9>"$out.lock"
flock 9

# Copy sources only; generated files in $out are protected from --delete by
# being excluded.
rsync -a --delete \
	--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
	--exclude='.*.cmd' --exclude='.*.d' --exclude='*.a' \
	--exclude='modules.order' --exclude='Module.symvers' \
	--exclude='.tmp_*' --exclude='*.dwo' --exclude='.kernelrelease' \
	--include='/Kbuild' --include='/modules.mk' --include='/include/***' --include='/src/***' \
	--include='/tests/' --include='/tests/kunit/***' \
	--include='/tools/' --include='/tools/testing/' --include='/tools/testing/probe/***' \
	--include='/samples/' --include='/samples/statsfd/***' \
	--exclude='*' \
	"$root/" "$out/"
echo "$krel" >"$out/.kernelrelease"

log=${MODULES_LOG:-$build/logs/modules-$short.log}
# -Werror through KCFLAGS touches only our objects: an external build
# compiles nothing of the kernel's own.  STATSFD_VM_TEST_KNOBS=1 gives the
# tests and the bench statsfd_vm's update_windows parameter (src/vm/Kbuild);
# make install passes STATSFD_VM_TEST_KNOBS= for the product build.
if ! make -C "$kdir" M="$out" W=1 KCFLAGS=-Werror -j"$jobs" STATSFD_VM_TEST_KNOBS=1 "$@" modules >"$log" 2>&1; then
	grep -E 'error|warning|Error' "$log" | head -n 60 >&2 || tail -n 40 "$log" >&2
	echo "modules.sh: module build against $krel failed, full log: $log" >&2
	exit 1
fi
if grep -E '^WARNING:|warning:|error:' "$log" >&2; then
	echo "modules.sh: module build against $krel has warnings (W=1 must be clean), log: $log" >&2
	exit 1
fi

# The sample provider, as a user builds one: out of tree, against the
# headers and Module.symvers tools/install-sdk.sh installs (here into
# $out/sdk), with no path into this tree.
"$root/tools/install-sdk.sh" "$out" "$out" "$out/sdk"
if ! make -C "$kdir" M="$out/samples/statsfd" STATSFD_SDK="$out/sdk" \
	KBUILD_EXTRA_SYMBOLS="$out/sdk/Module.symvers" W=1 KCFLAGS=-Werror \
	-j"$jobs" "$@" modules >"$log.sample" 2>&1 ||
	grep -E '^WARNING:|warning:|error:' "$log.sample" >&2; then
	tail -n 40 "$log.sample" >&2
	echo "modules.sh: samples/statsfd against the installed SDK failed, log: $log.sample" >&2
	exit 1
fi
echo "$out"
