#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The systemd units as `make install` writes them: `systemd-analyze
# security` rates the service's exposure 2.0 or better, `systemd-analyze
# verify` finds nothing wrong with the service and its .socket units, the
# sockets are the ones the service's command line names, and the install
# tree holds the units, man pages, options file and docs the units refer
# to, and the Grafana dashboards with their provisioning file.  Nothing is installed on this machine and no systemd is needed:
# `make install` runs into a private DESTDIR.
# Usage: systemd_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
out=${1:?usage: systemd_test.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
max_exposure=2.0

tmp=$(mktemp -d /tmp/statsfd-systemd-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
make -s -C "$root/tools" O="$out" install DESTDIR="$dest" PREFIX=/usr \
	>"$tmp/install.log" 2>&1
check "make install DESTDIR=... PREFIX=/usr" test $? -eq 0 || sed 's/^/#   /' "$tmp/install.log"
units=$dest/lib/systemd/system
svc=$units/statsfd-collector.service

# exposure FILE: the number of "Overall exposure level for X: N.N ...".
exposure() {
	systemd-analyze security --offline=yes "$1" 2>/dev/null |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p'
}
e=$(exposure "$svc")
check "systemd-analyze security: exposure ${e:-?} <= $max_exposure" \
	awk -v e="${e:-99}" -v m=$max_exposure 'BEGIN { exit !(e != "" && e + 0 <= m + 0) }'
# The parse must see a worse unit as worse: the old unit rated 3.4.
printf '[Service]\nExecStart=/bin/true\n' >"$tmp/bare.service"
e2=$(exposure "$tmp/bare.service")
check "a unit without hardening is rated above $max_exposure (${e2:-?})" \
	awk -v e="${e2:-0}" -v m=$max_exposure 'BEGIN { exit !(e + 0 > m + 0) }'

# verify: the binary paths must exist, so point them at this build.
vdir=$tmp/verify
mkdir -p "$vdir"
sed "s|/usr/sbin/statsfd-collector|$out/bin/statsfd-collector|" "$svc" >"$vdir/statsfd-collector.service"
cp "$units"/statsfd-collector.socket "$units"/statsfd-collector-http.socket "$vdir/"
v=$(cd "$vdir" && systemd-analyze verify --man=no ./statsfd-collector.service \
	./statsfd-collector.socket ./statsfd-collector-http.socket 2>&1)
check "systemd-analyze verify: service and sockets clean${v:+: $v}" test -z "$v"
# The discovery drop-in applied (settings later in a file override).
cat "$vdir/statsfd-collector.service" "$root/tools/systemd/discover-kvm.conf" \
	>"$vdir/discover.service"
v=$(cd "$vdir" && systemd-analyze verify --man=no ./discover.service 2>&1)
check "discover-kvm.conf drop-in verifies${v:+: $v}" test -z "$v"
echo "# with discover-kvm.conf: exposure $(exposure "$vdir/discover.service")"
cat "$vdir/statsfd-collector.service" "$root/tools/systemd/host.conf" >"$vdir/host.service"
v=$(cd "$vdir" && systemd-analyze verify --man=no ./host.service 2>&1)
check "host.conf drop-in verifies${v:+: $v}" test -z "$v"
e=$(exposure "$vdir/host.service")
check "with host.conf: exposure ${e:-?} <= $max_exposure" \
	awk -v e="${e:-99}" -v m=$max_exposure 'BEGIN { exit !(e != "" && e + 0 <= m + 0) }'
# Every system call the daemon makes is allowed by the unit's filter, the
# discovery drop-in's pidfd_getfd included: the list systemd 252 expands.
syscalls() { # GROUP...: its system calls, groups expanded, one a line
	local g x
	for g; do
		systemd-analyze syscall-filter "$g" 2>/dev/null |
			awk 'NR > 1 && !/^ *#/ && NF { print $1 }' |
			while read -r x; do
				case $x in @*) syscalls "$x" ;; *) echo "$x" ;; esac
			done
	done
}
allowed=$(comm -23 <(syscalls @system-service | sort -u) \
	<(syscalls @privileged @resources | sort -u))
# What the daemon called under strace through client_test and
# collector_test, less setuid/setgid/setgroups (--user: the unit starts
# it as that user, so it never switches), plus ioctl (views).
need="accept4 access arch_prctl bind brk chmod close connect epoll_create1
	epoll_ctl epoll_wait execve exit_group fcntl fstatfs geteuid getrandom
	getsockname getsockopt ioctl listen lseek mmap mprotect mremap munmap
	newfstatat openat prctl pread64 prlimit64 read recvfrom recvmsg rseq
	rt_sigaction rt_sigprocmask sendmsg sendto set_robust_list
	set_tid_address setsockopt shutdown signalfd4 socket sysinfo
	timerfd_create timerfd_settime umask unlink write"
