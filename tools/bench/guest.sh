#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest.sh - /run.sh of the `make bench` guest: load upstream KVM and the
# statsfd modules into the stock kernel and run every phase of
# statsfd-bench.  Its BENCH-JSON lines are the results the host reads.
#
# The environment may set BENCH_ROUNDS (rounds per measurement), BENCH_VMS
# and BENCH_VCPUS (B5 fleet), BENCH_B4_LOADS (module reloads per B4
# variant) and BENCH_COLLECTOR_SECONDS, passed in through /etc/bench.env.

[ -r /etc/bench.env ] && . /etc/bench.env
rounds=${BENCH_ROUNDS:-101}
vms=${BENCH_VMS:-1024}
vcpus=${BENCH_VCPUS:-8}
b4_loads=${BENCH_B4_LOADS:-6}
collector_seconds=${BENCH_COLLECTOR_SECONDS:-10}
bench="statsfd-bench -r $rounds"
mods=/lib/statsfd
failed=0

# B5 holds 1024 VMs, 8192 vCPUs and a stats fd for each: ~20k fds.
ulimit -n 65536 || echo "# cannot raise RLIMIT_NOFILE"

step() {
	echo "# bench: $*"
	if ! "$@"; then
		echo "# bench: FAILED: $*"
		failed=1
	fi
}

# The provider, with limits high enough for B5 and B6.  $2: debugfs on/off.
load_vm() {
	insmod "$mods/$1.ko" max_vms=4096 max_vcpus=256 debugfs="$2"
}

for m in irqbypass ccp kvm kvm-amd; do
	insmod /lib/kmods/$m.ko || echo "# bench: insmod $m failed: no KVM peer"
done
ls -l /dev/kvm 2>&1 | sed 's/^/# /'
step insmod $mods/statsfd.ko
step insmod $mods/statsfd_bench.ko
step load_vm statsfd_vm 1

step $bench info
step $bench check
step $bench b1
step $bench b2
step $bench b3
step $bench b6 256
step $bench b4kvm 500

# B4: the same workload on the two provider builds, alternating loads so
# drift over the run cannot favour either.
step rmmod statsfd_vm
i=0
while [ $i -lt "$b4_loads" ]; do
	step load_vm statsfd_vm 0
	step $bench b4 stats 50000
	step rmmod statsfd_vm
	step load_vm statsfd_vm_nostats 0
	step $bench b4 nostats 50000
	step rmmod statsfd_vm_nostats
	i=$((i + 1))
done

# B5 without the per-stat debugfs view: 8192 vCPUs times one file per
# stat would measure debugfs, not stats fds.
step load_vm statsfd_vm 0
if command -v statsfd-collector >/dev/null 2>&1; then
	export STATSFD_BENCH_COLLECTOR=statsfd-collector
fi
step $bench b5 "$vms" "$vcpus" "$collector_seconds"
step rmmod statsfd_vm

dmesg | grep -E 'WARNING|BUG|Oops|statsfd' | tail -n 20 | sed 's/^/# dmesg: /'
echo "# bench: done failed=$failed"
exit $failed
