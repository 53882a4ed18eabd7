#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# statsfd-collector --discover-kvm against real KVM: statsfd-vmm --kvm is
# a VMM that never talks to the collector and holds its KVM stats fds as
# QEMU does (one per vCPU, and one for the VM), with QEMU's -name and -uuid
# on its command line (after "--", which statsfd-vmm ignores).  The
# collector finds it in /proc, takes its stats fds with pidfd_getfd(),
# exports the VM and vCPU series labelled with the -name (else the -uuid),
# and drops them when the VMM exits.  Run as root (/proc/PID/fd listed),
# as root dropping to nobody with only CAP_SYS_PTRACE kept, and as nobody
# given CAP_SYS_PTRACE alone as the systemd drop-in does (both: the fds of
# a root VMM probed with pidfd_getfd, since /proc/PID/fd is not listable),
# and as nobody without it (nothing taken, said clearly).
# It runs in `make check`'s 6.1 guest with the stock kvm modules loaded.
# Usage: discover_kvm_test.sh   (TAP on stdout; the tools come from
# STATSFD_BIN, else the directory of statsfd-collector in PATH)
set -u
. "$(dirname "$0")/lib/tap.sh"
bindir=${STATSFD_BIN:-$(dirname "$(command -v statsfd-collector)")}
tmp=$(mktemp -d /tmp/statsfd-discover-kvm-test.XXXXXX)
# The collector may run as nobody: its socket and port file live here.
chmod 1777 "$tmp"
uuid=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
vmm= col=
cleanup() {
	stop_pids "$col"
	stop_pids "$vmm"
	rm -rf "$tmp"
}
on_exit cleanup

if ! [ -c /dev/kvm ] || ! exec 9<>/dev/kvm 2>/dev/null; then
	bail "--discover-kvm on a KVM VMM: /dev/kvm absent or not openable"
fi
exec 9<&-

# start_vmm NAME ARGS...: a 1-VM, 2-vCPU KVM VMM with ARGS as its QEMU-like
# arguments; its pid in $vmm.
start_vmm() {
	local name=$1
	shift
	rm -f "$tmp/$name.ready"
	"$bindir/statsfd-vmm" --kvm --vms 1 --vcpus 2 --workload io \
		--names "$name" --ready-file "$tmp/$name.ready" -- "$@" \
		>"$tmp/$name.vmm.log" 2>&1 &
	vmm=$!
	for _ in $(seq 400); do [ -s "$tmp/$name.ready" ] && return 0; sleep 0.05; done
	sed 's/^/# vmm: /' "$tmp/$name.vmm.log"
	return 1
}
stop_vmm() { kill "$vmm" 2>/dev/null; wait "$vmm" 2>/dev/null; vmm=; }

# start_col NAME [WRAPPER...] -- ARGS...: the collector discovering VMMs,
# HTTP on a free port ($port); its pid in $col.
start_col() {
	local name=$1 wrap=()
	shift
	while [ "$1" != -- ]; do wrap+=("$1"); shift; done
	shift
	rm -f "$tmp/$name.port"
	"${wrap[@]}" "$bindir/statsfd-collector" --socket "$tmp/$name.sock" \
		--listen 127.0.0.1:0 --port-file "$tmp/$name.port" \
		--interval 200 --discover-kvm --discover-interval 200 "$@" \
		2>"$tmp/$name.log" &
	col=$!
	for _ in $(seq 400); do
		[ -s "$tmp/$name.port" ] && grep -q 'ready:' "$tmp/$name.log" && break
		kill -0 "$col" 2>/dev/null || break
		sleep 0.05
	done
	port=$(cat "$tmp/$name.port" 2>/dev/null)
	[ -n "$port" ] && return 0
	sed 's/^/# collector: /' "$tmp/$name.log"
	return 1
}
stop_col() { kill "$col" 2>/dev/null; wait "$col" 2>/dev/null; col=; }

# scrape FILE: GET /metrics (bash's /dev/tcp: the guest has no curl).
scrape() {
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
	sed '1,/^\r$/d' <&3 >"$1"
	exec 3<&-
}

# vcpu_io FILE VM: the io_exits series of both vCPUs of VM, both counting.
vcpu_io() {
	grep -E '^kvm_[a-z0-9_]*io_exits(_total)?\{' "$1" | grep "vm=\"$2\"" |
		grep -E 'vcpu="[01]"' | awk '$NF > 0 { c++ } END { exit c != 2 }'
}
# vm_series FILE VM: series of the VM itself (no vcpu label).
vm_series() {
	grep -E '^kvm_' "$1" | grep "vm=\"$2\"" | grep -vq 'vcpu="'
}
# no_series FILE VM: nothing labelled VM any more.
no_series() { ! grep -q "vm=\"$2\"" "$1"; }

# caps PID: its permitted/effective capability sets.
caps() {
	awk '$1 == "CapPrm:" { p = $2 } $1 == "CapEff:" { e = $2 } END { print p "/" e }' \
		"/proc/$1/status"
}

