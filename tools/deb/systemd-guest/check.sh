#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check.sh - run by statsfd-check.service in the check-systemd guest
# (tools/deb/check-systemd.sh): the packaged units under systemd as PID 1.
# TAP on the second serial port (the host's results file).
#
#  - the sockets are listening and the service is not running; a client on
#    the unix socket, then one on the HTTP port, starts it (activation);
#  - Type=notify: systemctl start returns with the unit active and the
#    STATUS= the collector sends with READY=1;
#  - the fd store: the VMs of a sample VMM (stopped, so that it cannot
#    register them again) are still exported after systemctl restart, after
#    a SIGKILL (Restart=on-failure) and after the watchdog killed a stopped
#    collector;
#  - MemoryMax=: slow readers, tricklers, a filter flood and reply hoarders
#    against a collector holding 4 VMs of 16 vCPUs; the service stays below
#    its memory.max with no OOM event, never restarts, and serves afterwards;
#  - systemd-analyze security rates the loaded unit at most 2.0.
set -u
stty -F /dev/ttyS1 raw -echo 2>/dev/null
exec >/dev/ttyS1 2>&1
# The VMMs' fds: more than the default 1024 would do.
ulimit -n 65536

svc=statsfd-collector.service
sock=/run/statsfd/collector.sock
cg=/sys/fs/cgroup/system.slice/$svc
max_exposure=2.0
siege=/usr/libexec/statsfd-check/siege
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
# A failure says what the service and the VMM logged last.
nok() {
	n=$((n + 1))
	echo "not ok $n - $*"
	journalctl -b -u "$svc" --no-pager -o short-monotonic -n 40 |
		grep -v 'http: Connection socket' | tail -n 8 | sed 's/^/#   /'
	tail -n 3 /run/vmm.log 2>/dev/null | sed 's/^/#   vmm: /'
}
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
prop() { systemctl show --value -p "$1" "$svc"; }
# waitfor SECONDS CMD...: until CMD succeeds (every 0.2 s), at most SECONDS.
waitfor() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
# metric NAME: its value in one scrape over HTTP/1.0 (bash's /dev/tcp).
scrape() {
	timeout 60 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9477 &&
		printf "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n" >&3 && cat <&3' 2>/dev/null | tr -d '\r'
}
metric() { scrape | awk -v m="$1" '$1 == m && !d { print $2; d = 1 }'; }
sources_are() { [ "$(metric statsfd_collector_sources)" = "$1" ]; }
active() { [ "$(systemctl is-active "$svc")" = active ]; }
# new_main PID: active with a main PID other than PID.
new_main() { active && [ "$(prop MainPID)" != "$1" ] && [ "$(prop MainPID)" != 0 ]; }

echo "# statsfd-check-start $(uname -r), $(systemctl --version | head -n 1)"
failed=$(systemctl --failed --no-legend --plain | awk '{ print $1 }' | paste -sd' ')
[ -z "$failed" ] || echo "# failed units at boot: $failed"

check "systemd-modules-load loaded statsfd and statsfd_vm (/dev/statsfd_vm)" test -c /dev/statsfd_vm
s=$(systemctl is-active statsfd-collector.socket statsfd-collector-http.socket | paste -sd' ')
check "statsfd-collector.socket and statsfd-collector-http.socket listening ($s)" \
	test "$s" = "active active"
s=$(systemctl is-active "$svc")
check "the service is not running before any client ($s)" test "$s" = inactive
s=$(stat -c '%a %U:%G' "$sock" 2>&1)
check "$sock is 0660 root:statsfd ($s)" test "$s" = "660 root:statsfd"

# 1. Socket activation, unix socket first.
r=$(timeout 120 statsfd query --collector "$sock" --sources 2>&1)
rc=$?
check "a query on the unix socket starts the service and is answered (rc $rc: $r)" \
	bash -c "[ $rc -eq 0 ] && [ '$(systemctl is-active "$svc")' = active ]"
