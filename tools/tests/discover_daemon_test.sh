#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# statsfd-collector --discover-kvm as a daemon on the host (no KVM needed):
# every bad --discover-interval refused with its message; started as root
# with --user, it keeps CAP_SYS_PTRACE and nothing else (PR_SET_KEEPCAPS,
# then capset); without --discover-kvm it keeps nothing; --user '' is
# refused.  Finding real KVM VMMs is
# discover_kvm_test.sh, in make check's 6.1 guest.
# Usage: discover_daemon_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
. "$(dirname "$0")/scratch.sh"
out=${1:?usage: discover_daemon_test.sh BUILD_DIR}
bin=${STATSFD_BIN:-$out/san/bin}/statsfd-collector
# The daemon may run as nobody from the start: its socket is created here.
scratch_tmp discover-daemon-test 1777
# The daemon drops privileges and sets PR_SET_DUMPABLE=0 (no LeakSanitizer).
export ASAN_OPTIONS=detect_leaks=0

# refused VALUE: --discover-interval VALUE exits 2 naming the value.
refused() {
	"$bin" --socket "$tmp/bad.sock" --listen none --user root --discover-kvm \
		--discover-interval "$1" >/dev/null 2>"$tmp/bad.err"
	local rc=$?
	[ "$rc" = 2 ] && grep -q "bad value '$1'" "$tmp/bad.err"
}
check "--discover-interval 99 refused (below 100 ms)" refused 99
check "--discover-interval 3600001 refused (above an hour)" refused 3600001
check "--discover-interval abc refused" refused abc
check "--discover-interval '' refused" refused ''
check "--discover-interval 5s refused (milliseconds, digits only)" refused 5s
"$bin" --socket "$tmp/bad.sock" --listen none --user root --discover-interval 1000 \
	>/dev/null 2>"$tmp/alone.err"
check "--discover-interval without --discover-kvm refused (exit 2, said)" \
	bash -c "[ $? = 2 ] && grep -q -- '--discover-interval needs --discover-kvm' '$tmp/alone.err'"
check "--help documents --discover-kvm and --discover-interval" \
	bash -c "'$bin' --help | grep -q -- '--discover-kvm' && '$bin' --help | grep -q -- '--discover-interval MS'"

# start NAME ARGS...: run the daemon (under ${wrap[@]}, if any) until it
# is ready; its pid in $daemon.
wrap=()
start() {
	local name=$1
	shift
	"${wrap[@]}" "$bin" --socket "$tmp/$name.sock" --listen none "$@" \
		2>"$tmp/$name.log" &
	daemon=$!
	for _ in $(seq 100); do
		grep -q 'ready:' "$tmp/$name.log" && return 0
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.05
	done
	sed 's/^/# /' "$tmp/$name.log"
	return 1
}
stop() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; daemon=; }
caps() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

if [ "$(id -u)" != 0 ]; then
	bail "the capability checks need root (to start the daemon with --user)"
fi
if start keep --user nobody --discover-kvm --discover-interval 100; then
	check "--user nobody --discover-kvm: runs as nobody" \
		test "$(awk '$1 == "Uid:" { print $3 }' "/proc/$daemon/status")" = 65534
	check "... keeps CAP_SYS_PTRACE only, permitted and effective (0x80000)" \
		test "$(caps "$daemon" CapPrm)/$(caps "$daemon" CapEff)" = 0000000000080000/0000000000080000
	check "... inheritable and ambient sets empty" \
		test "$(caps "$daemon" CapInh)/$(caps "$daemon" CapAmb)" = 0000000000000000/0000000000000000
	check "... scanned /proc (no KVM VMM on this host: none followed)" \
		grep -q 'discover: following 0 KVM VMMs' "$tmp/keep.log"
	sleep 0.3
	check "... and keeps running through rescans" kill -0 "$daemon"
	stop
else
	nok "--user nobody --discover-kvm: daemon started"
fi
if start plain --user nobody; then
	check "--user nobody without --discover-kvm: no capabilities at all" \
		test "$(caps "$daemon" CapPrm)/$(caps "$daemon" CapEff)" = 0000000000000000/0000000000000000
	stop
else
	nok "--user nobody: daemon started"
fi
# As a systemd unit with AmbientCapabilities=CAP_SYS_PTRACE runs it: no
# capset() (its seccomp filter may forbid it), nothing to drop anyway.
wrap=(setpriv --reuid=65534 --regid=65534 --clear-groups
	--inh-caps=+sys_ptrace --ambient-caps=+sys_ptrace)
if command -v setpriv >/dev/null && start amb --user nobody --discover-kvm; then
	check "ambient CAP_SYS_PTRACE alone: left as it is (no capset)" \
		test "$(caps "$daemon" CapPrm)/$(caps "$daemon" CapEff)/$(caps "$daemon" CapInh)" = \
		0000000000080000/0000000000080000/0000000000080000
	stop
else
	nok "ambient CAP_SYS_PTRACE alone: daemon started (needs setpriv)"
fi
# '' no longer means "stay root" (a typo must not keep every capability).
"$bin" --socket "$tmp/bad.sock" --listen none --user '' --discover-kvm \
	>/dev/null 2>"$tmp/empty.err"
check "--user '' --discover-kvm: refused (exit 2), not run as root" \
	test $? = 2
finish