# 1. As root: /proc/PID/fd is listed.  The VMM starts after the collector:
# a rescan finds it.
if start_col root -- --user root &&
   start_vmm web -name guest=web,debug-threads=on -uuid "$uuid"; then
	for _ in $(seq 100); do
		grep -q 'discover: pid .* a KVM VMM, followed' "$tmp/root.log" && break
		sleep 0.1
	done
	sleep 0.6
	scrape "$tmp/root.prom"
	grep -q '^kvm_' "$tmp/root.prom" || sed 's/^/# collector: /' "$tmp/root.log"
	check_quiet "root: nothing to find at start" \
		grep -q 'discover: following 0 KVM VMMs' "$tmp/root.log"
	check_quiet "root: a VMM started later found by a rescan, labelled from -name" \
		grep -q 'vm "web", uid 0): a KVM VMM, followed' "$tmp/root.log"
	check_quiet "root: /proc/PID/fd listed, no fd probed" \
		bash -c "! grep -q 'fds are probed' '$tmp/root.log'"
	check_quiet "root: vCPU series labelled with -name guest=web, io_exits counting" \
		vcpu_io "$tmp/root.prom" web
	check_quiet "root: VM series labelled vm=\"web\" (the VMM's kvm-vm-stats fd)" \
		vm_series "$tmp/root.prom" web
	check_quiet "root: the exposition passes promtool" \
		bash -c "promtool check metrics <'$tmp/root.prom'"
	sleep 0.5
	check_quiet "root: rescans take nothing twice (still 3 sources, nothing refused)" \
		bash -c "! grep -q 'already registered' '$tmp/root.log'"
	stop_vmm
	sleep 0.6
	scrape "$tmp/root-gone.prom"
	check_quiet "root: the VMM's exit seen (pidfd): its 3 sources dropped" \
		grep -q 'vm "web") exited: dropping its 3 sources' "$tmp/root.log"
	check_quiet "root: its series are gone from the exposition" \
		no_series "$tmp/root-gone.prom" web
	stop_col
else
	nok "root: VMM and collector started"
fi

# 2. Root dropping to nobody: CAP_SYS_PTRACE only, fds probed.
if start_vmm uu -uuid "$uuid" && start_col drop -- --user nobody --verbose; then
	sleep 1
	scrape "$tmp/drop.prom"
	grep -q '^kvm_' "$tmp/drop.prom" || sed 's/^/# collector: /' "$tmp/drop.log"
	check_quiet "--user nobody: runs as nobody with CAP_SYS_PTRACE only" \
		test "$(awk '$1 == "Uid:" { print $3 }' "/proc/$col/status") $(caps "$col")" = \
		"65534 0000000000080000/0000000000080000"
	check_quiet "--user nobody: /proc/PID/fd of a root VMM not listable: its fds probed" \
		grep -q 'fds are probed with pidfd_getfd' "$tmp/drop.log"
	check_quiet "--user nobody: probed once; later scans (every 200 ms) read its maps only" \
		test "$(grep -c 'fds probed, 2 vCPUs mapped, 2 with a source$' "$tmp/drop.log")" = 1
	check_quiet "--user nobody: vCPU series of a root VMM, labelled with its -uuid" \
		vcpu_io "$tmp/drop.prom" "$uuid"
	check_quiet "--user nobody: its VM series too" vm_series "$tmp/drop.prom" "$uuid"
	stop_col
else
	nok "--user nobody: VMM and collector started"
fi

# 3. nobody given CAP_SYS_PTRACE alone (the systemd drop-in's way).
if [ -n "$vmm" ] && start_col amb setpriv --reuid=65534 --regid=65534 \
	--clear-groups --inh-caps=+sys_ptrace --ambient-caps=+sys_ptrace -- \
	--user nobody; then
	sleep 0.6
	scrape "$tmp/amb.prom"
	check_quiet "ambient CAP_SYS_PTRACE as nobody: vCPU and VM series found" \
		bash -c "$(declare -f vcpu_io vm_series); vcpu_io '$tmp/amb.prom' '$uuid' && vm_series '$tmp/amb.prom' '$uuid'"
	check_quiet "ambient CAP_SYS_PTRACE as nobody: keeps nothing else" \
		test "$(caps "$col")" = 0000000000080000/0000000000080000
	stop_col
else
	nok "ambient CAP_SYS_PTRACE as nobody: collector started"
fi

# 4. nobody without CAP_SYS_PTRACE: nothing taken, and the log says why.
if [ -n "$vmm" ] && start_col none setpriv --reuid=65534 --regid=65534 \
	--clear-groups --inh-caps=-all -- --user nobody; then
	sleep 0.6
	scrape "$tmp/none.prom"
	check_quiet "nobody without CAP_SYS_PTRACE: no series of the root VMM" \
		no_series "$tmp/none.prom" "$uuid"
	check_quiet "nobody without CAP_SYS_PTRACE: the log names the capability" \
		grep -q 'needs CAP_SYS_PTRACE' "$tmp/none.log"
	stop_col
else
	nok "nobody without CAP_SYS_PTRACE: collector started"
fi
stop_vmm
finish
