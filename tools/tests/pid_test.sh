#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `statsfd --pid` against a real KVM VMM: statsfd-vmm --kvm creates a VM
# with two vCPUs on the host's /dev/kvm running port I/O in a loop, and
# holds their stats fds as a VMM does; the CLI finds its kvm-vm-stats /
# kvm-vcpu-stats:N fds in /proc and takes them with pidfd_getfd (KVM refuses
# KVM_GET_STATS_FD on a VM or vCPU fd from any process but the VMM: EIO).  It runs in `make check`'s
# 6.1 guest with the stock kvm modules loaded, where /dev/kvm is promised:
# without it every check fails.
# Usage: pid_test.sh [BUILD_DIR]   (TAP on stdout; the tools come from
# STATSFD_BIN, else BUILD_DIR/san/bin, else the directory of `statsfd` in PATH)
set -u
. "$(dirname "$0")/lib/tap.sh"
out=${1:-}
if [ -n "${STATSFD_BIN:-}" ]; then
	bindir=$STATSFD_BIN
elif [ -n "$out" ]; then
	bindir=$out/san/bin
else
	bindir=$(dirname "$(command -v statsfd)")
fi
tmp=$(mktemp -d /tmp/statsfd-pid-test.XXXXXX)
vmm=
cleanup() {
	stop_pids "$vmm"
	rm -rf "$tmp"
}
on_exit cleanup

if ! [ -c /dev/kvm ] || ! exec 9<>/dev/kvm 2>/dev/null; then
	bail "statsfd --pid on a KVM VMM: /dev/kvm absent or not openable"
fi
exec 9<&-
"$bindir/statsfd-vmm" --kvm --vms 1 --vcpus 2 --workload io --names kvmtest \
	--ready-file "$tmp/ready" >"$tmp/vmm.log" 2>&1 &
vmm=$!
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
if ! [ -s "$tmp/ready" ]; then
	bail "statsfd --pid on a KVM VMM: KVM refused: $(tail -n 1 "$tmp/vmm.log")"
fi
sleep 0.5
"$bindir/statsfd" show --json --pid "$vmm" >"$tmp/show.json" 2>"$tmp/show.err"
# jq -e alone exits 0 on an empty file (jq 1.6): every jq check here reads
# its input explicitly (jq -n 'input | ...'), which fails on nothing.
sed 's/^/# show: /' "$tmp/show.err"
check_quiet "--pid reads KVM's stats fds without an error (KVM refuses KVM_GET_STATS_FD from another process, so the VMM's own are taken)" \
	test ! -s "$tmp/show.err"
check_quiet "--pid finds the VM and both vCPUs (provider kvm)" \
	jq -en 'input | length == 3 and all(.[]; .provider == "kvm")' "$tmp/show.json"
check_quiet "vCPU stats read from the VMM's KVM stats fds: io_exits counting" \
	jq -en 'input | [.[] | select(.target == "vcpu") | .stats[] | select(.name == "io_exits") | .value] | length == 2 and all(. > 0)' "$tmp/show.json"
check_quiet "histograms of real KVM decoded (halt_wait_hist)" \
	jq -en 'input | [.[] | select(.target == "vcpu") | .stats[] | select(.name == "halt_wait_hist")] | length == 2' "$tmp/show.json"
timeout 20 "$bindir/statsfd" watch --pid "$vmm" --count 2 --interval 0.3 >"$tmp/watch.txt" 2>&1
grep -q '^  io_exits ' "$tmp/watch.txt" || sed 's/^/# watch: /' "$tmp/watch.txt" | head -n 60
check_quiet "watch --pid shows io_exits rates" grep -q '^  io_exits ' "$tmp/watch.txt"
"$bindir/statsfd" show --prometheus --pid "$vmm" >"$tmp/prom.txt"
check_quiet "real KVM exposition passes promtool" bash -c "promtool check metrics <'$tmp/prom.txt' >/dev/null 2>&1"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$bindir/statsfd" show --pid "$vmm" >/dev/null 2>"$tmp/perm.err"
	check_quiet "--pid as another user: ptrace permission refused, said clearly" \
		grep -q 'needs ptrace permission' "$tmp/perm.err"
fi
finish
