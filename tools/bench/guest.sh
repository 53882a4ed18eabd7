#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest.sh - /run.sh of the `make bench` guest: load upstream KVM and the
# statsfd modules into the stock kernel and run every phase of
# statsfd-bench.  Its BENCH-JSON lines are the results the host reads.
#
# The environment may set BENCH_ROUNDS (rounds per measurement), BENCH_VMS
# and BENCH_VCPUS (B5 fleet), BENCH_B4_LOADS (module reloads per B4
# variant; B8 runs once per load too), BENCH_COLLECTOR_SECONDS and
# BENCH_B7_BUSY_SECONDS (B7's reads of a running vCPU, 0 to skip),
# BENCH_B10_EVENTS (events per B10 series, 1000), BENCH_B13_SCRAPES (B13's
# scrape iterations, 7), BENCH_B14_SAMPLES (reads per kind and writer
# state in B14, 10000), BENCH_B15_VMS, BENCH_B15_VCPUS, BENCH_B15_SCRAPES
# and BENCH_B15_INTERVAL_MS (B15's fleet, 32 x 8, and its timed scrapes
# per state, 30 every 2000 ms) and BENCH_PHASES (the phases to run, e.g. "b7 b8";
# default all of info check b1 b2 b3 b4 b5 b6 b7 b8 b9 b10 b13 b16, with b4kvm
# going with b4), passed in through /etc/bench.env.  BENCH_HOST_BOOT=1
# (run-bench's second boot) runs B11 and B12 only; BENCH_B14_BOOT=1 (its
# third, with 2 CPUs and preempt=full) B14 and B15 only.

[ -r /etc/bench.env ] && . /etc/bench.env
rounds=${BENCH_ROUNDS:-101}
vms=${BENCH_VMS:-1024}
vcpus=${BENCH_VCPUS:-8}
b4_loads=${BENCH_B4_LOADS:-6}
collector_seconds=${BENCH_COLLECTOR_SECONDS:-10}
b7_busy=${BENCH_B7_BUSY_SECONDS:-4}
b10_events=${BENCH_B10_EVENTS:-1000}
b13_scrapes=${BENCH_B13_SCRAPES:-7}
b14_samples=${BENCH_B14_SAMPLES:-10000}
phases=${BENCH_PHASES:-}
bench="statsfd-bench -r $rounds"
mods=/lib/statsfd
failed=0

# B5 holds 1024 VMs, 8192 vCPUs and a stats fd for each: ~20k fds.
ulimit -n 65536 || echo "# cannot raise RLIMIT_NOFILE"

