#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-kvm.sh - make check-kvm: KVM served by statsfd (kvm/patches/) against
# upstream KVM, in one 6.12 debug guest with nested SVM (TCG's -cpu max).
#
# Builds the 6.12 debug kernel (CONFIG_KVM=m: its kvm modules are upstream's),
# statsfd.ko for it, the patched KVM and KVM's stats-reading selftests
# (kvm/build.sh), then boots the guest (tools/testing/qemu/kvm-guest.sh):
# both KVMs run the same deterministic VM and KVM's selftests, and the stats
# files are compared byte for byte; Debian's QEMU (7.2, the host's) runs
# on each KVM, its QMP query-stats compared, read by statsfd --pid and
# exported by statsfd-collector --discover-kvm (tools/selftests/kvm/
# qemu_stats_test.sh).  Fails on any failed or missing result (the guest
# must report GUEST_RESULTS of them) and on any kernel warning, BUG, oops
# or sanitizer report in the guest.
# Ends with "N passed, N failed".
set -uo pipefail

T=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$T/../.." && pwd)
BUILD=${BUILD:-$root/build}
KCACHE=${KCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statsfd}
TEST_KDIR=${TEST_KDIR:-$KCACHE/linux-6.12-debug}
# Its own bound, not make's GUEST_TIMEOUT (900 s, sized for check's
# guests): this guest takes ~560 s alone on 2 cores, and a step of it that
# hangs is cut short by its own bound (qemu_stats_test.sh's qs_wait).
KVM_GUEST_TIMEOUT=${KVM_GUEST_TIMEOUT:-1800}
# kvm-guest.sh's results: 34 of its own (the three KVM loads, the byte
# comparisons, kvm_extras_test, kmemleak), 39 of qemu_stats_test.sh (12
# for each KVM load, 3 comparing upstream's and statsfd's).  Change with
# them.
GUEST_RESULTS=73
LOGDIR=$BUILD/logs/kvm
mkdir -p "$LOGDIR"
die() {
	echo "check-kvm: $*" >&2
	echo "0 passed, 1 failed"
	exit 1
}

"$T/kernel.sh" debug "$TEST_KDIR" "$BUILD/logs" || die "test kernel build failed"
moddir=$("$T/modules.sh" "$TEST_KDIR" "$BUILD") || die "module build failed"
"$root/kvm/build.sh" "$TEST_KDIR" "$moddir/Module.symvers" "$BUILD/kvm" ||
	die "patched KVM build failed"
for p in kvm_run_dump kvm_stats_compare kvm_extras_test; do
	gcc -static -O2 -Wall -Wextra -Werror -I"$root/include/uapi" \
		-o "$BUILD/kvm/$p" "$root/tools/selftests/kvm/$p.c" || die "$p build failed"
done
stock_root=$("$T/stock.sh" "$KCACHE" "${STOCK_KDIR:-}") || die "no busybox (tools/testing/stock.sh)"
# statsfd and statsfd-collector, against QEMU in the guest.
make -s -C "$root/tools" O="$BUILD/tools" all >"$LOGDIR/tools.log" 2>&1 ||
	die "tools build failed (see $LOGDIR/tools.log)"
qemu=$(command -v qemu-system-x86_64) || die "no qemu-system-x86_64"
jq=$(command -v jq) || die "no jq"

up=$TEST_KDIR
pa=$BUILD/kvm/linux
ksft=$BUILD/kvm/kselftests
mkdir -p "$BUILD/kvm/empty"
args=(--kernel "$TEST_KDIR/arch/x86/boot/bzImage" --script "$T/qemu/kvm-guest.sh"
	--results "$LOGDIR/results.txt" --log "$LOGDIR/console.log"
	--timeout "$KVM_GUEST_TIMEOUT" --busybox "$stock_root/bin/busybox"
	--modules-dir "$moddir/src" --selftests "$BUILD/kvm/empty"
	--tools "$BUILD/tools/bin" --mem 2048
	# One CPU: no second vCPU can run a stale translation while KVM's
	# static keys are patched (tools/tests/kvm_hold.c says why that
	# hangs under multi-threaded TCG); every module here is loaded and
	# unloaded, so no held VM could keep them switched.
	--smp 1
	--file "$up/virt/lib/irqbypass.ko:/lib/kvm-upstream/irqbypass.ko"
	--file "$up/arch/x86/kvm/kvm.ko:/lib/kvm-upstream/kvm.ko"
	--file "$up/arch/x86/kvm/kvm-amd.ko:/lib/kvm-upstream/kvm-amd.ko"
	--file "$pa/arch/x86/kvm/kvm.ko:/lib/kvm-statsfd/kvm.ko"
	--file "$pa/arch/x86/kvm/kvm-amd.ko:/lib/kvm-statsfd/kvm-amd.ko"
	--bin "$BUILD/kvm/kvm_run_dump" --bin "$BUILD/kvm/kvm_stats_compare"
	--bin "$BUILD/kvm/kvm_extras_test"
	--bin "$ksft/kvm_binary_stats_test:/usr/libexec/kvm-selftests/kvm_binary_stats_test"
	--bin "$ksft/x86_64/dirty_log_page_splitting_test:/usr/libexec/kvm-selftests/dirty_log_page_splitting_test"
	--bin "$ksft/x86_64/nx_huge_pages_test:/usr/libexec/kvm-selftests/nx_huge_pages_test"
	--file "$root/tools/selftests/kvm/qemu_stats_test.sh:/usr/libexec/kvm-selftests/qemu_stats_test.sh"
	# QEMU at /usr/bin finds its firmware in /usr/share: -machine pc
	# opens these two, nothing else there.
	--bin "$qemu:/usr/bin/qemu-system-x86_64" --bin "$jq"
	--file /usr/share/seabios/bios-256k.bin:/usr/share/seabios/bios-256k.bin
	--file /usr/share/qemu/kvmvapic.bin:/usr/share/qemu/kvmvapic.bin)
echo "check-kvm: guest started (console: $LOGDIR/console.log, results: $LOGDIR/results.txt)"
start=$SECONDS
"$T/qemu/run-guest" "${args[@]}"
rc=$?
echo "check-kvm: guest finished in $((SECONDS - start))s (run-guest exit $rc)"

res=$LOGDIR/results.txt
grep -E '^(not )?ok |^#' "$res" || true
passed=$(grep -c '^ok ' "$res")
failed=$(grep -c '^not ok ' "$res")
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$res")
if [ "$rc" -ne 0 ]; then
	echo "not ok - guest: run-guest exit $rc (124: timeout)"
	failed=$((failed + 1))
fi
if ! grep -q '^# kvm-guest-complete' "$res" || [ "${plan:-x}" != "$((passed + failed - (rc != 0)))" ] ||
   [ "${plan:-x}" != "$GUEST_RESULTS" ]; then
	echo "not ok - guest: results incomplete (plan ${plan:-none}, $GUEST_RESULTS expected)"
	failed=$((failed + 1))
fi
# The kernel reports make check fails on (summarize.py's REPORT_RE).
if python3 - "$T" "$LOGDIR/console.log" <<'PY'; then
import sys
sys.path.insert(0, sys.argv[1])
from summarize import REPORT_RE
with open(sys.argv[2], errors="replace") as f:
    hits = [line.rstrip() for line in f if REPORT_RE.search(line)]
print("\n".join(hits[:20]))
sys.exit(0 if hits else 1)
PY
	echo "not ok - kernel log: warnings or reports (above, console.log)"
	failed=$((failed + 1))
else
	echo "ok - kernel log: no warning, BUG, oops or sanitizer report"
	passed=$((passed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
