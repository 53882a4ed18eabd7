#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# check-guest.sh - the /run.sh of `make check`: load the modules, run the
# KUnit suites and selftests, unload, scan for leaks and dump the kernel log.
#
# Runs under busybox sh as root in the test guest; stdout is the results
# channel (ttyS1).  Lines starting "# statsfd-" frame each piece of output
# for tools/testing/summarize.py; test output in between is TAP/KTAP.
# /etc/statsfd-check.conf (written by tools/testing/check.sh) may set:
#   KUNIT_GLOB     KUnit filter_glob ("suite" or "suite.case"), empty: all
#   RUN_KUNIT      0 to skip KUnit, 1 to run it
#   SELFTESTS      space-separated selftest names, empty: all
#   RUN_SELFTESTS  0 to skip selftests
#   SELFTEST_ARGS  extra arguments for every selftest binary
#   HARNESS        a harness-proof probe (tools/testing/check-harness.sh):
#                  kunit, kunit-missing, warn, leak, oob, abba, race; empty in
#                  a normal run
#   LOAD_MODULES   0 to leave the shipped modules (/lib/statsfd/modules.list)
#                  out (harness probes)
#   TEST_TIMEOUT   seconds per selftest binary
#   STRESS         1: export STATSFD_STRESS=1 (full stress counts, CI)
#   KERNEL_PROOFS  what this kernel must prove it has (see prove() below)
#   KMEMLEAK       1: kmemleak must be present, scanning, and find nothing
#   DEV_MODULES    stock modules to insmod from /lib/kmods before the tests
#                  (the 6.1 leg: brd, veth, dummy, built into the 6.12
#                  kernel, and loop)
#   KVM_MODULES    stock modules to insmod from /lib/kmods (the 6.1 leg's
#                  real KVM), then /usr/libexec/statsfd-kvm/* run as selftests
#   HARNESS_SELFTESTS  harness-proof selftests to run from
#                  /usr/libexec/statsfd-harness (names)
# Every result this run must report is listed by tools/testing/manifest.py
# on the host; anything missing from the output is a failure there.

RUN_KUNIT=1 RUN_SELFTESTS=1 KUNIT_GLOB= SELFTESTS= SELFTEST_ARGS= HARNESS=
LOAD_MODULES=1 TEST_TIMEOUT=600 STRESS=0 KERNEL_PROOFS= KMEMLEAK=0 KVM_MODULES=
DEV_MODULES=
HARNESS_SELFTESTS=
[ -r /etc/statsfd-check.conf ] && . /etc/statsfd-check.conf
[ "$STRESS" = 1 ] && export STATSFD_STRESS=1

MODDIR=/lib/statsfd
KMEMLEAK_FILE=/sys/kernel/debug/kmemleak

result() {
	echo "# statsfd-result $*"
}

# phase NAME: the guest's time since the previous phase began (by its
# clock, /proc/uptime) goes out as "# statsfd-time guest/PREVIOUS SECS",
# which summarize.py ranks with the tests' times; the first phase, boot,
# is the kernel's start up to here.
phase_name=boot phase_t0=0
phase() {
	now=$(cut -d. -f1 /proc/uptime)
	echo "# statsfd-time guest/$phase_name $((now - phase_t0))"
	phase_name=$1 phase_t0=$now
}
phase kmemleak-first-scan

# Boot-time objects kmemleak cannot account for are not ours: scan once and
# mark everything reported so far as known before any of our code runs.
# A write of "scan" fails with EPERM once kmemleak is disabled, so success
# here is also the proof that it is on and scanning.
kmemleak_on=0
# The scans this script and vm_fault_test ask for are all there is: the
# automatic scanning thread (a first scan a minute after boot, then every
# ten minutes) would only take CPU from the tests in the middle of the run.
if [ "$KMEMLEAK" = 1 ] && echo scan 2>/dev/null >"$KMEMLEAK_FILE"; then
	echo clear >"$KMEMLEAK_FILE"
	echo scan=off >"$KMEMLEAK_FILE"
	kmemleak_on=1
fi
phase load