# Is phase $1 one of those to run?
want() {
	case " ${phases:-$1} " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

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

# A cgroup v2 memory cgroup for B5, which moves itself into it: what the
# memory cgroup is charged shows the pages of mappable sources, which no
# /proc/meminfo field isolates.  Without it B5 reports slab figures only.
setup_memcg() {
	cg=/sys/fs/cgroup
	mkdir -p $cg || return 1
	grep -q "^cgroup2 $cg " /proc/mounts || mount -t cgroup2 none $cg || return 1
	echo +memory >$cg/cgroup.subtree_control || return 1
	mkdir -p $cg/bench || return 1
	export BENCH_CGROUP=$cg/bench
}

# The second boot of run-bench (several CPUs): B11 and B12, on
# statsfd_host.ko with two RAM disks and four dummy interfaces to read.
if [ "${BENCH_HOST_BOOT:-0}" = 1 ]; then
	step insmod $mods/statsfd.ko
	step insmod $mods/statsfd_host.ko
	step insmod /lib/kmods/brd.ko rd_nr=2 rd_size=8192
	step insmod /lib/kmods/dummy.ko numdummies=4
	want b11 && step $bench b11
	want b12 && step $bench b12 "${BENCH_B12_SCRAPES:-30}"
	dmesg | grep -E 'WARNING|BUG|Oops|statsfd' | tail -n 20 | sed 's/^/# dmesg: /'
	echo "# bench: done failed=$failed"
	exit $failed
fi

# The third boot of run-bench (2 CPUs, preempt=full): B14, a vCPU's writer
# on one CPU, running, preempted or stopped, and its readers on another;
# B15, the collector and an honest scraper on one CPU, attackers on the
# other.
if [ "${BENCH_B14_BOOT:-0}" = 1 ]; then
	step insmod $mods/statsfd.ko
	step load_vm statsfd_vm 0
	want b14 && step $bench b14 "$b14_samples"
	if want b15; then
		if command -v statsfd-collector >/dev/null 2>&1; then
			export STATSFD_BENCH_COLLECTOR=statsfd-collector
		fi
		step $bench b15 "${BENCH_B15_VMS:-32}" "${BENCH_B15_VCPUS:-8}" \
			"${BENCH_B15_SCRAPES:-30}" "${BENCH_B15_INTERVAL_MS:-2000}"
	fi
	step rmmod statsfd_vm
	dmesg | grep -E 'WARNING|BUG|Oops|statsfd' | tail -n 20 | sed 's/^/# dmesg: /'
	echo "# bench: done failed=$failed"
	exit $failed
fi

for m in irqbypass ccp kvm kvm-amd; do
	insmod /lib/kmods/$m.ko || echo "# bench: insmod $m failed: no KVM peer"
done
ls -l /dev/kvm 2>&1 | sed 's/^/# /'
step insmod $mods/statsfd.ko
step insmod $mods/statsfd_bench.ko
step load_vm statsfd_vm 1

want info && step $bench info
want check && step $bench check
want b1 && step $bench b1
want b2 && step $bench b2
want b3 && step $bench b3
want b6 && step $bench b6 256
want b7 && step $bench b7 "$b7_busy"
want b9 && step $bench b9
want b4 && step $bench b4kvm 500

# B4: the same workload on the bench's two copies of the provider (with
# stats, and with them compiled out; both with every function on its own
# page, see run-bench), alternating loads so that drift over the run cannot
# favour either.  B8 measures update windows on and off in each load of
# the provider of the test build (the same module and vCPU, the update_windows
# parameter toggled between measurements).
step rmmod statsfd_vm
i=0
while { want b4 || want b8; } && [ $i -lt "$b4_loads" ]; do
	if want b8; then
		step load_vm statsfd_vm 0
		step $bench b8 50000
		step rmmod statsfd_vm
	fi
	if want b4; then
		step load_vm statsfd_vm_stats 0
		step $bench b4 stats 50000
		step rmmod statsfd_vm_stats
		step load_vm statsfd_vm_nostats 0
		step $bench b4 nostats 50000
		step rmmod statsfd_vm_nostats
	fi
	i=$((i + 1))
done

# B10 without the per-stat debugfs view too: a vCPU's creation would
# mostly time debugfs creating its files, not the event's delivery.
if want b10; then
	step load_vm statsfd_vm 0
	step $bench b10 "$b10_events"
	step rmmod statsfd_vm
fi

# B5 without the per-stat debugfs view: 8192 vCPUs times one file per
# stat would measure debugfs, not stats fds.
if want b5; then
	step load_vm statsfd_vm 0
	setup_memcg || echo "# bench: no memory cgroup for B5: slab figures only"
	if command -v statsfd-collector >/dev/null 2>&1; then
		export STATSFD_BENCH_COLLECTOR=statsfd-collector
	fi
	step $bench b5 "$vms" "$vcpus" "$collector_seconds"
	step rmmod statsfd_vm
fi

# B13, like B5 without debugfs: the collector's CPU on the fleet against
# the bench's own reads of the same fds, and its scrapes rendered vs cached.
if want b13; then
	step load_vm statsfd_vm 0
	if command -v statsfd-collector >/dev/null 2>&1; then
		export STATSFD_BENCH_COLLECTOR=statsfd-collector
	fi
	step $bench b13 "$vms" "$vcpus" "$collector_seconds" "$b13_scrapes"
	step rmmod statsfd_vm
fi

# B16: the same fleet's scrape as protobuf (native histograms) vs text.
if want b16; then
	step load_vm statsfd_vm 0
	if command -v statsfd-collector >/dev/null 2>&1; then
		export STATSFD_BENCH_COLLECTOR=statsfd-collector
	fi
	step $bench b16 "$vms" "$vcpus" "$b13_scrapes"
	step rmmod statsfd_vm
fi

dmesg | grep -E 'WARNING|BUG|Oops|statsfd' | tail -n 20 | sed 's/^/# dmesg: /'
echo "# bench: done failed=$failed"
exit $failed