pid=$(prop MainPID)
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
check "it runs as the user statsfd (uid $uid)" test "$uid" = "$(id -u statsfd)"
st=$(prop StatusText)
check "Type=notify: systemd has the STATUS= sent with READY=1 ($st)" \
	bash -c "[ '$(prop Type)' = notify ] && [[ '$st' == serving* ]]"
r=$(scrape | sed -n 1p)
check "HTTP on statsfd-collector-http.socket's 127.0.0.1:9477 is served ($r)" \
	grep -q '^HTTP/1.[01] 200' <<<"$r"
# 1b. Activation by HTTP.
systemctl stop "$svc" 2>/dev/null
s=$(systemctl is-active "$svc" statsfd-collector.socket statsfd-collector-http.socket | paste -sd' ')
check "systemctl stop: the service stops, its sockets stay ($s)" test "$s" = "inactive active active"
r=$(scrape | sed -n 1p)
check "a scrape starts it again (HTTP socket activation: $r)" \
	bash -c "grep -q '^HTTP/1.[01] 200' <<<'$r' && [ '$(systemctl is-active "$svc")' = active ]"

# 2. Readiness on restart: systemctl returns with the unit active.
pid=$(prop MainPID)
systemctl restart "$svc"
s=$(systemctl is-active "$svc")
check "systemctl restart returns with the service active, not activating ($s)" \
	bash -c "[ '$s' = active ] && [ '$(prop MainPID)' != '$pid' ]"

# 3. The fd store.  The VMM is stopped: it cannot register its VMs again,
# so what the collector exports after each restart came from systemd.
rm -f /run/vmm.ready
statsfd-vmm --vms 2 --vcpus 4 --workload idle --names sda,sdb --collector "$sock" \
	--ready-file /run/vmm.ready --quiet >>/run/vmm.log 2>&1 &
vmm=$!
waitfor 120 test -e /run/vmm.ready
check "statsfd-vmm registered 2 VMs with 4 vCPUs each (10 sources)" waitfor 60 sources_are 10
kill -STOP "$vmm"
pid=$(prop MainPID)
nr=$(prop NRestarts)
systemctl restart "$svc"
check "systemctl restart: a new collector" new_main "$pid"
s=$(metric statsfd_collector_sources)
check "after systemctl restart: the 10 sources restored from the fd store ($s)" test "$s" = 10
v=$(scrape | grep -o 'target="vcpu",vm="sdb",vcpu="[0-9]*"' | sort -u | wc -l)
check "and the series of the VM sdb's 4 vCPUs exported ($v)" test "$v" = 4
pid=$(prop MainPID)
kill -KILL "$pid"
check "SIGKILL: Restart=on-failure starts a new collector" waitfor 60 new_main "$pid"
s=$(prop NRestarts)
check "NRestarts counted it ($nr -> $s)" test "$s" = $((nr + 1))
s=$(metric statsfd_collector_sources)
check "after the SIGKILL: the 10 sources restored from the fd store ($s)" test "$s" = 10

# 4. The watchdog: a stopped collector sends no WATCHDOG=1.
pid=$(prop MainPID)
nr=$(prop NRestarts)
kill -STOP "$pid"
check "SIGSTOP: the watchdog (WatchdogSec=$(prop WatchdogUSec)) has systemd restart it" \
	waitfor 180 new_main "$pid"
s=$(prop NRestarts)
check "NRestarts counted it ($nr -> $s)" test "$s" = $((nr + 1))
j=$(journalctl -b -u "$svc" --no-pager -o cat | grep -i 'watchdog timeout' | tail -n 1)
check "the journal says why (${j:-nothing})" test -n "$j"
s=$(metric statsfd_collector_sources)
check "after the watchdog's restart: the 10 sources restored ($s)" test "$s" = 10
kill -CONT "$vmm"
kill -TERM "$vmm"
wait "$vmm"
check "the VMM gone: its sources are removed" waitfor 60 sources_are 0