# prove NAME: one result kernel/NAME saying whether the booted kernel really
# has what its config promised.  The host decides which proofs a leg owes.
prove() {
	name=$1
	why=
	case "$name" in
	panic_on_warn)
		[ "$(cat /proc/sys/kernel/panic_on_warn 2>/dev/null)" = 1 ] ||
			why="/proc/sys/kernel/panic_on_warn is not 1" ;;
	kmemleak)
		[ "$kmemleak_on" = 1 ] ||
			why="$KMEMLEAK_FILE missing or refuses 'scan' (kmemleak off or failed)" ;;
	kasan)
		dmesg | grep -q 'KernelAddressSanitizer initialized' ||
			why="no 'KernelAddressSanitizer initialized' in the kernel log" ;;
	kcsan)
		grep -q '^enabled: 1' /sys/kernel/debug/kcsan 2>/dev/null ||
			why="/sys/kernel/debug/kcsan missing or not enabled" ;;
	lockdep)
		# Still on after every test: lockdep switches itself off (and
		# says so once) at its first report.
		grep -qE '^ *debug_locks: +1$' /proc/lockdep_stats 2>/dev/null ||
			why="debug_locks is not 1 in /proc/lockdep_stats: $(grep debug_locks /proc/lockdep_stats 2>&1)" ;;
	hung_task)
		[ "$(cat /proc/sys/kernel/hung_task_panic 2>/dev/null)" = 1 ] &&
			[ "$(cat /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null)" -gt 0 ] ||
			why="hung task detector off or not set to panic" ;;
	softlockup)
		[ "$(cat /proc/sys/kernel/softlockup_panic 2>/dev/null)" = 1 ] &&
			[ "$(cat /proc/sys/kernel/soft_watchdog 2>/dev/null)" = 1 ] ||
			why="soft-lockup detector off or not set to panic" ;;
	hardened_usercopy)
		if ! grep -q ' __check_object_size$' /proc/kallsyms; then
			why="__check_object_size not in the kernel (HARDENED_USERCOPY off)"
		elif grep -q 'hardened_usercopy=off' /proc/cmdline; then
			why="booted with hardened_usercopy=off"
		fi ;;
	fail_usercopy)
		[ -d /sys/kernel/debug/fail_usercopy ] ||
			why="/sys/kernel/debug/fail_usercopy missing (FAULT_INJECTION_USERCOPY off)" ;;
	taint)
		# Allowed: O (out-of-tree module, 4096), E (unsigned module,
		# 8192) and, where a KUnit module was loaded (KUnit runs, harness probes),
		# N (test module, 262144).
		t=$(cat /proc/sys/kernel/tainted)
		allowed=$((4096 | 8192))
		{ [ "$RUN_KUNIT" = 1 ] || [ -n "$HARNESS" ]; } && allowed=$((allowed | 262144))
		bad=$((t & ~allowed))
		[ "$bad" -eq 0 ] || why="kernel tainted $t: flags $(taint_letters "$bad") beyond the allowed O/E/N" ;;
	*)
		why="unknown proof" ;;
	esac
	if [ -z "$why" ]; then
		result PASS "kernel/$name"
	else
		result FAIL "kernel/$name" "$why"
	fi
}

taint_letters() {
	letters="P F S R M B U D A W C I O E L K X T N"
	out= bit=0
	for l in $letters; do
		[ $(($1 >> bit & 1)) -eq 1 ] && out="$out$l"
		bit=$((bit + 1))
	done
	[ $(($1 >> bit)) -ne 0 ] && out="$out+bits>=$bit"
	echo "$out"
}

# Proofs that must hold before anything runs; lockdep and taint are proven
# at the end, after every test had its chance to turn them off.
for p in $KERNEL_PROOFS; do
	case "$p" in lockdep | taint) ;; *) prove "$p" ;; esac
done

# Loads module $1 with parameters $2...; records the outcome as load/<name>.
load() {
	ko=$1
	shift
	if [ ! -f "$MODDIR/$ko" ]; then
		result FAIL "load/$ko" "not built"
		return 1
	fi
	if out=$(insmod "$MODDIR/$ko" "$@" 2>&1); then
		result PASS "load/$ko"
		return 0
	fi
	result FAIL "load/$ko" "insmod: $out"
	return 1
}

unload() {
	name=${1%.ko}
	if out=$(rmmod "$name" 2>&1); then
		result PASS "unload/$1"
	else
		result FAIL "unload/$1" "rmmod: $out"
	fi
}

# Runs the KUnit suites of module $1 (parameters $2...) and prints their
# debugfs KTAP results.  KUnit runs a module's suites while insmod runs.
run_kunit_module() {
	ko=$1
	before=$(ls /sys/kernel/debug/kunit 2>/dev/null)
	t0=$(date +%s)
	load "$@" || return
	echo "# statsfd-time kunit/$ko $(($(date +%s) - t0))"
	ran=0
	for s in $(ls /sys/kernel/debug/kunit); do
		case " $(echo $before) " in *" $s "*) continue ;; esac
		ran=$((ran + 1))
		echo "# statsfd-kunit-begin $s"
		cat "/sys/kernel/debug/kunit/$s/results"
		echo "# statsfd-kunit-end $s"
	done
	# Without a filter every KUnit module must run at least one suite.
	if [ "$ran" -eq 0 ] && [ -z "$KUNIT_GLOB" ]; then
		result FAIL "kunit/$ko" "loaded but no KUnit suite ran"
	fi
	unload "$ko"
}

