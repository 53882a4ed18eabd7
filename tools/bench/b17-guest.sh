#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# b17-guest.sh - the guest side of B17 (run-bench): upstream KVM, KVM served
# by statsfd with its defaults, and with kvm.stats_snapshot=1 (update
# windows in the run loop, mmap), loaded in turn, ROUNDS times interleaved
# so that drift in the emulation's speed falls on all three alike; each load
# runs b17_kvm once (BENCH-JSON lines; report.py takes the medians).
#
# Inputs: /lib/kvm-upstream/{irqbypass,kvm,kvm-amd}.ko, /lib/kvm-statsfd/
# {kvm,kvm-amd}.ko, /lib/statsfd/statsfd.ko, /usr/bin/b17_kvm,
# /etc/bench.env (BENCH_B17_ROUNDS).
[ -f /etc/bench.env ] && . /etc/bench.env
rounds=${BENCH_B17_ROUNDS:-21}

fail() {
	echo "# bench: FAILED b17: $*"
}

insmod /lib/kvm-upstream/irqbypass.ko || fail "irqbypass.ko"
insmod /lib/statsfd/statsfd.ko || fail "statsfd.ko"
r=1
while [ "$r" -le "$rounds" ]; do
	for kvm in upstream statsfd snapshot; do
		dir=/lib/kvm-statsfd params=
		case $kvm in
		upstream) dir=/lib/kvm-upstream ;;
		snapshot) params=stats_snapshot=1 ;;
		esac
		# shellcheck disable=SC2086 # params is a word list
		if insmod "$dir/kvm.ko" $params && insmod "$dir/kvm-amd.ko"; then
			b17_kvm "$kvm" || fail "b17_kvm $kvm (round $r)"
		else
			fail "loading $kvm KVM (round $r)"
		fi
		rmmod kvm_amd
		rmmod kvm
	done
	r=$((r + 1))
done
echo "# b17 done"
