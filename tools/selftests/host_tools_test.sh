#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The host's stats (statsfd_host.ko) through the tools, in the guest:
# `statsfd show --host` and `statsfd watch --host` (their pages name every
# online CPU, interface and whole disk; watch's CPU shares add up to 100%),
# and `statsfd-collector --host` running as uid nobody: its scrape passes
# `promtool check metrics` (but for node_exporter's own camelCase meminfo
# names; run on make check's host, see promtool_on_host below), has one
# series per CPU, interface and disk, and its values match the kernel's
# text read just before and just after (/proc/stat, /proc/meminfo,
# /proc/vmstat, /sys/class/net/*/statistics, /sys/block/*/stat).  Where
# the kernel can make a dummy interface (the 6.12 test kernel; Debian's
# 6.1 has it as a module, which the guest does not load), one added is
# exported by the next rescan and one deleted is dropped on its stats
# fd's hangup.  Runs under busybox sh; prints TAP with its plan last and
# exits 1 if any test is not ok.  The guest loads statsfd_host.ko, so a
# missing device or tool is a failure, never a skip.  A process costs up
# to a second in a loaded debug guest: checks over every CPU mode,
# interface or disk run one awk for all of them, and the texts around
# the scrape are copied with shell builtins.
tmp=/tmp/host-tools
cpid=

. "$(dirname "$0")/lib/tap.sh"
cleanup() {
	stop_pids $cpid
	ip link del hostu0 2>/dev/null
	rm -rf "$tmp"
}
on_exit cleanup
scrape() { wget -q -O "$1" "http://127.0.0.1:$port/metrics"; }
# value NAME{LABELS} FILE: the sample's value text, empty when absent.
value() { awk -v k="$1" 'index($0, k " ") == 1 { print $2 }' "$2"; }
# rows_missing FILE NAME...: the NAMEs with no "  NAME " row in FILE.
rows_missing() {
	f=$1
	shift
	awk -v names="$*" 'BEGIN { n = split(names, w, " ") }
	{ for (i = 1; i <= n; i++) if (index($0, "  " w[i] " ") == 1) seen[w[i]] = 1 }
	END { for (i = 1; i <= n; i++) if (!(w[i] in seen)) printf " %s", w[i] }' "$f"
}
# samples_missing FILE FAMILY NAME...: the NAMEs with no FAMILY{device="NAME"}
# sample in FILE.
samples_missing() {
	f=$1 fam=$2
	shift 2
	awk -v fam="$fam" -v names="$*" 'BEGIN { n = split(names, w, " ") }
	{ for (i = 1; i <= n; i++) if ($1 == fam "{device=\"" w[i] "\"}") seen[w[i]] = 1 }
	END { for (i = 1; i <= n; i++) if (!(w[i] in seen)) printf " %s", w[i] }' "$f"
}
# out_of_bounds SPEC FILE: SPEC has lines "SAMPLE LOW HIGH SCALE"; prints
# " SAMPLE(LOW<=VALUE*SCALE<=HIGH)" for each sample of FILE (a scrape)
# that is missing or whose value times SCALE (to 3 decimals) is not
# within LOW..HIGH, numerically.
out_of_bounds() {
	awk 'FNR == NR { lo[$1] = $2; hi[$1] = $3; sc[$1] = $4; k[++n] = $1; next }
	($1 in lo) { v[$1] = $2 }
	END {
		for (i = 1; i <= n; i++) {
			x = k[i]
			s = (x in v) && v[x] != "" ? sprintf("%.3f", v[x] * sc[x]) : ""
			if (s == "" || s + 0 < lo[x] + 0 || s + 0 > hi[x] + 0)
				printf " %s(%s<=%s<=%s)", x, lo[x], s, hi[x]
		}
	}' "$1" "$2"
}
# promtool_on_host DESCRIPTION FILE: the exposition goes to make check's
# host, whose tools/testing/summarize.py runs `promtool check metrics` on
# it (accepting only its camelCase complaint about node_exporter's own
# meminfo names, node_memory_MemTotal_bytes...) and reports the result as
# this test's DESCRIPTION: one promtool run took a minute of the loaded
# debug guest, and the text is what is checked, wherever it is.
promtool_on_host() {
	echo "# statsfd-promtool-begin $1"
	sed 's/^/#| /' "$2"
	echo "# statsfd-promtool-end"
}

