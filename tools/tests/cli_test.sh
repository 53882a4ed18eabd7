#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of the statsfd CLI on synthetic images: show (table, --json,
# --prometheus checked by promtool), --name, --stats (files have no views:
# filtered here, with a note), dump, watch --count, list,
# --fd, --socket (a VMM-side sender registers fds), and the --pid error
# paths (no VM fds, no such process, ptrace permission refused).
# Usage: cli_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
. "$(dirname "$0")/scratch.sh"
out=${1:?usage: cli_test.sh BUILD_DIR}
bin=${STATSFD_BIN:-$out/san/bin}/statsfd
mkimage=$out/san/tests/mkimage
feeder=$out/san/tests/collector_test
scratch_tmp cli-test 700

"$mkimage" vm-1-0/vcpu-0 >"$tmp/v0.img"
"$mkimage" vm-1-0/vcpu-1 kvm >"$tmp/v1.img"

"$bin" show --file "$tmp/v0.img" >"$tmp/show.txt" 2>&1
check "show: table with unit-scaled values" \
	grep -Eq '^  io_bytes +cumulative +6 B$' "$tmp/show.txt"
check "show: seconds scaled, booleans named" \
	bash -c "grep -Eq '^  max_halt_ns +peak +4 ns$' '$tmp/show.txt' && grep -Eq '^  blocking +instant +true$' '$tmp/show.txt'"
check "show: histograms as bucket ranges" \
	grep -Eq '^ +\[1\.024 us, 2\.048 us\) +19$' "$tmp/show.txt"
check "show: aggregates marked" grep -q 'io_exits_sum .*(sum over children)' "$tmp/show.txt"

"$bin" show --json --file "$tmp/v0.img" --file "$tmp/v1.img" >"$tmp/show.json"
check "show --json: valid JSON, both sources, raw and base-unit values" \
	bash -c "jq -en 'input | length == 2 and (.[1].stats[] | select(.name == \"max_halt_ns\") | .value == 4 and .\"value-in-base-unit\" == 4e-09)' '$tmp/show.json' >/dev/null"
check "show --json: histogram buckets with bounds in base units" \
	bash -c "jq -en 'input | .[0].stats[] | select(.name == \"halt_wait_hist_ns\") | (.buckets | length == 32) and .buckets[1].lower == 1e-09 and .buckets[31].upper == null' '$tmp/show.json' >/dev/null"

"$bin" show --prometheus --file "$tmp/v0.img" --file "$tmp/v1.img" >"$tmp/prom.txt"
check "show --prometheus passes promtool check metrics" \
	bash -c "promtool check metrics <'$tmp/prom.txt' >/dev/null 2>&1"
check "show --prometheus: ns counter converted to seconds" \
	grep -q '^statsfd_halt_wait_seconds_total{provider="statsfd_vm",target="vcpu",id="vm-1-0/vcpu-1",vm="vm-1-0",vcpu="1"} 5e-09$' "$tmp/prom.txt"

"$bin" show --name 'halt_*' --file "$tmp/v0.img" >"$tmp/name.txt"
check "--name filters stats" \
	bash -c "grep -q halt_exits '$tmp/name.txt' && ! grep -q io_exits '$tmp/name.txt'"

"$bin" dump --file "$tmp/v1.img" --output "$tmp/dump.img"
check "dump reproduces the image byte for byte" cmp -s "$tmp/v1.img" "$tmp/dump.img"

start=$SECONDS
timeout 20 "$bin" watch --count 3 --interval 0.2 --all --file "$tmp/v0.img" \
	--file "$tmp/v1.img" >"$tmp/watch.txt"
rc=$?
check "watch --count 3 terminates by itself (rc $rc, $((SECONDS - start)) s)" \
	test "$rc" -eq 0 -a "$(grep -c '^statsfd watch:' "$tmp/watch.txt")" -eq 3
check "watch: sources sharing a schema become columns with a total" \
	grep -Eq '^  stat +vm-1-0/0 +vm-1-0/1 +total$' "$tmp/watch.txt"

# A source with update windows: sample_ns and generation end its data.
"$mkimage" vm-1-0/vcpu-2 snap 1000000000 >"$tmp/snap1.img"
"$bin" show --file "$tmp/snap1.img" >"$tmp/snap.txt"
check "show: sample_ns and generation are stats, with what they mean" \
	bash -c "grep -Eq '^  sample_ns +instant +1 s  \(CLOCK_BOOTTIME of this snapshot\)$' '$tmp/snap.txt' && grep -Eq '^  generation +cumulative +50  \(update windows so far\)$' '$tmp/snap.txt'"
# watch: between its two reads the "source" moves 0.1 s of sample_ns and
# 100 halt exits, 1.5 s into a 3 s interval: 1000/s over sample_ns, where
# the wall clock would say 33/s.
cp "$tmp/snap1.img" "$tmp/live.img"
"$mkimage" vm-1-0/vcpu-2 snap 1100000000 101 >"$tmp/snap2.img"
timeout 20 "$bin" watch --count 1 --interval 3 --all --file "$tmp/live.img" \
	>"$tmp/watch-snap.txt" &
w=$!
pids+=($w)
sleep 1.5
cat "$tmp/snap2.img" >"$tmp/live.img"
wait "$w"
check "watch: rates over the sources' sample_ns, not the wall clock" \
	grep -Eq '^  halt_exits +1k/s$' "$tmp/watch-snap.txt"
