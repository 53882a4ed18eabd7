#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs every host-side test of the statsfd tools and merges their TAP into
# one stream: `make -C tools check` (usage: run.sh BUILD_DIR).
#
# Each test prints its own TAP; lines are renumbered here, prefixed by the
# test's name, and a plan plus a "N passed, N failed, N skipped" line close
# the stream.  Exit status 1 when any test failed or crashed.
set -u
# Called from make: O= and friends in MAKEFLAGS would leak into the kernel
# build that dkms starts (O= would redirect it to the tools' build dir).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

out=${1:?usage: run.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
san=$out/san
export STATSFD_BIN=$san/bin
# The daemon drops privileges and sets PR_SET_DUMPABLE=0, which defeats
# LeakSanitizer's stop-the-world; leaks are covered by the library tests.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
n=0 pass=0 fail=0 skip=0

# Prometheus, promtool and node_exporter: the copies tools/testing/servers.sh
# unpacks into the cache, first in PATH, never the host's (deps.sh installs
# no server).  Without them the tests that need them fail.
if srv=$("$here/../testing/servers.sh" "${KCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statsfd}"); then
	export PATH=$srv:$PATH
	echo "# servers: $srv"
else
	n=$((n + 1)) fail=$((fail + 1))
	echo "not ok $n - servers: tools/testing/servers.sh could not unpack prometheus and node_exporter"
fi

run() {
	local name=$1 rc line
	shift
	local log
	log=$(mktemp)
	echo "# $name: $*"
	t0=$SECONDS
	timeout 600 "$@" >"$log" 2>"$log.err"
	rc=$?
	# Ranked with the guests' times by tools/testing/summarize.py.
	echo "# statsfd-time $name $((SECONDS - t0))"
	while IFS= read -r line; do
		case "$line" in
		"ok "*"# SKIP"*)
			n=$((n + 1)) skip=$((skip + 1))
			echo "ok $n - $name: ${line#ok * - }" ;;
		"ok "*)
			n=$((n + 1)) pass=$((pass + 1))
			echo "ok $n - $name: ${line#ok * - }" ;;
		"not ok "*)
			n=$((n + 1)) fail=$((fail + 1))
			echo "not ok $n - $name: ${line#not ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$log"
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$log"; then
		# A crash or sanitizer report with no failing line: count it.
		n=$((n + 1)) fail=$((fail + 1))
		echo "not ok $n - $name: exited with status $rc"
	fi
	if [ "$rc" -ne 0 ]; then
		sed 's/^/#   stderr: /' "$log.err" | tail -n 40
	fi
	rm -f "$log" "$log.err"
}

run lib_test "$san/tests/lib_test"
run prom_test "$san/tests/prom_test"
run host_test env ASAN_OPTIONS=detect_leaks=0 "$san/tests/host_test" "$san/bin/statsfd" \
	"$san/bin/statsfd-collector"
run host_collector_test "$here/host_collector_test.sh" "$out"
run lib_view_test "$san/tests/lib_view_test"
run cli_events_test "$san/tests/cli_events_test"
run collector_events_test "$san/tests/collector_events_test"
run collector_sources_test "$san/tests/collector_sources_test"
run collector_clients_test "$san/tests/collector_clients_test"
run collector_index_test "$san/tests/collector_index_test"
run discover_test "$san/tests/discover_test"
run remote_test "$san/tests/remote_test"
run discover_daemon_test "$here/discover_daemon_test.sh" "$out"
# Random images: 30000 with STRESS=1 (CI), 5000 otherwise so a warm
# make check stays quick (same fixed seed, fewer rounds).
fuzz_rounds=5000
[ "${STRESS:-0}" = 1 ] && fuzz_rounds=30000
run fuzz_test "$san/tests/fuzz_test" "$fuzz_rounds"
run abi_test "$san/tests/abi_test"
run collector_test env ASAN_OPTIONS=detect_leaks=0 "$san/tests/collector_test" \
	"$san/bin/statsfd-collector"
run collector_hostile_test env ASAN_OPTIONS=detect_leaks=0 \
	"$san/tests/collector_hostile_test" "$san/bin/statsfd-collector"
# Attacks on the HTTP side by local users: memory, time, slots.
run collector_siege_test env ASAN_OPTIONS=detect_leaks=0 \
	"$san/tests/collector_siege_test" "$san/bin/statsfd-collector"
# One big host: B13's fleet under the default limits, 64 clients of 64
# uids registering 1024 sources each.
run collector_scale_test env ASAN_OPTIONS=detect_leaks=0 \
	"$san/tests/collector_scale_test" "$san/bin/statsfd-collector"
# systemd's side of the protocol played by the test: no systemd needed.
run sd_test env ASAN_OPTIONS=detect_leaks=0 "$san/tests/sd_test" \
	"$san/bin/statsfd-collector"
# Leak-checked: the library's client (the collector it starts is not).
run client_test "$san/tests/client_test" "$san/bin/statsfd-collector"
run cli_test "$here/cli_test.sh" "$out"
run libso_test "$here/libso_test.sh" "$out"
run systemd_test "$here/systemd_test.sh" "$out"
run man_test "$here/man_test.sh" "$out"
run prometheus_test "$here/prometheus_test.sh" "$out"
run prometheus_hostile_test "$here/prometheus_hostile_test.sh" "$out"
run webconfig_test "$san/tests/webconfig_test"
run http_test "$here/http_test.sh" "$out"
# kvm_test, pid_test.sh and discover_kvm_test.sh need real KVM: they run in make check's 6.1
# guest with the stock kvm modules (build/tools/guest-tests), on every
# machine, instead of skipping wherever the host has no usable /dev/kvm.
run deps_test "$here/deps_test.sh"
run harness_test python3 "$here/harness_test.py"
run dkms_test "$here/dkms_test.sh"
run kapi_build_test "$here/kapi_build_test.sh"

echo "1..$n"
echo "tools: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