missing=$(for x in $need; do grep -qx "$x" <<<"$allowed" || echo "$x"; done | tr '\n' ' ')
check "SystemCallFilter= allows the daemon's system calls${missing:+ (not: $missing)}" \
	test -z "$missing"
check "pidfd_getfd: not in @system-service, added by discover-kvm.conf" \
	bash -c "! grep -qx pidfd_getfd <<<'$allowed' &&
		 grep -qx 'SystemCallFilter=pidfd_getfd' '$root/tools/systemd/discover-kvm.conf'"
check "ptrace: not in @system-service, added by discover-kvm.conf (QEMU before 8.1 asked through it)" \
	bash -c "! grep -qx ptrace <<<'$allowed' &&
		 grep -qx 'SystemCallFilter=ptrace' '$root/tools/systemd/discover-kvm.conf'"

key() { sed -n "s/^$1=//p" "$2"; }
check "Type=notify, WatchdogSec=, FileDescriptorStoreMax= set" \
	test "$(key Type "$svc")" = notify -a -n "$(key WatchdogSec "$svc")" \
	-a "$(key FileDescriptorStoreMax "$svc")" -gt 1024
for s in SystemCallFilter=@system-service ProtectProc=invisible ProcSubset=pid \
	 RestrictSUIDSGID=yes RemoveIPC=yes PrivateMounts=yes IPAddressDeny=any \
	 CapabilityBoundingSet= EnvironmentFile=-/etc/default/statsfd-collector; do
	check "service has $s" grep -qx -- "$s" "$svc"
done
check "service sets UMask= and MemoryMax=, and not PrivateUsers= (SO_PEERCRED)" \
	bash -c "grep -q '^UMask=0077' '$svc' && grep -q '^MemoryMax=' '$svc' && ! grep -q '^PrivateUsers=' '$svc'"
# The command line: ExecStart= and its continuation lines.
cmd=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$svc")
sock=$(grep -o -- '--socket [^ ]*' <<<"$cmd" | cut -d' ' -f2)
check "statsfd-collector.socket listens on --socket $sock (SOCK_SEQPACKET)" \
	test "$(key ListenSequentialPacket "$units/statsfd-collector.socket")" = "$sock"
check "statsfd-collector.socket: SocketMode=0660, SocketGroup=statsfd" \
	test "$(key SocketMode "$units/statsfd-collector.socket")$(key SocketGroup "$units/statsfd-collector.socket")" = 0660statsfd
listen=$(grep -o -- '--listen [^ ]*' <<<"$cmd" | cut -d' ' -f2)
check "statsfd-collector-http.socket listens on --listen $listen" \
	test "$(key ListenStream "$units/statsfd-collector-http.socket")" = "$listen"
check "IPAddressAllow= covers the listen address (localhost)" \
	bash -c "grep -qx 'IPAddressAllow=localhost' '$svc' && [[ '$listen' == 127.* ]]"

# What the unit refers to is installed.
for d in $(sed -n 's/^Documentation=//p' "$svc"); do
	case $d in
	man:*) p=${d#man:}; f=$dest/usr/share/man/man${p: -2:1}/${p%(*}.${p: -2:1} ;;
	file://*) f=$dest${d#file://} ;;
	*) f=/nonexistent ;;
	esac
	check "Documentation=$d is installed" test -f "$f"
done
check "no @PLACEHOLDER@ left in the installed service" bash -c "! grep -q '@[A-Z]*@' '$svc'"
check "options file installed (/etc/default/statsfd-collector)" \
	grep -q '^STATSFD_COLLECTOR_OPTS=' "$dest/etc/default/statsfd-collector"
echo 'STATSFD_COLLECTOR_OPTS="--interval 1000"' >"$dest/etc/default/statsfd-collector"
make -s -C "$root/tools" O="$out" install DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1
check "a second install keeps the administrator's options file" \
	grep -q -- '--interval 1000' "$dest/etc/default/statsfd-collector"
check "sysusers.d entry for the statsfd user" \
	grep -q '^u statsfd ' "$dest/usr/lib/sysusers.d/statsfd.conf"
# The Grafana dashboards (dashboards_test.sh runs their queries in the
# guest) and the provisioning file that names their directory.
dd=/usr/share/statsfd/dashboards
check "the dashboards are installed in $dd, as in tools/dashboards/" \
	bash -c "cd '$root/tools/dashboards' && ls *.json >'$tmp/dash.list' && [ \$(wc -l <'$tmp/dash.list') -ge 3 ] &&
		while read -r f; do cmp -s \"\$f\" '$dest$dd/'\"\$f\" || exit 1; done <'$tmp/dash.list'"
check "grafana-dashboards.yaml (provisioning) names $dd" \
	bash -c "grep -qx '      path: $dd' '$dest/usr/share/doc/statsfd/grafana-dashboards.yaml' &&
		! grep -q '@[A-Z]*@' '$dest/usr/share/doc/statsfd/grafana-dashboards.yaml'"
finish