check "watch: sample_ns is the time base, not a row; generation is a rate" \
	bash -c "! grep -q sample_ns '$tmp/watch-snap.txt' && grep -Eq '^  generation +[0-9.]+k/s$' '$tmp/watch-snap.txt'"

# --stats: a file has no views (STATSFD_IOC_VIEW is ENOTTY): read whole and
# filtered, with one note for all the sources.
"$bin" show --file "$tmp/v0.img" --file "$tmp/v1.img" --stats blocking,io_exits \
	>"$tmp/stats.txt" 2>"$tmp/stats.err"
check "--stats: only the stats named, in that order" \
	bash -c "[ \"\$(grep -Ec '^  (blocking|io_exits) ' '$tmp/stats.txt')\" = 4 ] && ! grep -q halt_exits '$tmp/stats.txt' && grep -A2 '^  NAME' '$tmp/stats.txt' | sed -n 2p | grep -q '^  blocking '"
check "--stats on files: one note that they have no views" \
	bash -c "[ \"\$(wc -l <'$tmp/stats.err')\" = 1 ] && grep -q '2 of 2 sources have no views' '$tmp/stats.err'"
"$bin" list --file "$tmp/v0.img" --stats io_exits,nope >"$tmp/stats-list.txt" 2>"$tmp/stats-list.err"
check "--stats: list says filtered (no views); a name no source has is named" \
	bash -c "grep -q '^vm-1-0/vcpu-0 .* 1 stats, 8 data bytes, filtered (no views); ' '$tmp/stats-list.txt' && grep -q 'no source has a stat named nope' '$tmp/stats-list.err'"
"$bin" show --prometheus --file "$tmp/v0.img" --stats halt_exits 2>/dev/null >"$tmp/stats-prom.txt"
check "--stats with --prometheus: only that family" \
	bash -c "grep -q '^statsfd_halt_exits_total' '$tmp/stats-prom.txt' && [ \"\$(grep -c '^# TYPE' '$tmp/stats-prom.txt')\" = 1 ]"
"$bin" dump --file "$tmp/v1.img" --stats io_exits --output "$tmp/stats-dump.img"
check "--stats does not change dump" cmp -s "$tmp/v1.img" "$tmp/stats-dump.img"
timeout 20 "$bin" watch --count 1 --interval 0.2 --all --file "$tmp/v0.img" \
	--stats halt_exits,guest_cycles >"$tmp/stats-watch.txt" 2>/dev/null
check "watch --stats: rows of those stats only" \
	bash -c "[ \"\$(grep -Ec '^  [a-z_]+ +[0-9]' '$tmp/stats-watch.txt')\" = 2 ] && grep -q '^  guest_cycles ' '$tmp/stats-watch.txt'"

"$bin" list --file "$tmp/v0.img" >"$tmp/list.txt"
check "list (a file is never mapped)" \
	bash -c "grep -q '^vm-1-0/vcpu-0 .* 11 stats, 392 data bytes; ' '$tmp/list.txt' && ! grep -q mapped '$tmp/list.txt'"

"$bin" show --fd 7 7<"$tmp/v0.img" >"$tmp/fd.txt" 2>&1
check "--fd reads an inherited fd" grep -q 'from fd 7' "$tmp/fd.txt"

head -c 100 "$tmp/v0.img" >"$tmp/trunc.img"
"$bin" show --file "$tmp/trunc.img" >/dev/null 2>"$tmp/err.txt"
rc=$?
check "truncated image: exit 1 and an error naming the block" \
	bash -c "[ $rc -eq 1 ] && grep -q 'not a valid stats fd: .*short read' '$tmp/err.txt'"

"$bin" show >/dev/null 2>&1
check "no source: usage error (exit 2)" test $? -eq 2

# --socket: the CLI listens, a VMM-side sender registers VM "web".
"$bin" list --socket "$tmp/cli.sock" --timeout 10 >"$tmp/sock.txt" 2>"$tmp/sock.err" &
cli=$!
pids+=($cli)
for _ in $(seq 100); do [ -S "$tmp/cli.sock" ] && break; sleep 0.05; done
timeout 10 "$feeder" --feed "$tmp/cli.sock" --seconds 1 >"$tmp/feed.txt" 2>&1
frc=$?
wait "$cli"
check "--socket: receives the stats fds and labels a VMM sends (feeder rc $frc)" \
	bash -c "[ \$(grep -c 'provider statsfd_vm' '$tmp/sock.txt') -eq 3 ] && grep -q 'target vcpu, vm web, vcpu 1' '$tmp/sock.txt'"

sleep 60 &
sl=$!
pids+=($sl)
"$bin" show --pid $sl >/dev/null 2>"$tmp/pid.err"
rc=$?
check "--pid on a process without VM fds: clear message" \
	bash -c "[ $rc -eq 1 ] && grep -q 'no KVM or statsfd VM/vCPU fds found' '$tmp/pid.err'"
"$bin" show --pid 999999999 >/dev/null 2>"$tmp/pid2.err"
check "--pid of no process: clear message" grep -q 'no such process\|not a process id' "$tmp/pid2.err"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$bin" show --pid $sl >/dev/null 2>"$tmp/perm.err"
	check "--pid without ptrace permission: says so" \
		grep -q 'needs ptrace permission' "$tmp/perm.err"
else
	ok "--pid permission refused # SKIP needs root and setpriv"
fi
finish
