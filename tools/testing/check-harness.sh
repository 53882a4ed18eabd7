#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-harness.sh - `make check-harness`: prove `make check` can fail.
#
# Boots the 6.12 debug guest three times, each with one deliberate problem
# and nothing else (our product modules are not loaded, so their state
# cannot mask or fake the outcome):
#   kunit     statsfd_harness.ko fail_kunit=1: a failing KUnit case
#   selftest  tests/harness/harness_fail_test: a failing kselftest
#   warn      statsfd_harness.ko warn=1: a kernel WARNING (panic_on_warn)
# Each run must exit non-zero AND fail exactly the expected tests; the
# proof passes only when all three went red for the right reason.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath -m "${BUILD:-$root/build}")
export BUILD
base=$BUILD/logs/harness
mkdir -p "$base"

# probe name | check.sh environment | extended regexps the FAIL lines must
# match, all of them and nothing else ("|"-separated would clash, so ";").
probes=(
	"kunit|HARNESS=kunit RUN_KUNIT=1 RUN_SELFTESTS=0 KUNIT=statsfd_harness|^FAIL 6\.12/kunit/statsfd_harness/statsfd_harness_deliberate_failure\$"
	"selftest|HARNESS=selftest RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/selftest/harness_fail_test/global\.deliberate_failure\$"
	"warn|HARNESS=warn RUN_KUNIT=0 RUN_SELFTESTS=0|^FAIL 6\.12/kernel-log .*WARNING:.*statsfd_harness;^FAIL 6\.12/guest .*end-of-run marker missing"
)

passed=0
failed=0
for p in "${probes[@]}"; do
	IFS='|' read -r name envs expect <<<"$p"
	out=$base/$name.out
	echo "==> harness probe '$name' (log: $out)" >&2
	# shellcheck disable=SC2086 # envs is a list of VAR=value words
	env $envs LEGS=6.12 HOST_TESTS=0 LOAD_MODULES=0 KUNIT="${KUNIT:-}" \
		LOGDIR="$base/$name" "$root/tools/testing/check.sh" >"$out" 2>&1
	rc=$?
	fails=$(grep '^FAIL ' "$out" | sed 's/  (/ (/')
	why=
	if [ "$rc" -eq 0 ]; then
		why="make check passed (exit 0) with the deliberate problem in place"
	fi
	IFS=';' read -ra want <<<"$expect"
	for re in "${want[@]}"; do
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

[ "$failed" -eq 0 ] || echo "FAILED: probe outputs are in $base/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