# case_times NAME: copies a test's TAP through and, after each result
# line that took 2 s or more since the one before (a kselftest case: since
# its "#  RUN" line), adds "# statsfd-time selftest/NAME/CASE SECS", which
# summarize.py ranks with the other times (busybox awk has systime()).  It
# stops at run_selftest's "# statsfd-selftest-done" line, not at the end
# of its input: a daemon a killed script left behind may hold the pipe.
case_times() {
	awk -v n="$1" -v t="$(date +%s)" '
	$0 == "# statsfd-selftest-done" { exit }
	{ print; fflush() }
	/^#  RUN / { t = systime() }
	/^(not )?ok [0-9]+ / {
		c = $1 == "ok" ? $3 : $4
		if (c == "-" || c == "")
			c = "#" ($1 == "ok" ? $2 : $3)
		s = systime() - t
		if (s >= 2)
			printf "# statsfd-time selftest/%s/%s %d\n", n, c, s
		fflush()
		t = systime()
	}'
}

# run_selftest PATH [ARGS...]: scripts run through their #! line (bash for
# the KVM tests, whose bash comes with them), binaries directly.  busybox
# timeout: SIGTERM at TEST_TIMEOUT, exit 143 (reported as a timeout).
run_selftest() {
	path=$1
	shift
	name=$(basename "$path")
	echo "# statsfd-selftest-begin $name"
	t0=$(date +%s)
	{
		(cd /tmp && timeout "$TEST_TIMEOUT" "$path" "$@") 2>&1
		echo $? >/tmp/.selftest-rc
		# On a line of its own even after output without a newline.
		printf '\n# statsfd-selftest-done\n'
	} | case_times "$name"
	rc=$(cat /tmp/.selftest-rc)
	echo "# statsfd-selftest-end $name rc=$rc secs=$(($(date +%s) - t0))"
}

selected() {
	[ -z "$SELFTESTS" ] && return 0
	for s in $SELFTESTS; do
		[ "$s" = "$1" ] || [ "$s.sh" = "$1" ] && return 0
	done
	return 1
}

# The shipped modules in load order (modules.list, from modules.mk): the
# core first; a provider is tried only once the core is in.  $loaded lists
# them in unload order.
loaded=
if [ "$LOAD_MODULES" = 1 ]; then
	while read -r ko; do
		if load "$ko"; then
			loaded="$ko $loaded"
		elif [ -z "$loaded" ]; then
			break
		fi
	done <"$MODDIR/modules.list"
fi

# The disks and interfaces the host tests read, where they are modules:
# brd as the 6.12 test kernel builds it in (/dev/ram0 and /dev/ram1, 8 MiB).
for m in $DEV_MODULES; do
	args=
	[ "$m" = brd ] && args="rd_nr=2 rd_size=8192"
	# shellcheck disable=SC2086 # args is a word list
	if out=$(insmod "/lib/kmods/$m.ko" $args 2>&1); then
		result PASS "load/$m.ko"
	else
		result FAIL "load/$m.ko" "insmod: $out"
	fi
done

# Harness probes that break the kernel on purpose from statsfd_harness.ko's
# init: warn and oob panic (panic_on_warn), leak, abba and race do not and
# unload.
case "$HARNESS" in
warn | oob | leak | abba | race)
	load statsfd_harness.ko "$HARNESS=1" && unload statsfd_harness.ko ;;
esac

phase kunit
if [ "$RUN_KUNIT" = 1 ] && [ ! -d /sys/kernel/debug/kunit ]; then
	result FAIL kunit "KUnit expected but /sys/kernel/debug/kunit is missing"
elif [ "$RUN_KUNIT" = 1 ]; then
	if [ -n "$KUNIT_GLOB" ]; then
		printf "%s" "$KUNIT_GLOB" >/sys/module/kunit/parameters/filter_glob
	fi
	if [ -z "$HARNESS" ] && ! grep -qv '^statsfd_harness' "$MODDIR/kunit.list" 2>/dev/null; then
		result FAIL kunit "no KUnit test module in the guest (tests/kunit built?)"
	fi
	for ko in $(cat "$MODDIR/kunit.list" 2>/dev/null); do
		# A normal run never loads the harness module; the kunit
		# probe runs it alone (the others need statsfd.ko, which
		# probes leave out); any other probe runs none, which the
		# kunit-missing probe's manifest turns into missing results.
		case "$HARNESS:$ko" in
		kunit:statsfd_harness*) run_kunit_module "$ko" fail_kunit=1 ;;
		:statsfd_harness*) ;;
		:*) run_kunit_module "$ko" ;;
		*) ;;
		esac
	done
