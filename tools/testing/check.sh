#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check.sh - `make check`: build everything, boot each kernel leg in QEMU,
# run the tests and print one verdict (tools/testing/summarize.py).
#
# Environment (the Makefile exports these):
#   BUILD          build folder (default: <repo>/build)
#   LEGS           kernel legs to run: "6.12 6.1" (default)
#   KUNIT          KUnit filter glob ("suite" or "suite.case"); alone, it
#                  also turns selftests (and so the 6.1 leg) off
#   SELFTESTS      selftest names to run; alone, it also turns KUnit off
#   SELFTEST_ARGS  extra arguments for each selftest (e.g. "-t api_version")
#   GUEST_TIMEOUT  seconds before a guest is killed (default 900)
#   HOST_TESTS     0 to skip host-side tests (make -C tools check)
#   HARNESS        harness-proof probe: kunit, selftest or warn (check-harness)
#   LOAD_MODULES   0 to skip loading statsfd.ko/statsfd_vm.ko (check-harness)
#   LOGDIR         where logs and results go (default: BUILD/logs)
#   SERIAL         1 to run host tests and guests one after the other
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
T=$root/tools/testing
BUILD=$(realpath -m "${BUILD:-$root/build}")
LEGS=${LEGS:-6.12 6.1}
KUNIT=${KUNIT:-}
SELFTESTS=${SELFTESTS:-}
SELFTEST_ARGS=${SELFTEST_ARGS:-}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-900}
HOST_TESTS=${HOST_TESTS:-1}
HARNESS=${HARNESS:-}
LOAD_MODULES=${LOAD_MODULES:-1}
LOGDIR=$(realpath -m "${LOGDIR:-$BUILD/logs}")
TEST_KDIR=${TEST_KDIR:-$BUILD/kernel/linux-6.12}
STOCK_KDIR=${STOCK_KDIR:-$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
STOCK_KERNEL=${STOCK_KERNEL:-$(ls /boot/vmlinuz-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
export BUILD JOBS="${JOBS:-2}"

run_kunit=${RUN_KUNIT:-1}
run_selftests=${RUN_SELFTESTS:-1}
if [ -n "$KUNIT" ] && [ -z "$SELFTESTS" ]; then
	run_selftests=0
fi
if [ -n "$SELFTESTS" ] && [ -z "$KUNIT" ]; then
	run_kunit=0
fi
if [ -n "$KUNIT$SELFTESTS" ]; then
	HOST_TESTS=0
fi

mkdir -p "$LOGDIR" "$BUILD"
# One guest run at a time per build folder: two would share logs and cores.
exec 8>"$BUILD/.check.lock"
if ! flock -n 8; then
	echo "check: another make check is running on $BUILD; waiting for it" >&2
	flock 8
fi
start=$SECONDS
sumargs=(--summary "$LOGDIR/summary.txt" --logs "$LOGDIR")
say() {
	printf '==> [%4ss] %s\n' "$((SECONDS - start))" "$*" >&2
}
fail() {
	sumargs+=(--fail "$1" "$2")
}

run_host_tests=0
say "dependencies"
if ! "$T/deps.sh"; then
	echo "check: installing dependencies failed" >&2
	exit 1
fi

say "selftests"
if ! make -s -C "$root" selftests BUILD="$BUILD" >"$LOGDIR/selftests-build.log" 2>&1; then
	fail build/selftests "selftest build failed, see $LOGDIR/selftests-build.log"
	tail -n 30 "$LOGDIR/selftests-build.log" >&2
fi

if [ -f "$root/tools/Makefile" ]; then
	say "userspace tools"
	if ! make -s -C "$root/tools" O="$BUILD/tools" >"$LOGDIR/tools-build.log" 2>&1; then
		fail build/tools "tools build failed, see $LOGDIR/tools-build.log"
		tail -n 30 "$LOGDIR/tools-build.log" >&2
	elif [ "$HOST_TESTS" = 1 ]; then
		run_host_tests=1
	fi
fi

legs=()
for leg in $LEGS; do
	case "$leg" in
	6.12)
		say "6.12 test kernel"
		if ! "$T/kernel.sh" "$BUILD"; then
			fail 6.12/build "test kernel build failed, see $LOGDIR/kernel-build.log"
			continue
		fi
		kdir=$TEST_KDIR
		kernel=$TEST_KDIR/arch/x86/boot/bzImage
		;;
	6.1)
		if [ "$run_selftests" != 1 ]; then
			say "6.1 leg skipped: it has no KUnit and no selftest was selected"
			continue
		fi
		if [ -z "$STOCK_KDIR" ] || [ -z "$STOCK_KERNEL" ]; then
			fail 6.1/build "no stock 6.1 kernel or headers (linux-image-amd64, linux-headers-amd64)"
			continue
		fi
		kdir=$STOCK_KDIR
		kernel=$STOCK_KERNEL
		;;
	*)
		fail "$leg/build" "unknown leg (known: 6.12 6.1)"
		continue
		;;
	esac
	say "$leg modules (KDIR=$kdir)"
	if ! moddir=$("$T/modules.sh" "$kdir" "$BUILD"); then
		fail "$leg/build" "module build failed, see $BUILD/logs/modules-$leg.log"
		continue
	fi
	legs+=("$leg:$kernel:$moddir")