require "host tools" /dev/statsfd_host statsfd statsfd-collector
scratch_dir "$tmp"

# What the kernel's text says there is.
ncpus=$(awk '/^cpu[0-9]/ { n++ } END { print n + 0 }' /proc/stat)
ifaces=$(ls /sys/class/net)
disks=$(ls /sys/block)
echo "# $ncpus CPUs online; interfaces:" $ifaces "; disks:" $disks

# ---- statsfd show --host / watch --host ---------------------------------
statsfd show --host >"$tmp/show.txt" 2>"$tmp/show.err"
check "show --host exits 0" test $? -eq 0
check "show --host: $ncpus CPUs online, a row for each and for all" \
	sh -c "grep -q '^host: $ncpus CPUs\\{0,1\\} online' '$tmp/show.txt' && grep -q '^  all ' '$tmp/show.txt' && [ \$(grep -c '^  [0-9][0-9]* ' '$tmp/show.txt') -ge $ncpus ]"
check "show --host: memory from the node" grep -q '^  total [0-9.]* [KMG]iB, free ' "$tmp/show.txt"
bad=$(rows_missing "$tmp/show.txt" $ifaces)
check "show --host: every interface (${bad:-all there})" test -z "$bad"
bad=$(rows_missing "$tmp/show.txt" $disks)
check "show --host: every whole disk (${bad:-all there})" test -z "$bad"
sed 's/^/# /' "$tmp/show.txt" | head -n 30

timeout 60 statsfd watch --host --count 2 --interval 0.5 >"$tmp/watch.txt" 2>"$tmp/watch.err"
check "watch --host: 2 refreshes with CPU in %" \
	sh -c "[ \$(grep -c '^statsfd watch:' '$tmp/watch.txt') -eq 2 ] && [ \$(grep -c '^CPU %' '$tmp/watch.txt') -eq 2 ]"
# The 8 modes of the all row (guest time is inside user) add up to 100%.
check "watch --host: the all row's modes add up to 100%" \
	sh -c "awk '/^  all / { s = \$2 + \$3 + \$4 + \$5 + \$6 + \$7 + \$8 + \$9; n++; if (s < 99 || s > 101) bad++ } END { exit !(n == 2 && !bad) }' '$tmp/watch.txt'"
check "watch --host: interfaces and disks per second" \
	sh -c "grep -q '^Interface/s ' '$tmp/watch.txt' && { [ -z '$disks' ] || grep -q '^Disk/s ' '$tmp/watch.txt'; }"

statsfd show --host --prometheus >"$tmp/cli-prom.txt" 2>/dev/null
promtool_on_host "show --host --prometheus passes promtool" "$tmp/cli-prom.txt"

# ---- statsfd-collector --host -------------------------------------------
collector_start "$tmp" 100 "collector --host starts" \
	--host --interval 200 --discover-interval 500
ok "collector --host listening on 127.0.0.1:$port"
check "collector runs as uid nobody (65534)" \
	grep -q '^Uid:[[:space:]]*65534' /proc/$cpid/status

# The text before, a read tick, the scrape, the text after: every counter
# of the scrape lies between the two.  texts SUFFIX: /proc/stat and
# /proc/vmstat, and one line per interface ("NAME rx_bytes") and per disk
# ("NAME" and its /sys/block/NAME/stat fields).
texts() {
	cat /proc/stat >"$tmp/stat.$1"
	cat /proc/vmstat >"$tmp/vmstat.$1"
	for i in $ifaces; do
		read -r l <"/sys/class/net/$i/statistics/rx_bytes"
		echo "$i $l"
	done >"$tmp/rx.$1"
	for d in $disks; do
		read -r l <"/sys/block/$d/stat"
		echo "$d $l"
	done >"$tmp/disk.$1"
}
texts a
sleep 0.6
scrape "$tmp/m"
texts b

