#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check.sh - `make check`: build everything, boot each kernel leg in QEMU,
# run the tests and print one verdict (tools/testing/summarize.py).
#
# Environment (the Makefile exports these):
#   BUILD          build folder (default: <repo>/build)
#   LEGS           kernel legs to run: "6.12 6.1" (default); "kcsan" is the
#                  data-race leg of make check-kcsan
#   KUNIT          KUnit filter glob ("suite" or "suite.case"); alone, it
#                  also turns selftests (and so the 6.1 leg) off
#   SELFTESTS      selftest names to run; alone, it also turns KUnit off
#   SELFTEST_ARGS  extra arguments for each selftest (e.g. "-t api_version")
#   GUEST_TIMEOUT  seconds before a guest is killed (default 900, 1800 with
#                  STRESS=1: snapshot_test alone reads for up to 300 s then)
#   HOST_TESTS     0 to skip host-side tests (make -C tools check)
#   STRESS         1: full stress counts in the selftests (CI); default 0
#   TEST_TIMEOUT   seconds each selftest program may run in the guest (600)
#   HARNESS        harness-proof probe (tools/testing/check-harness.sh)
#   HARNESS_SELFTESTS  harness selftests (tools/testing/probe) the probe runs
#   LOAD_MODULES   0 to skip loading the shipped modules (modules.mk)
#                  (check-harness)
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
if [ "${STRESS:-}" = 1 ]; then
	GUEST_TIMEOUT=${GUEST_TIMEOUT:-1800}
else
	GUEST_TIMEOUT=${GUEST_TIMEOUT:-900}