# 5. MemoryMax= under the siege of issue 18.  The VMM is stopped once its
# VMs are registered: its vCPU threads would only load the guest (the
# stats fds stay readable, their values no longer change).
rm -f /run/vmm.ready
statsfd-vmm --vms 4 --vcpus 16 --workload idle --collector "$sock" \
	--ready-file /run/vmm.ready --quiet >>/run/vmm.log 2>&1 &
vmm=$!
waitfor 300 test -e /run/vmm.ready
kill -STOP "$vmm"
check "4 VMs with 16 vCPUs registered (68 sources)" waitfor 120 sources_are 68
read -r st body < <($siege scrape)
echo "# the exposition: HTTP $st, $body bytes"
pid=$(prop MainPID)
nr=$(prop NRestarts)
mmax=$(cat "$cg/memory.max")
check "MemoryMax= is the cgroup's memory.max ($mmax)" test "$mmax" = "$(prop MemoryMax)"
echo "# memory.current $(cat "$cg/memory.current"), memory.peak $(cat "$cg/memory.peak") before the siege"
# memdiag WHEN: the service's memory, the kernel's socket buffers
# charged to it included (memory.stat "sock"), and the replies it queues.
memdiag() {
	echo "# $1: memory.current $(($(cat "$cg/memory.current") >> 20)) MiB," \
		"$(awk '$1 == "anon" || $1 == "sock" { printf "%s %d MiB, ", $1, $2 / 1048576 }' "$cg/memory.stat")" \
		"statsfd_collector_reply_bytes $(metric statsfd_collector_reply_bytes)"
}
# attack WHAT ARGS...: run the siege, report the memory while it holds
# its connections (after its last line, starting "# LINE").
attack() {
	local line=$1
	shift
	$siege "$@" >/run/siege.out 2>&1 &
	local p=$!
	waitfor 300 grep -q "^# $line" /run/siege.out
	cat /run/siege.out
	memdiag "$1, held"
	wait $p
}
attack "a scrape among them" slow 120 15
$siege trickle 32 15
attack "100 hoarders" flood "$sock" 100
read -r st body < <($siege scrape)
check "after the siege a scrape is served (HTTP $st, $body bytes)" test "$st" = 200
peak=$(cat "$cg/memory.peak")
check "memory.peak $((peak >> 20)) MiB stayed below memory.max $((mmax >> 20)) MiB" \
	test "$peak" -lt "$mmax"
ev=$(paste -sd' ' "$cg/memory.events")
check "no memory event: never at the limit, no OOM, no OOM kill ($ev)" \
	bash -c "[[ '$ev' == *'max 0 oom 0 oom_kill 0'* ]]"
s="$(prop MainPID) $(prop NRestarts) $(prop Result) $(systemctl is-active "$svc")"
check "never killed nor restarted (main PID, NRestarts, Result, state: $s)" \
	test "$s" = "$pid $nr success active"
kill -CONT "$vmm"
kill -TERM "$vmm"
wait "$vmm"

# 6. systemd-analyze security on the loaded unit.
a=$(systemd-analyze security "$svc" --no-pager 2>&1 | tail -n 1)
e=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' <<<"$a")
check "systemd-analyze security $svc: exposure ${e:-?} <= $max_exposure ($a)" \
	awk -v e="${e:-99}" -v m=$max_exposure 'BEGIN { exit !(e != "" && e + 0 <= m + 0) }'
for u in statsfd-collector.socket statsfd-collector-http.socket "$svc"; do
	v=$(systemd-analyze verify --man=no "$u" 2>&1 | grep -v '^$')
	check "systemd-analyze verify $u${v:+: $v}" test -z "$v"
done

systemctl stop "$svc" 2>/dev/null
s="$(prop Result) $(systemctl is-active "$svc")"
check "a clean stop (Result, state: $s)" test "$s" = "success inactive"
echo "1..$n"
echo "# statsfd-check-done"