promtool_on_host "scrape passes promtool check metrics" "$tmp/m"
check "one node_cpu_seconds_total{mode=\"idle\"} per online CPU ($ncpus)" \
	test "$(grep -c '^node_cpu_seconds_total{cpu="[0-9]*",mode="idle"} ' "$tmp/m")" -eq "$ncpus"
bad=$(samples_missing "$tmp/m" node_network_receive_bytes_total $ifaces)
check "node_network_receive_bytes_total for every interface (${bad:-all there})" test -z "$bad"
bad=$(samples_missing "$tmp/m" node_disk_reads_completed_total $disks)
check "node_disk_reads_completed_total for every whole disk (${bad:-all there})" test -z "$bad"

memtotal=$(awk '/^MemTotal:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
check "node_memory_MemTotal_bytes is MemTotal of /proc/meminfo in bytes ($memtotal)" \
	test "$(value node_memory_MemTotal_bytes "$tmp/m")" = "$memtotal"
btime=$(awk '/^btime / { print $2 }' /proc/stat)
check "node_boot_time_seconds is btime of /proc/stat ($btime)" \
	test "$(awk -v v="$(value node_boot_time_seconds "$tmp/m")" 'BEGIN { printf "%d", v }')" = "$btime"
# between LOW HIGH VALUE: LOW <= VALUE <= HIGH, numerically.
between() { awk -v a="$1" -v b="$2" -v v="$3" 'BEGIN { exit !(v != "" && a + 0 <= v + 0 && v + 0 <= b + 0) }'; }
a=$(awk '/^pgfault / { print $2 }' "$tmp/vmstat.a")
b=$(awk '/^pgfault / { print $2 }' "$tmp/vmstat.b")
v=$(value node_vmstat_pgfault "$tmp/m")
check "node_vmstat_pgfault ($v) between /proc/vmstat's pgfault before and after ($a, $b)" between "$a" "$b" "$v"
# CPU times: /proc/stat shows USER_HZ ticks, the scrape seconds; a tick
# is 0.01 s, so ticks before <= seconds * 100 < ticks after + 1.
# Columns 2-9 of cpu0 are user nice system idle iowait irq softirq steal,
# column 10 guest.
awk -v g="$tmp/guest.spec" 'FNR == 1 { f++ }
/^cpu0 / { for (c = 2; c <= 10; c++) if (f == 1) lo[c] = $c; else hi[c] = sprintf("%.0f", $c + 1) }
END {
	split("user nice system idle iowait irq softirq steal", mode, " ")
	for (c = 2; c <= 9; c++)
		printf "node_cpu_seconds_total{cpu=\"0\",mode=\"%s\"} %s %s 100\n", mode[c - 1], lo[c], hi[c]
	printf "node_cpu_guest_seconds_total{cpu=\"0\",mode=\"user\"} %s %s 100\n", lo[10], hi[10] >g
}' "$tmp/stat.a" "$tmp/stat.b" >"$tmp/cpu.spec"
bad=$(out_of_bounds "$tmp/cpu.spec" "$tmp/m")
check "node_cpu_seconds_total of CPU 0, each mode between /proc/stat before and after${bad:+:$bad}" \
	test -z "$bad"
check "node_cpu_guest_seconds_total of CPU 0 (user) between guest before and after" \
	test -z "$(out_of_bounds "$tmp/guest.spec" "$tmp/m")"
awk 'FNR == NR { lo[$1] = $2; next }
{ printf "node_network_receive_bytes_total{device=\"%s\"} %s %s 1\n", $1, lo[$1], $2 }' \
	"$tmp/rx.a" "$tmp/rx.b" >"$tmp/rx.spec"
bad=$(out_of_bounds "$tmp/rx.spec" "$tmp/m")
check "node_network_receive_bytes_total between statistics/rx_bytes before and after${bad:+ (not:$bad)}" \
	test -z "$bad"
# /sys/block/D/stat (after the name here): reads, -, sectors read, ms
# reading, writes, -, sectors written, ...
awk 'FNR == NR { for (c = 2; c <= NF; c++) lo[$1, c] = $c; next }
{
	n = split("2 node_disk_reads_completed_total 1 6 node_disk_writes_completed_total 1 4 node_disk_read_bytes_total 512 8 node_disk_written_bytes_total 512", f, " ")
	for (i = 1; i < n; i += 3)
		printf "%s{device=\"%s\"} %.0f %.0f 1\n", f[i + 1], $1, lo[$1, f[i]] * f[i + 2], $(f[i]) * f[i + 2]
}' "$tmp/disk.a" "$tmp/disk.b" >"$tmp/disk.spec"
bad=$(out_of_bounds "$tmp/disk.spec" "$tmp/m")
check "node_disk_{reads,writes}_completed_total and _bytes_total between /sys/block/*/stat before and after${bad:+ (not:$bad)}" \
	test -z "$bad"
check "node_load1, node_vmstat_pgfault and node_network_transmit_colls_total are there" \
	sh -c "grep -q '^node_load1 ' '$tmp/m' && grep -q '^node_vmstat_pgfault ' '$tmp/m' && grep -q '^node_network_transmit_colls_total{device=\"lo\"} ' '$tmp/m'"
check "the host's sources are healthy (statsfd_collector_source_up)" \
	sh -c "grep '^statsfd_collector_source_up{provider=\"statsfd_host\"' '$tmp/m' | grep -q ' 1\$' && ! grep '^statsfd_collector_source_up{provider=\"statsfd_host\"' '$tmp/m' | grep -q ' 0\$'"
nsrc=$((1 + ncpus + $(echo $ifaces | wc -w) + $(echo $disks | wc -w)))
check "statsfd_collector_sources is node + CPUs + interfaces + disks ($nsrc)" \
	test "$(value statsfd_collector_sources "$tmp/m")" = "$nsrc"

# A disk written to: its counters move, scrape and text still agree.
if [ -b /dev/ram0 ]; then
	dd if=/dev/zero of=/dev/ram0 bs=4096 count=64 conv=fsync 2>/dev/null
	sleep 0.6
	scrape "$tmp/m2"
	w=$(awk '{ printf "%.0f", $7 * 512 }' /sys/block/ram0/stat)
	check "after a write to ram0: node_disk_written_bytes_total is /sys/block/ram0/stat's sectors x 512 ($w)" \
		test "$(value 'node_disk_written_bytes_total{device="ram0"}' "$tmp/m2")" = "$w"
fi

# A new interface, found by the next rescan; deleted, its source dropped:
# on its hangup (EPOLLHUP), or by the rescan when one runs first (both
# can be ready in one pass of the loop on a loaded guest).  Exactly one
# source goes either way.
if ip link add hostu0 type dummy 2>/dev/null; then
	check "dummy interface hostu0 added: exported within 5 s" \
		waitfor 50 sh -c "wget -q -O - http://127.0.0.1:$port/metrics | grep -q '^node_network_receive_bytes_total{device=\"hostu0\"} '"
	before=$(wget -q -O - "http://127.0.0.1:$port/metrics" | awk '/^statsfd_collector_sources / { print $2 }')
	ip link del hostu0
	check "hostu0 deleted: its source dropped, and only it ($before sources before)" \
		waitfor 100 sh -c "m=\$(wget -q -O - http://127.0.0.1:$port/metrics); ! echo \"\$m\" | grep -q 'device=\"hostu0\"' && [ \$(echo \"\$m\" | awk '/^statsfd_collector_sources / { print \$2 }') -eq $((before - 1)) ]"
else
	echo "# no dummy interfaces in this kernel: interface hotplug not exercised"
fi

kill "$cpid"
wait "$cpid"
check "collector --host exits cleanly on SIGTERM" test $? -eq 0
cpid=
finish
