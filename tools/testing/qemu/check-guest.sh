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
#   HARNESS        "kunit", "selftest" or "warn": a harness-proof probe
#   LOAD_MODULES   0 to leave statsfd.ko and statsfd_vm.ko out (harness probes)
#   TEST_TIMEOUT   seconds per selftest binary

RUN_KUNIT=1 RUN_SELFTESTS=1 KUNIT_GLOB= SELFTESTS= SELFTEST_ARGS= HARNESS=
LOAD_MODULES=1 TEST_TIMEOUT=600
[ -r /etc/statsfd-check.conf ] && . /etc/statsfd-check.conf

MODDIR=/lib/statsfd
KMEMLEAK=/sys/kernel/debug/kmemleak

result() {
	echo "# statsfd-result $*"
}

# Boot-time objects kmemleak cannot account for are not ours: scan once and
# mark everything reported so far as known before any of our code runs.
if [ -w "$KMEMLEAK" ]; then
	echo scan >"$KMEMLEAK"
	echo clear >"$KMEMLEAK"
fi

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

run_selftest() {
	path=$1
	name=$(basename "$path")
	echo "# statsfd-selftest-begin $name"
	t0=$(date +%s)
	case "$name" in
	*.sh) (cd /tmp && timeout "$TEST_TIMEOUT" sh "$path" $SELFTEST_ARGS) 2>&1 ;;
	*) (cd /tmp && timeout "$TEST_TIMEOUT" "$path" $SELFTEST_ARGS) 2>&1 ;;
	esac
	rc=$?
	echo "# statsfd-selftest-end $name rc=$rc secs=$(($(date +%s) - t0))"
}

selected() {
	[ -z "$SELFTESTS" ] && return 0
	for s in $SELFTESTS; do
		[ "$s" = "$1" ] || [ "$s.sh" = "$1" ] && return 0
	done
	return 1
}

loaded=
if [ "$LOAD_MODULES" = 1 ] && load statsfd.ko; then
	loaded="statsfd.ko"
	if load statsfd_vm.ko; then
		loaded="statsfd_vm.ko $loaded"
	fi
fi

if [ "$HARNESS" = warn ]; then
	# Expected to panic (panic_on_warn=1): nothing after this line runs.
	load statsfd_harness.ko warn=1
fi

if [ "$RUN_KUNIT" = 1 ] && [ -d /sys/kernel/debug/kunit ]; then
	if [ -n "$KUNIT_GLOB" ]; then
		printf "%s" "$KUNIT_GLOB" >/sys/module/kunit/parameters/filter_glob
	fi
	if [ -z "$HARNESS" ] && ! grep -qv '^statsfd_harness' "$MODDIR/kunit.list" 2>/dev/null; then
		result FAIL kunit "no KUnit test module in the guest (tests/kunit built?)"
	fi
	for ko in $(cat "$MODDIR/kunit.list" 2>/dev/null); do
		# The harness probe runs its own module alone: the others
		# need statsfd.ko, which the probe leaves out.
		case "$HARNESS:$ko" in
		kunit:statsfd_harness*) run_kunit_module "$ko" fail_kunit=1 ;;
		kunit:* | *:statsfd_harness*) ;;
		*) run_kunit_module "$ko" ;;
		esac
	done
fi

if [ "$RUN_SELFTESTS" = 1 ]; then
	for t in /usr/libexec/statsfd/*; do
		[ -f "$t" ] || continue
		selected "$(basename "$t")" && run_selftest "$t"
	done
fi
if [ "$HARNESS" = selftest ]; then
	for t in /usr/libexec/statsfd-harness/*; do
		[ -f "$t" ] && run_selftest "$t"
	done
fi

for ko in $loaded; do
	unload "$ko"
done

# kmemleak reports only objects older than 5 s and wants two scans to be
# sure; unloading first lets it see what module exit paths forgot to free.
if [ -w "$KMEMLEAK" ]; then
	echo scan >"$KMEMLEAK"
	sleep 5
	echo scan >"$KMEMLEAK"
	leaks=$(cat "$KMEMLEAK")
	if [ -n "$leaks" ]; then
		echo "$leaks"
		result FAIL kmemleak "unreferenced objects reported (see above)"
	else
		result PASS kmemleak
	fi
fi

echo "# statsfd-dmesg-begin"
dmesg
echo "# statsfd-dmesg-end"
echo "# statsfd-check-complete"