done

# Boots one leg's guest; its run-guest exit status lands in $d/run-guest.rc.
run_leg() {
	local leg=$1 kernel=$2 moddir=$3 smp=$4
	local d=$LOGDIR/$leg
	mkdir -p "$d"
	{
		echo "RUN_KUNIT=$run_kunit"
		echo "RUN_SELFTESTS=$run_selftests"
		printf 'KUNIT_GLOB=%q\n' "$KUNIT"
		printf 'SELFTESTS=%q\n' "$(echo "$SELFTESTS" | tr ',' ' ')"
		printf 'SELFTEST_ARGS=%q\n' "$SELFTEST_ARGS"
		printf 'HARNESS=%q\n' "$HARNESS"
		echo "LOAD_MODULES=$LOAD_MODULES"
	} >"$d/check.conf"
	local extra=(--file "$d/check.conf:/etc/statsfd-check.conf")
	if [ "$HARNESS" = selftest ]; then
		extra+=(--file "$BUILD/selftests-harness:/usr/libexec/statsfd-harness")
	fi
	say "$leg guest started (console: $d/console.log, results: $d/results.txt)"
	"$T/qemu/run-guest" --kernel "$kernel" --modules-dir "$moddir" \
		--script "$T/qemu/check-guest.sh" --selftests "$BUILD/selftests" \
		--tools "$BUILD/tools/bin" \
		--results "$d/results.txt" --log "$d/console.log" --smp "$smp" \
		--timeout "$GUEST_TIMEOUT" "${extra[@]}" 2>"$d/run-guest.err"
	echo $? >"$d/run-guest.rc"
	cat "$d/run-guest.err" >&2
	say "$leg guest finished"
}

# The 6.12 guest is the long one and gets both CPUs; the host tests and the
# other legs run beside it (SERIAL=1: one thing at a time).
pids=()
if [ "$run_host_tests" = 1 ]; then
	say "host tests started (make -C tools check, log: $LOGDIR/host-tests.log)"
	(
		make -s -C "$root/tools" O="$BUILD/tools" check >"$LOGDIR/host-tests.log" 2>&1
		echo $? >"$LOGDIR/host-tests.rc"
		say "host tests finished"
	) &
	pids+=($!)
	[ "${SERIAL:-0}" = 1 ] && wait "${pids[@]}"
fi
for spec in "${legs[@]}"; do
	IFS=: read -r leg kernel moddir <<<"$spec"
	if [ "${SERIAL:-0}" = 1 ]; then
		run_leg "$leg" "$kernel" "$moddir" 2
	elif [ "$leg" != 6.12 ]; then
		run_leg "$leg" "$kernel" "$moddir" 1 &
		pids+=($!)
	fi
done
for spec in "${legs[@]}"; do
	IFS=: read -r leg kernel moddir <<<"$spec"
	if [ "${SERIAL:-0}" != 1 ] && [ "$leg" = 6.12 ]; then
		run_leg "$leg" "$kernel" "$moddir" 2
	fi
done
[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"

if [ "$run_host_tests" = 1 ]; then
	sumargs+=(--tap host "$LOGDIR/host-tests.log" "$(cat "$LOGDIR/host-tests.rc" 2>/dev/null || echo 1)")
fi
for spec in "${legs[@]}"; do
	IFS=: read -r leg kernel moddir <<<"$spec"
	d=$LOGDIR/$leg
	sumargs+=(--leg "$leg" "$d/results.txt" "$d/console.log" "$(cat "$d/run-guest.rc" 2>/dev/null || echo 1)")
done

say "done"
exec python3 "$T/summarize.py" "${sumargs[@]}"