fi

phase selftests
if [ "$RUN_SELFTESTS" = 1 ]; then
	for t in /usr/libexec/statsfd/*; do
		[ -f "$t" ] || continue
		# shellcheck disable=SC2086 # SELFTEST_ARGS is a word list
		selected "$(basename "$t")" && run_selftest "$t" $SELFTEST_ARGS
	done
fi
for t in $HARNESS_SELFTESTS; do
	# A name the guest lacks simply reports nothing: the manifest on the
	# host turns that into a failure (the missing-binary probe).
	[ -f "/usr/libexec/statsfd-harness/$t" ] && run_selftest "/usr/libexec/statsfd-harness/$t"
done

# kvm_hold_start: one idle VM, held until the guest powers off, so that the
# KVM tests' VMs never switch KVM's static keys (preempt_notifier_key in
# __schedule(), kvm_has_noapic_vcpu): under QEMU's multi-threaded TCG the
# text patching of a switch can leave a vCPU a stale translation of the
# INT3 it writes first, on which both vCPUs then loop forever with
# interrupts off (tools/tests/kvm_hold.c, tools/testing/README.md).  This
# VM switches the keys on once, with CPU 1 offline, so that no other vCPU
# runs while the text is patched; nothing switches them off again.
kvm_hold_start() {
	cpu1=/sys/devices/system/cpu/cpu1/online
	off=0
	if [ "$(cat "$cpu1" 2>/dev/null)" = 1 ] && echo 0 2>/dev/null >"$cpu1"; then
		off=1
	else
		echo "# kvm_hold: CPU 1 not taken offline; its VM is created with both CPUs running"
	fi
	rm -f /tmp/kvm_hold.ready
	kvm_hold /tmp/kvm_hold.ready >/tmp/kvm_hold.log 2>&1 &
	hold_pid=$!
	n=0
	while [ ! -s /tmp/kvm_hold.ready ] && kill -0 "$hold_pid" 2>/dev/null && [ "$n" -lt 600 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if [ "$off" = 1 ] && ! echo 1 2>/dev/null >"$cpu1"; then
		result FAIL kvm "CPU 1 did not come back online after kvm_hold started"
	fi
	if [ ! -s /tmp/kvm_hold.ready ]; then
		result FAIL kvm "kvm_hold did not start: $(cat /tmp/kvm_hold.log)"
	fi
}

# Real upstream KVM (the 6.1 leg): its stats fds are what our library and
# CLI must read; the tests that use them run only here, on every machine.
phase kvm
if [ -n "$KVM_MODULES" ]; then
	kvm_ok=1
	for m in $KVM_MODULES; do
		if out=$(insmod "/lib/kmods/$m.ko" 2>&1); then
			result PASS "load/$m.ko"
		else
			result FAIL "load/$m.ko" "insmod: $out"
			kvm_ok=0
		fi
	done
	if [ "$kvm_ok" = 1 ] && [ -c /dev/kvm ]; then
		kvm_hold_start
		for t in /usr/libexec/statsfd-kvm/*; do
			[ -f "$t" ] && run_selftest "$t"
		done
	else
		result FAIL kvm "no /dev/kvm after loading $KVM_MODULES"
	fi
fi

phase unload
for ko in $loaded; do
	unload "$ko"
done

# kmemleak reports only objects older than 5 s, and an object only at the
# second scan that finds it unchanged; unloading first lets it see what
# module exit paths forgot to free.  The second scan starts 5 s after the
# unload at the earliest (the first, slow under KASAN, is part of that).
phase kmemleak-last-scans
if [ "$KMEMLEAK" = 1 ] && [ "$kmemleak_on" = 0 ]; then
	result FAIL kmemleak "kmemleak expected but not available (see kernel/kmemleak)"
elif [ "$KMEMLEAK" = 1 ]; then
	unloaded=$(cut -d' ' -f1 /proc/uptime)
	echo scan >"$KMEMLEAK_FILE"
	left=$(awk -v t="$unloaded" '{ d = t + 5.1 - $1; print d > 0 ? d : 0 }' /proc/uptime)
	sleep "$left"
	echo scan >"$KMEMLEAK_FILE"
	leaks=$(cat "$KMEMLEAK_FILE")
	if [ -n "$leaks" ]; then
		echo "$leaks"
		result FAIL kmemleak "unreferenced objects reported (see above)"
	else
		result PASS kmemleak
	fi
fi

for p in $KERNEL_PROOFS; do
	case "$p" in lockdep | taint) prove "$p" ;; esac
done

phase end
echo "# statsfd-dmesg-begin"
dmesg
echo "# statsfd-dmesg-end"
echo "# statsfd-check-complete"
