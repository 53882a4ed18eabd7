#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# statsfd-vmm's registration through statsfd_client, in the guest on the
# real statsfd_vm module: the VMM starts before the collector and runs
# without it, registers once it comes, survives the collector being killed
# and registers again with the next one, and a second VMM whose VM name is
# taken is refused, keeps running and retrying, and registers once the
# name is free.  Runs under busybox sh; prints TAP with its plan last, and
# exits 1 if any test is not ok.  A missing device or tool is a failure.
# The VMs run the idle workload: only registration matters here, and busy
# vCPU threads would only slow the guest down.  The waits are on the VMM's
# log lines; a timeout fails the check that waited.
tmp=/tmp/vmm-client
cpid= vpid= v2pid=

. "$(dirname "$0")/lib/tap.sh"
cleanup() {
	stop_pids $v2pid $vpid $cpid
	rm -rf "$tmp"
}
on_exit cleanup
alive() { kill -0 "$1" 2>/dev/null; }
# Sources the collector has (query-sources), -1 when it does not answer.
sources() {
	out=$(statsfd query --collector "$tmp/c.sock" --sources 2>/dev/null) || {
		echo -1
		return
	}
	echo "$out" | grep -c '"source"'
}
has_sources() { [ "$(sources)" -eq "$1" ]; }
start_collector() {
	statsfd-collector --socket "$tmp/c.sock" --socket-mode 0600 \
		--listen none --user nobody --interval 200 2>>"$tmp/collector.log" &
	cpid=$!
}

require "VMM client" /dev/statsfd_vm statsfd statsfd-collector statsfd-vmm
scratch_dir "$tmp"

# The VMM first: no collector.
statsfd-vmm --vms 2 --vcpus 2 --workload idle --names web,db \
	--collector "$tmp/c.sock" --ready-file "$tmp/ready" >"$tmp/vmm.log" 2>&1 &
vpid=$!
# Both VMs said it once; then a second of retries (every 100 ms and up)
# in which a VMM that logged each one would say it again.
absent() { test "$(grep -c 'No such file or directory; retrying' "$tmp/vmm.log")" -eq "$1"; }
waitfor 300 absent 2
sleep 1
check "VMM runs without a collector, not ready" \
	sh -c "kill -0 $vpid && ! test -e '$tmp/ready'"
check "VMM logs the collector's absence once per VM" absent 2

start_collector
check "collector comes: the VMM registers 2 VMs x 2 vCPUs (6 sources)" \
	waitfor 150 has_sources 6
check "VMM ready once registered (--ready-file)" test -s "$tmp/ready"

kill -9 "$cpid"
wait "$cpid" 2>/dev/null
check "VMM logs the lost connection (each VM)" \
	waitfor 300 sh -c "test \"\$(grep -c 'connection closed; reconnecting' '$tmp/vmm.log')\" -eq 2"
check "collector killed: the VMM goes on" alive "$vpid"
start_collector
check "collector restarted: the VMM registers again (6 sources)" \
	waitfor 150 has_sources 6

# A second VMM claims web: refused, retried, never fatal.
statsfd-vmm --vms 1 --vcpus 1 --workload idle --names web \
	--collector "$tmp/c.sock" >"$tmp/vmm2.log" 2>&1 &
v2pid=$!
check "refused VMM logs the collector's reason and retries" \
	waitfor 300 grep -Eq 'refused 2 stats fds: .*(already registered|is registered by uid [0-9]+ pid [0-9]+); retrying' "$tmp/vmm2.log"
check "refused VMM keeps running" alive "$v2pid"
check "the collector keeps the first VMM's 6 sources" has_sources 6
kill "$vpid"
wait "$vpid" 2>/dev/null
vpid=
check "first VMM gone: the second registers web (2 sources)" \
	waitfor 150 has_sources 2
check "second VMM still running" alive "$v2pid"
[ "$failed" -eq 0 ] || {
	sed 's/^/# vmm: /' "$tmp/vmm.log"
	sed 's/^/# vmm2: /' "$tmp/vmm2.log"
	sed 's/^/# collector: /' "$tmp/collector.log"
}
finish
