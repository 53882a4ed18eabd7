#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kvm-guest.sh - the guest side of make check-kvm (tools/testing/check-kvm.sh):
# upstream KVM and statsfd-served KVM (kvm/patches/), one after the other in
# one 6.12 debug guest, run the same deterministic VM and KVM's own
# selftests; then their stats files are compared byte for byte.  A third
# load of the patched KVM, with its opt-in extras, runs kvm_extras_test.
#
# Inputs: /lib/kvm-upstream/{irqbypass,kvm,kvm-amd}.ko (the test kernel's
# own), /lib/kvm-statsfd/{kvm,kvm-amd}.ko (built from the patched source),
# /lib/statsfd/statsfd.ko, /usr/bin/kvm_run_dump, /usr/bin/kvm_stats_compare,
# /usr/bin/kvm_extras_test,
# /usr/libexec/kvm-selftests/* (qemu_stats_test.sh: Debian's QEMU with
# /usr/share/seabios and /usr/share/qemu, jq, statsfd, statsfd-collector).
# Output: TAP on stdout (ttyS1); the kernel
# log goes to the console, which the host checks for warnings.
n=0
fail=0
ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}
nok() {
	n=$((n + 1))
	fail=1
	echo "not ok $n - $*"
}
# check DESCRIPTION CMD...: one result from CMD's exit status, its output
# kept as TAP comments.
check() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		nok "$desc (exit $?)"
	fi
	[ -n "$out" ] && echo "$out" | tail -n 20 | sed 's/^/# /'
}

KSFT=/usr/libexec/kvm-selftests
# qemu_stats, qemu_stats_compare: Debian's QEMU on each KVM.
# shellcheck disable=SC1091 # in the guest only
. "$KSFT/qemu_stats_test.sh"
# nx_huge_pages_test as its wrapper script runs it (nx_huge_pages_test.sh):
# the mitigation forced on, three huge pages reserved, but recovery every
# second rather than every 100 ms: the test counts the splits its vCPU
# made before recovery may run, and one TCG CPU under load can spend over
# 100 ms between its steps ("Expected 2, got 1": one split recovered
# already).  It then waits 5 periods for recovery.
nx_huge_pages() {
	p=/sys/module/kvm/parameters
	echo 1 >$p/nx_huge_pages &&
		echo 1 >$p/nx_huge_pages_recovery_ratio &&
		echo 1000 >$p/nx_huge_pages_recovery_period_ms &&
		echo 3 >/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages &&
		"$KSFT/nx_huge_pages_test" -t 887563923 -p 1000 -r
	rc=$?
	echo 0 >/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	return $rc
}

# dirty_log_page_splitting_test backs its 2 vCPUs' memory with huge pages:
# 64 MiB each rather than its default 1 GiB, in a 2 GiB guest.
dirty_log_page_splitting() {
	echo 80 >/proc/sys/vm/nr_hugepages &&
		"$KSFT/dirty_log_page_splitting_test" -b 64M
	rc=$?
	echo 0 >/proc/sys/vm/nr_hugepages
	return $rc
}

check "load irqbypass.ko" insmod /lib/kvm-upstream/irqbypass.ko
# upstream, then statsfd with its defaults (upstream's bytes), then statsfd
# with the opt-in VM sums and vCPU snapshots.
for kvm in upstream statsfd extras; do
	dir=/lib/kvm-statsfd params=
	case $kvm in
	upstream) dir=/lib/kvm-upstream ;;
	statsfd) check "load statsfd.ko" insmod /lib/statsfd/statsfd.ko ;;
	extras) params="stats_vm_aggregates=1 stats_snapshot=1" ;;
	esac
	# shellcheck disable=SC2086 # params is a word list
	check "$kvm: load kvm.ko $params" insmod "$dir/kvm.ko" $params
	check "$kvm: load kvm-amd.ko" insmod "$dir/kvm-amd.ko"
	mkdir -p "/tmp/$kvm"
	check "$kvm: deterministic VM (2 vCPUs, 1000 io exits each) dumped" \
		kvm_run_dump "/tmp/$kvm" 2 1000
	case $kvm in
	statsfd) check "statsfd: kvm_extras_test plain" kvm_extras_test plain ;;
	extras) check "extras: kvm_extras_test extras" kvm_extras_test extras ;;
	esac
	check "$kvm: kvm_binary_stats_test" "$KSFT/kvm_binary_stats_test"
	check "$kvm: dirty_log_page_splitting_test" dirty_log_page_splitting
	check "$kvm: nx_huge_pages_test" nx_huge_pages
	qemu_stats "$kvm"
	check "$kvm: unload kvm-amd.ko" rmmod kvm_amd
	check "$kvm: unload kvm.ko" rmmod kvm
done
check "unload statsfd.ko" rmmod statsfd

for f in vm vcpu-0 vcpu-1; do
	out=$(kvm_stats_compare "$f" "/tmp/upstream/$f.bin" "/tmp/statsfd/$f.bin")
	rc=$?
	echo "$out" | sed "s/^/# /"
	if [ $rc -eq 0 ] && [ -n "$out" ]; then
		ok "$f: statsfd's file is upstream's byte for byte (but the pid and host-driven values)"
	else
		nok "$f: statsfd's file differs from upstream's"
	fi
done
check "same /proc/PID/fd names (anon_inode:kvm-vm-stats, kvm-vcpu-stats:N)" \
	cmp /tmp/upstream/links /tmp/statsfd/links
cat /tmp/statsfd/links | sed 's/^/# /'
qemu_stats_compare

kl=/sys/kernel/debug/kmemleak
if [ -w $kl ]; then
	echo scan >$kl
	sleep 6
	echo scan >$kl
	leaks=$(cat $kl)
	if [ -z "$leaks" ]; then
		ok "kmemleak: nothing unreferenced"
	else
		echo "$leaks" | head -n 40 | sed 's/^/# /'
		nok "kmemleak: unreferenced objects"
	fi
else
	nok "kmemleak: not available"
fi
echo "1..$n"
echo "# kvm-guest-complete fail=$fail"