fi
HOST_TESTS=${HOST_TESTS:-1}
HARNESS=${HARNESS:-}
HARNESS_SELFTESTS=${HARNESS_SELFTESTS:-}
STRESS=${STRESS:-0}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
LOAD_MODULES=${LOAD_MODULES:-1}
LOGDIR=$(realpath -m "${LOGDIR:-$BUILD/logs}")
KCACHE=${KCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statsfd}
TEST_KDIR=${TEST_KDIR:-$KCACHE/linux-6.12-debug}
KCSAN_KDIR=${KCSAN_KDIR:-$KCACHE/linux-6.12-kcsan}
STOCK_KDIR=${STOCK_KDIR:-$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
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

# Per-leg facts: what it boots, what it runs, what its kernel must prove.
#   6.12   the debug kernel (KASAN, lockdep, kmemleak, ...): KUnit + selftests
#   6.1    Debian's stock kernel: selftests, plus real upstream KVM (the
#          stock kvm modules) and the tests that read its stats fds
#   kcsan  6.12 with KCSAN instead of KASAN (make check-kcsan): KUnit and
#          the race selftests; a data race in statsfd code fails it
# Debian's stock kernel, its modules and busybox, unpacked in the cache
# (every guest uses that busybox).
say "stock 6.1 kernel and busybox"
stock_root=
if [ -n "$STOCK_KDIR" ] && ! stock_root=$("$T/stock.sh" "$KCACHE" "$STOCK_KDIR"); then
	fail stock "tools/testing/stock.sh could not unpack the stock kernel and busybox"
	stock_root=
fi
busybox=${stock_root:+$stock_root/bin/busybox}
[ -n "$busybox" ] || busybox=$(command -v busybox || true)
stock_rel=${stock_root##*/stock-}
# Upstream KVM in the 6.1 guest: these stock modules, loaded in this order.
# The servers the tests run (Prometheus, promtool, node_exporter), unpacked
# in the cache, never installed (tools/testing/servers.sh); first in PATH
# for the host tests too.
say "servers (prometheus, promtool, node_exporter)"
if servers=$("$T/servers.sh" "$KCACHE"); then
	export PATH=$servers:$PATH
else
	fail servers "tools/testing/servers.sh could not unpack prometheus and node_exporter"
	servers=/nonexistent
fi
# What this run starts carries this mark in its environment, so that
# host_state_test.sh can tell a listener it left behind from anyone else's.
STATSFD_CHECK_RUN=$$.$(date +%s%N)
export STATSFD_CHECK_RUN
kvm_modules=(virt/lib/irqbypass drivers/crypto/ccp/ccp arch/x86/kvm/kvm arch/x86/kvm/kvm-amd)
# kvm_module_path M: the unpacked stock module M (any compression), or "".
kvm_module_path() {
	ls "$stock_root/lib/modules/$stock_rel/kernel/$1".ko* 2>/dev/null | head -n 1
}
# expect_stock_loads WHAT MODULE...: the manifest (margs) expects each stock
# MODULE to load; status 1, after failing WHAT, when one is not there.
expect_stock_loads() {
	local what=$1 m
	shift
	for m in "$@"; do
		[ -n "$(kvm_module_path "$m")" ] ||
			{ fail "$what" "no $m.ko for $stock_rel in $stock_root"; return 1; }
		margs+=(--expect "load/$(basename "$m").ko")
	done
}
# The devices statsfd_host's tests read, modules of the stock kernel
# loaded in the 6.1 guest on every run: brd, veth and dummy as the 6.12
# test kernel has them built in, and loop (not in the 6.12 test kernel),
# for a disk that accounts its I/O and can be removed.
dev_modules=(drivers/block/brd drivers/block/loop drivers/net/veth drivers/net/dummy)

# Boots one leg's guest; its run-guest exit status lands in $d/run-guest.rc.
run_leg() {
	local leg=$1 kernel=$2 moddir=$3 leg_kunit=$4 leg_selftests=$5 proofs=$6
	local kmemleak=$7 kvm=$8 smp=$9
	local d=$LOGDIR/$leg
	mkdir -p "$d"
	{
		echo "RUN_KUNIT=$leg_kunit"
		echo "RUN_SELFTESTS=$run_selftests"
		printf 'KUNIT_GLOB=%q\n' "$KUNIT"
		printf 'SELFTESTS=%q\n' "$(echo "$leg_selftests" | tr ',' ' ')"
		printf 'SELFTEST_ARGS=%q\n' "$SELFTEST_ARGS"
		printf 'HARNESS=%q\n' "$HARNESS"
		printf 'HARNESS_SELFTESTS=%q\n' "$HARNESS_SELFTESTS"
		echo "LOAD_MODULES=$LOAD_MODULES"
		echo "STRESS=$STRESS"
		echo "TEST_TIMEOUT=$TEST_TIMEOUT"
		printf 'KERNEL_PROOFS=%q\n' "$proofs"
		echo "KMEMLEAK=$kmemleak"
		[ "$kvm" = 1 ] && printf 'KVM_MODULES=%q\n' "$(printf '%s ' "${kvm_modules[@]##*/}")"
		[ "$leg" = 6.1 ] && printf 'DEV_MODULES=%q\n' "$(printf '%s ' "${dev_modules[@]##*/}")"
	} >"$d/check.conf"
	local extra=(--file "$d/check.conf:/etc/statsfd-check.conf")
	[ "$leg" = kcsan ] && extra+=(--append panic_on_warn=0)
	# Debian's 6.1 kernel preempts voluntarily by default
	# (PREEMPT_DYNAMIC): full preemption, as the 6.12 kernels are built
	# with, so that stats writers are preempted inside update windows on
	# this leg too.
	[ "$leg" = 6.1 ] && extra+=(--append preempt=full)
	if [ -n "$HARNESS_SELFTESTS" ] && [ "$HARNESS" != selftest-missing ]; then
		extra+=(--file "$BUILD/selftests-harness:/usr/libexec/statsfd-harness")
	fi
	local m t
	if [ "$leg" = 6.1 ]; then
		for m in "${dev_modules[@]}"; do
			extra+=(--kmods "$(kvm_module_path "$m")")
		done
	fi
	if [ "$kvm" = 1 ]; then
		# The stock kernel's own kvm modules, of the release it boots.
		for m in "${kvm_modules[@]}"; do
			extra+=(--kmods "$(kvm_module_path "$m")")
		done
		# kvm_hold keeps one idle VM through the KVM tests (see
		# tools/tests/kvm_hold.c); check-guest.sh starts it.
		extra+=(--bin "$BUILD/tools/guest-helpers/kvm_hold")
		extra+=(--bin /bin/bash:/bin/bash --bin "$(command -v jq)"
			--bin "$servers/promtool" --bin "$(command -v setpriv)")
		for t in "$BUILD"/tools/guest-tests/*; do
			extra+=(--bin "$t:/usr/libexec/statsfd-kvm/$(basename "$t")")
		done
		# The shell tests' library, in lib/: the guest runs every file
		# of that directory as a test, no directory.
		extra+=(--file "$T/lib/tap.sh:/usr/libexec/statsfd-kvm/lib/tap.sh")
	fi
	# The host tests: host_node_exporter_test.sh compares the collector's
	# --host exposition with Debian's node_exporter (the unpacked copy, in
	# the guest's /usr/bin).  host_tools_test.sh's promtool checks run
	# here, in summarize.py, on the text the guest sends: promtool (46 MB)
	# goes only into the guests of the KVM tests, which run it themselves.
	if [ -z "$leg_selftests" ] || [[ " ${leg_selftests//,/ } " == *" host_"*"_test"[.\ ]* ]]; then
		extra+=(--bin "$servers/prometheus-node-exporter")
	fi
	# dashboards_test.sh runs every query of the Grafana dashboards on a
	# Prometheus server (the unpacked copy) scraping the collector, and
	# reads the dashboards and the answers with jq.
	if [ -z "$leg_selftests" ] || [[ " ${leg_selftests//,/ } " == *" dashboards_test"[.\ ]* ]]; then
		extra+=(--bin "$servers/prometheus")
		[ "$kvm" = 1 ] || extra+=(--bin "$(command -v jq)")
	fi
	say "$leg guest started (console: $d/console.log, results: $d/results.txt)"
	# A shared hold on the modules' lock: a concurrent modules.sh (another
	# clone's make, a developer's rebuild) must not rewrite a .ko while
	# run-guest copies it.
	(
		flock -s 9
		"$T/qemu/run-guest" --kernel "$kernel" --modules-dir "$moddir" \
			--script "$T/qemu/check-guest.sh" --selftests "$BUILD/selftests" \
			--tools "$BUILD/tools/bin" \
			--results "$d/results.txt" --log "$d/console.log" --smp "$smp" \
			--busybox "$busybox" \
			--timeout "$GUEST_TIMEOUT" "${extra[@]}" 2>"$d/run-guest.err"
	) 9>"$moddir.lock"
	echo $? >"$d/run-guest.rc"
	cat "$d/run-guest.err" >&2
	say "$leg guest finished"
}

# The host tests, the legs' module builds and the guests overlap: the
# host tests start now, each guest as soon as its modules are built (so
# the 6.12 guest, the longest, boots while the 6.1 modules build).
# SERIAL=1: one thing at a time.
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
# Selftests that exercise only userspace against the modules, run on the
# 6.1 leg alone in a whole run: the debug kernel adds nothing to what they
# check, and they are the longest on it (dashboards_test.sh: every query of
# the Grafana dashboards on Prometheus, 170 s of the 6.12 guest's 700).
STOCK_LEG_ONLY="dashboards_test.sh"
# debug_leg_selftests: every selftest the build made, but STOCK_LEG_ONLY.
debug_leg_selftests() {
	local t names=()
	for t in "$BUILD"/selftests/*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		[[ " $STOCK_LEG_ONLY " == *" ${t##*/} "* ]] && continue
		names+=("${t##*/}")
	done
	echo "${names[*]}"
}
legs=()
for leg in $LEGS; do
	leg_kunit=$run_kunit leg_selftests=$SELFTESTS kvm=0 kmemleak=0
	case "$leg" in
	6.12)
		say "6.12 test kernel"
		if ! "$T/kernel.sh" debug "$TEST_KDIR" "$BUILD/logs"; then
			fail 6.12/build "test kernel build failed, see $BUILD/logs/kernel-build-debug.log"
			continue
		fi
		kdir=$TEST_KDIR
		kernel=$TEST_KDIR/arch/x86/boot/bzImage
		proofs="panic_on_warn kasan kmemleak lockdep hung_task softlockup hardened_usercopy fail_usercopy taint"
		kmemleak=1
		# A whole run leaves STOCK_LEG_ONLY to the 6.1 leg; a filter
		# naming one of them runs it here too.
		if [ -z "$leg_selftests$HARNESS" ] && [ "$run_selftests" = 1 ]; then
			leg_selftests=$(debug_leg_selftests)
		fi
		;;
	kcsan)
		say "6.12 KCSAN test kernel"
		if ! "$T/kernel.sh" kcsan "$KCSAN_KDIR" "$BUILD/logs"; then
			fail kcsan/build "KCSAN kernel build failed, see $BUILD/logs/kernel-build-kcsan.log"
			continue
		fi
		kdir=$KCSAN_KDIR
		kernel=$KCSAN_KDIR/arch/x86/boot/bzImage
		# KCSAN honours panic_on_warn: a race anywhere in the kernel
		# would kill the guest before ours could be told apart (and
		# before the rest could run).  Here WARNINGs are still caught
		# by the kernel-log scan, and races are sorted by summarize.py.
		proofs="kcsan hung_task softlockup taint"
		[ -n "$leg_selftests$HARNESS" ] || leg_selftests="vm_race_test vm_stats_test snapshot_test mmap_test host_net_race_test host_disk_test"
		;;
	6.1)
		if [ "$run_selftests" != 1 ]; then
			say "6.1 leg skipped: it has no KUnit and no selftest was selected"
			continue
		fi
		if [ -z "$STOCK_KDIR" ] || [ -z "$stock_root" ]; then
			fail 6.1/build "no stock 6.1 headers (linux-headers-amd64) or unpacked kernel (tools/testing/stock.sh)"
			continue
		fi
		kdir=$STOCK_KDIR
		kernel=$stock_root/boot/vmlinuz-$stock_rel
		leg_kunit=0
		proofs="panic_on_warn hung_task softlockup hardened_usercopy taint"
		# Whole runs get real KVM and its tests; filtered runs leave
		# them out (their programs are not selftests a filter can name).
		[ -z "$SELFTESTS$SELFTEST_ARGS$HARNESS" ] && kvm=1
		;;
	*)
		fail "$leg/build" "unknown leg (known: 6.12 6.1 kcsan)"
		continue
		;;
	esac
	say "$leg modules (KDIR=$kdir)"
	if ! moddir=$("$T/modules.sh" "$kdir" "$BUILD"); then
		fail "$leg/build" "module build failed, see $BUILD/logs/modules-*.log"
		continue
	fi

	# The exact results this leg owes (tools/testing/manifest.py).
	d=$LOGDIR/$leg
	mkdir -p "$d"
	margs=(--leg "$leg" --kernel-proofs "$proofs")
	[ "$LOAD_MODULES" = 1 ] && margs+=(--load-modules)
	[ "$kmemleak" = 1 ] && margs+=(--kmemleak)
	if [ "$leg_kunit" = 1 ]; then
		case "$HARNESS" in
		"") margs+=(--kunit-src "$root/tests/kunit" --kunit-glob "$KUNIT") ;;
		kunit | kunit-missing) margs+=(--kunit-src "$root/tools/testing/probe" --kunit-glob "$KUNIT") ;;
		esac
	fi
	if [ "$run_selftests" = 1 ]; then
		margs+=(--selftests-dir "$BUILD/selftests" --selftests "$leg_selftests"
			--selftest-args "$SELFTEST_ARGS")
	fi
	if [ -n "$HARNESS_SELFTESTS" ]; then
		margs+=(--selftests-dir "$BUILD/selftests-harness" --selftests "$HARNESS_SELFTESTS")
	fi
	case "$HARNESS" in
	warn | oob) margs+=(--expect load/statsfd_harness.ko) ;;
	leak | abba | race) margs+=(--expect load/statsfd_harness.ko --expect unload/statsfd_harness.ko) ;;
	esac
	if [ "$leg" = 6.1 ]; then
		expect_stock_loads 6.1/build "${dev_modules[@]}" || continue
	fi
	if [ "$kvm" = 1 ]; then
		expect_stock_loads 6.1/kvm "${kvm_modules[@]}" || continue
		margs+=(--tap-dir "$BUILD/tools/guest-tests")
	fi
	if ! python3 "$T/manifest.py" "${margs[@]}" >"$d/expected.txt" 2>"$d/manifest.err"; then
		fail "$leg/filter" "$(cat "$d/manifest.err")"
		cat "$d/manifest.err" >&2
		continue
	fi
	sumargs+=(--expected "$leg" "$d/expected.txt")
	legs+=("$leg|$kernel|$moddir|$leg_kunit|$leg_selftests|$proofs|$kmemleak|$kvm")
	if [ "${SERIAL:-0}" = 1 ]; then
		run_leg "$leg" "$kernel" "$moddir" "$leg_kunit" "$leg_selftests" "$proofs" "$kmemleak" "$kvm" 2
	else
		# Every guest gets 2 CPUs so race tests can race.
		run_leg "$leg" "$kernel" "$moddir" "$leg_kunit" "$leg_selftests" "$proofs" "$kmemleak" "$kvm" 2 &
		pids+=($!)
	fi
done
[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"

# Last, once everything this run started has ended: the host as it was.
# No unit of the server packages enabled, no listener of this run left.
if [ "$run_host_tests" = 1 ]; then
	say "host state"
	"$root/tools/tests/host_state_test.sh" "$STATSFD_CHECK_RUN" >"$LOGDIR/host-state.log" 2>&1
	echo $? >"$LOGDIR/host-state.rc"
fi

sumargs+=(--allow "$T/skips.txt")
if [ "$run_host_tests" = 1 ]; then
	sumargs+=(--tap host "$LOGDIR/host-tests.log" "$(cat "$LOGDIR/host-tests.rc" 2>/dev/null || echo 1)")
	sumargs+=(--tap host-state "$LOGDIR/host-state.log" "$(cat "$LOGDIR/host-state.rc")")
fi
for spec in "${legs[@]}"; do
	IFS='|' read -r leg rest <<<"$spec"
	d=$LOGDIR/$leg
	sumargs+=(--leg "$leg" "$d/results.txt" "$d/console.log" "$(cat "$d/run-guest.rc" 2>/dev/null || echo 1)")
done

say "done"
exec python3 "$T/summarize.py" "${sumargs[@]}"
