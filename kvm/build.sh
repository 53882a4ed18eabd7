#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kvm/build.sh - build KVM with the statsfd series (kvm/patches/6.12/*.patch)
# against a configured and built 6.12 tree, and KVM's own stats-reading
# selftests from the same source.
#
# Usage: kvm/build.sh KDIR STATSFD_SYMVERS OUT
#
#   KDIR             the 6.12 test kernel tree (tools/testing/kernel.sh),
#                    built with CONFIG_KVM=m: its own kvm.ko and kvm-amd.ko
#                    are upstream KVM, untouched here
#   STATSFD_SYMVERS  Module.symvers of the statsfd.ko built for KDIR
#   OUT              receives linux/ (a hard-linked copy of KDIR with the
#                    series applied; patched KVM in linux/arch/x86/kvm/*.ko)
#                    and kselftests/ (kvm_binary_stats_test,
#                    dirty_log_page_splitting_test, nx_huge_pages_test)
#
# The copy shares every untouched file with KDIR, so it costs seconds and
# no space; what the series or the build writes is first unshared (a
# compiler overwriting a shared object would write into KDIR).  A stamp of
# the patches, the statsfd header, KDIR's own stamp and the settings below
# makes a warm run a no-op.
#
# For B17 (make bench), which compares the two KVMs' run loops under TCG,
# where a loop's cost depends on where its code falls in guest pages
# (QEMU chains translated blocks only within a page): KVM_SERIES=0 builds
# upstream KVM the same way without the series, KVM_KCFLAGS adds compiler
# flags (-falign-functions=4096 puts every function at a page start in
# both), KVM_SELFTESTS=0 skips the selftests.
set -euo pipefail

usage="usage: kvm/build.sh KDIR STATSFD_SYMVERS OUT"
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
kdir=$(realpath "${1:?$usage}")
symvers=$(realpath "${2:?$usage}")
out=$(realpath -m "${3:?$usage}")
jobs=${JOBS:-$(nproc)}
series=${KVM_SERIES:-1}
kcflags=${KVM_KCFLAGS:-}
selftests=${KVM_SELFTESTS:-1}
# The series; its cover letter (0000) carries no diff.
patches=()
for p in "$here"/patches/6.12/*.patch; do
	[ "$series" = 1 ] || break
	[ "${p##*/}" = 0000-cover-letter.patch ] || patches+=("$p")
done
w=$out/linux
log=$out/build.log
ksft=$out/kselftests
tests=(kvm_binary_stats_test x86_64/dirty_log_page_splitting_test x86_64/nx_huge_pages_test)

key=$({ cat "${patches[@]}" "$root/include/linux/statsfd.h" \
	"$root/include/uapi/linux/statsfd.h" "$symvers" "$kdir/.statsfd-stamp" "$0"
	echo "series=$series kcflags=$kcflags selftests=$selftests"; } |
	sha256sum | cut -c1-16)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$key" ]; then
	exit 0
fi
mkdir -p "$out"
rm -f "$out/.stamp"
echo "kvm: building KVM with ${#patches[@]} statsfd patch(es) ${kcflags:+($kcflags) }in $w, log: $log"

rm -rf "$w" "$ksft"
# Hard links need one filesystem; a full copy (a few GiB) serves elsewhere.
cp -al "$kdir" "$w" 2>/dev/null || { rm -rf "$w"; cp -a "$kdir" "$w"; }
# Unshare what is written: the patched files, and KVM's directories (whose
# objects the build rewrites), copied without their objects.
for d in arch/x86/kvm virt/kvm; do
	rm -rf "${w:?}/$d"
	cp -a "$kdir/$d" "$w/$d"
	find "$w/$d" -type f \( -name '*.o' -o -name '*.ko' -o -name '*.cmd' -o \
		-name '*.mod' -o -name '*.mod.c' -o -name modules.order -o \
		-name Module.symvers -o -name '*.a' \) -delete
done
for f in $( ((${#patches[@]})) && sed -n 's|^+++ b/||p' "${patches[@]}" | sort -u); do
	cp --remove-destination "$kdir/$f" "$w/$f"
done
{
	for p in "${patches[@]}"; do
		echo "== $p"
		patch -p1 -d "$w" --no-backup-if-mismatch <"$p"
	done
	# statsfd.ko is out of tree: its headers and symbols come from here.
	make -C "$w" ARCH=x86_64 M=arch/x86/kvm -j"$jobs" \
		KBUILD_EXTRA_SYMBOLS="$symvers" KCFLAGS="-I$root/include $kcflags" modules
	if [ "$selftests" = 1 ]; then
		# KVM's selftests build against the tree's exported uapi
		# headers, which `make headers` writes to usr/include (new
		# files only).
		make -C "$w" ARCH=x86_64 headers
		make -C "$w/tools/testing/selftests/kvm" -j"$jobs" OUTPUT="$ksft" \
			"${tests[@]/#/$ksft/}"
	fi
} >"$log" 2>&1 || { tail -n 30 "$log" >&2; echo "kvm: build failed, see $log" >&2; exit 1; }
echo "$key" >"$out/.stamp"
