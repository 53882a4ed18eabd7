#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-harness.sh - `make check-harness`: prove every way `make check`
# goes red.
#
# Boots the 6.12 debug guest once per probe, each with one deliberate
# problem and nothing else (our product modules are not loaded, so their
# state cannot mask or fake the outcome):
#   kunit             statsfd_harness.ko fail_kunit=1: a failing KUnit case
#   kunit-missing     the manifest expects statsfd_harness's suite; the
#                     guest never loads it (a dropped module or suite)
#   selftest          tools/testing/probe/harness_fail_test: a failing kselftest
#   selftest-crash    harness_crash_test: a test killed by SIGSEGV
#   selftest-hang     harness_hang_test: a test that never returns, killed
#                     by the per-program timeout (TEST_TIMEOUT=20)
#   selftest-missing  harness_fail_test expected but absent from the guest
#   warn              statsfd_harness.ko warn=1: a WARNING (panic_on_warn)
#   kasan             oob=1: a slab out-of-bounds read (KASAN, then panic)
#   kmemleak          leak=1: an allocation whose last pointer is lost
#   lockdep           abba=1: an AB-BA lock order inversion
#   kcsan             race=1 on the KCSAN kernel (the make check-kcsan leg):
#                     a plain counter raced by two threads
# Each run must exit non-zero AND fail exactly the expected results, for
# the expected reason; the proof passes only when every probe did.
# PROBES="name ..." runs a subset.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath -m "${BUILD:-$root/build}")
export BUILD
base=$BUILD/logs/harness
mkdir -p "$base"

# A probe that kills the guest loses every result still to come; those are
# reported as missing, which is part of going red for that reason.
missing='^FAIL 6\.12/\S+ \(expected result missing'
dead='^FAIL 6\.12/guest \(end-of-run marker missing'

# probe name | check.sh environment | extended regexps, ";"-separated: every
# one must match some FAIL line, and every FAIL line must match one of them.
probes=(
	"kunit|HARNESS=kunit RUN_KUNIT=1 RUN_SELFTESTS=0 KUNIT=statsfd_harness|^FAIL 6\.12/kunit/statsfd_harness/statsfd_harness_deliberate_failure\$"
	"kunit-missing|HARNESS=kunit-missing RUN_KUNIT=1 RUN_SELFTESTS=0 KUNIT=statsfd_harness|^FAIL 6\.12/kunit/statsfd_harness/statsfd_harness_deliberate_failure \(expected result missing;^FAIL 6\.12/load/statsfd_harness\.ko \(expected result missing;^FAIL 6\.12/unload/statsfd_harness\.ko \(expected result missing"
	"selftest|HARNESS=selftest HARNESS_SELFTESTS=harness_fail_test RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/selftest/harness_fail_test/global\.deliberate_failure\$"
	"selftest-crash|HARNESS=selftest-crash HARNESS_SELFTESTS=harness_crash_test RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/selftest/harness_crash_test/global\.null_dereference\$"
	"selftest-hang|HARNESS=selftest-hang HARNESS_SELFTESTS=harness_hang_test TEST_TIMEOUT=20 RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/selftest/harness_hang_test \(.*timed out\);^FAIL 6\.12/selftest/harness_hang_test/global\.hang_forever \(expected result missing"
	"selftest-missing|HARNESS=selftest-missing HARNESS_SELFTESTS=harness_fail_test RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/selftest/harness_fail_test/global\.deliberate_failure \(expected result missing"
	"warn|HARNESS=warn RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/kernel-log .*WARNING:.*statsfd_harness;$dead;$missing"
	"kasan|HARNESS=oob RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/kernel-log .*KASAN: slab-out-of-bounds;$dead;$missing"
	"kmemleak|HARNESS=leak RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/kmemleak \(unreferenced objects"
	"lockdep|HARNESS=abba RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/kernel-log .*possible circular locking dependency;^FAIL 6\.12/kernel/lockdep \(debug_locks is not 1"
	"kcsan|LEGS=kcsan HARNESS=race RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL kcsan/kcsan \(data race in statsfd code: BUG: KCSAN: data-race in statsfd_harness_race"
)

passed=0
failed=0
for p in "${probes[@]}"; do
	IFS='|' read -r name envs expect <<<"$p"
	if [ -n "${PROBES:-}" ] && ! [[ " $PROBES " == *" $name "* ]]; then
		continue
	fi
	out=$base/$name.out
	echo "==> harness probe '$name' (log: $out)" >&2
	# shellcheck disable=SC2086 # envs is a list of VAR=value words
	env KUNIT= SELFTESTS= SELFTEST_ARGS= LEGS=6.12 $envs HOST_TESTS=0 LOAD_MODULES=0 \
		LOGDIR="$base/$name" "$root/tools/testing/check.sh" >"$out" 2>&1
	rc=$?
	fails=$(grep '^FAIL ' "$out" | sed 's/  (/ (/')
	why=
	if [ "$rc" -eq 0 ]; then
		why="make check passed (exit 0) with the deliberate problem in place"
	fi
	IFS=';' read -ra want <<<"$expect"
	for re in "${want[@]}"; do
		[ "$re" = "$missing" ] && continue # optional: depends on when it died
		echo "$fails" | grep -qE "$re" || why+="${why:+; }no FAIL line matching /$re/"
	done
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		ok=0
		for re in "${want[@]}"; do
			echo "$line" | grep -qE "$re" && ok=1
		done
		[ "$ok" = 1 ] || why+="${why:+; }unexpected failure: $line"
	done <<<"$fails"
	if ! tail -n 1 "$out" | grep -qE '^[0-9]+ passed, [1-9][0-9]* failed'; then
		why+="${why:+; }last line is not a failing 'N passed, N failed' summary"
	fi
	if [ -z "$why" ]; then
		echo "PASS harness/$name (went red as expected: $(echo "$fails" | head -n 1))"
		passed=$((passed + 1))
	else
		echo "FAIL harness/$name ($why)"
		failed=$((failed + 1))
	fi
done

if [ $((passed + failed)) -eq 0 ]; then
	echo "FAIL harness (PROBES='${PROBES:-}' selects no probe)"
	failed=1
fi
[ "$failed" -eq 0 ] || echo "FAILED: probe outputs are in $base/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
