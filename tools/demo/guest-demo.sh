#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The `make demo` script, run as /run.sh inside the QEMU guest (busybox sh):
# loads statsfd, starts the collector as an unprivileged user, runs a sample
# VMM with two VMs of four vCPUs each, and shows what an operator sees.
tmp=/tmp/demo
pids=
ansi=
grep -q statsfd_demo_ansi=1 /proc/cmdline && ansi=--ansi

step() {
	echo
	echo "=== $* ==="
	echo
}
fail() {
	echo "demo: FAILED: $*"
	for p in $pids; do kill "$p" 2>/dev/null; done
	exit 1
}
# The tests' shell library (tools/testing/lib/tap.sh, run-demo.sh ships
# it): its bounded waitfor.
. /usr/libexec/statsfd/lib/tap.sh

step "1. Loading the statsfd modules"
# The shipped modules, in load order (modules.mk, via run-guest).
mods=$(cat /lib/statsfd/modules.list) || fail "no /lib/statsfd/modules.list"
for ko in $mods; do
	insmod "/lib/statsfd/$ko" 2>/dev/null || grep -q "^${ko%.ko} " /proc/modules ||
		fail "insmod $ko"
done
ls -l /dev/statsfd_vm /dev/statsfd_host || fail "no /dev/statsfd_vm or /dev/statsfd_host"
echo "statsfd.ko serves binary stats fds; statsfd_vm.ko is a toy hypervisor whose"
echo "VMs and vCPUs keep KVM-style statistics (exits, halts, histograms...);"
echo "statsfd_host.ko serves the machine's own CPU, memory, network and disk counters."

step "2. Starting the collector daemon, as user nobody"
mkdir -p $tmp
chmod 755 $tmp
statsfd-collector --socket $tmp/collector.sock --socket-mode 0600 \
	--listen 127.0.0.1:9477 --port-file $tmp/port --user nobody \
	--interval 500 2>$tmp/collector.log &
pids="$! $pids"
cpid=$!
waitfor 100 test -s $tmp/port || fail "collector did not start: $(cat $tmp/collector.log)"
echo "statsfd-collector (pid $cpid) binds its sockets as root, then drops to:"
grep -E '^(Uid|Gid):' /proc/$cpid/status
echo "It holds no privilege: reading a stats fd someone hands it needs none."

step "3. A VMM creates 2 VMs x 4 vCPUs and hands their stats fds to the collector"
statsfd-vmm --vms 2 --vcpus 4 --workload io,halt --names web,batch \
	--collector $tmp/collector.sock --ready-file $tmp/ready &
pids="$! $pids"
vpid=$!
waitfor 200 test -s $tmp/ready || fail "statsfd-vmm did not start"
echo "VM 'web' mostly does port I/O; VM 'batch' mostly halts (idle, polls, wakeups)."
echo "Each VM sent 5 fds (the VM's and its 4 vCPUs') over SCM_RIGHTS, on its own"
echo "connection: when the VMM closes it, the collector drops them at once."
sleep 1

step "4. statsfd watch: live rates for the VMM's VMs (10 s, taken by pid like kvm_stat)"
echo "statsfd finds the VM and vCPU fds in /proc/$vpid/fd, copies them with"
echo "pidfd_getfd() and asks each for a stats fd.  Counters are per second,"
echo "everything else is the current value; one column per VM or vCPU, named"
echo "by the kernel's ids (see step 3: which id is 'web' and which 'batch')."
sleep 1
statsfd watch --pid $vpid --interval 1 --count 10 $ansi \
	--name exits --name io_exits --name halt_exits --name halt_wakeup \
	--name halt_wait_ns --name halt_successful_poll --name io_bytes \
	--name guest_cycles --name blocking --name exits_sum --name io_exits_sum \
	--name halt_exits_sum --name blocking_count_nonzero ||
	fail "statsfd watch"

step "5. One vCPU in full: statsfd show (histograms as bucket ranges)"
statsfd show --pid $vpid --name 'halt_wait*' --name 'halt_exits' --name 'blocking' \
	--name 'max_halt_wait_ns' 2>/dev/null | awk '/^vm-.*\/vcpu-0 / { p = 1 } p && /^$/ { exit } p'

step "6. What Prometheus scrapes: GET http://127.0.0.1:9477/metrics (excerpt)"
wget -q -O $tmp/metrics http://127.0.0.1:9477/metrics || fail "scrape"
echo "($(wc -l < $tmp/metrics) lines; units converted to seconds and bytes, labels from the VMM)"
grep -E '^# (HELP|TYPE) statsfd_io_exits_total|^statsfd_io_exits_total\{provider="statsfd_vm",target="vcpu",vm="web"' $tmp/metrics
grep -E '^statsfd_halt_wait_sum_seconds_total\{provider="statsfd_vm",target="vm"' $tmp/metrics
echo "(a histogram: cumulative buckets, 'le' in seconds; here the first 6 non-empty ones)"
grep -E '^# TYPE statsfd_halt_wait_hist_seconds ' $tmp/metrics
grep -E '^statsfd_halt_wait_hist_seconds_(bucket|sum|count)\{provider="statsfd_vm",target="vcpu",vm="batch",vcpu="0"' $tmp/metrics |
	awk '/le="\+Inf"/ || !/_bucket/ { print; next } $2 != 0 && n++ < 6'
grep -E '^statsfd_collector_(sources|clients) ' $tmp/metrics

step "7. A filtered query on the collector's socket (like QEMU's query-stats)"
echo '$ statsfd query --target vcpu --vm batch --vcpus 0,3 --names halt_exits,halt_wakeup,halt_wait_ns'
statsfd query --collector $tmp/collector.sock --target vcpu --vm batch \
	--vcpus 0,3 --names halt_exits,halt_wakeup,halt_wait_ns || fail "query"

step "8. The host itself: statsfd show --host (no VM needed)"
echo "One stats fd per object from /dev/statsfd_host (world-readable, like"
echo "/proc/stat): the node, each CPU, each interface, each disk; one pread each."
statsfd show --host || fail "statsfd show --host"
echo
echo "The same as statsfd-collector --host exports them, under node_exporter's names:"
statsfd show --host --prometheus >$tmp/host.prom || fail "statsfd show --host --prometheus"
grep -E '^node_(cpu_seconds_total\{cpu="0"|memory_MemTotal_bytes|load1 |network_receive_bytes_total)' $tmp/host.prom

step "9. The VMM exits: its VMs' stats fds are dropped"
kill $vpid
wait $vpid
waitfor 30 sh -c "wget -q -O - http://127.0.0.1:9477/metrics | grep -qx 'statsfd_collector_sources 0'" ||
	fail "sources not dropped"
wget -q -O - http://127.0.0.1:9477/metrics | grep -E '^statsfd_collector_sources '
kill $cpid
wait $cpid
for ko in $(echo "$mods" | tac); do rmmod "${ko%.ko}" || fail "rmmod $ko"; done
echo
echo "demo: done"
