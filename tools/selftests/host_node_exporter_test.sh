#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# statsfd-collector --host beside Debian's node_exporter (1.5.0, package
# prometheus-node-exporter, unpacked by tools/testing/servers.sh and copied
# into the guest by make check), in the
# guest with statsfd_host.ko: every series the collector exports under a
# node_exporter name must be one node_exporter exports too, with the same
# labels, and every series node_exporter exports in those families must be
# the collector's too (but node_exporter's other meminfo fields and disk
# partitions).  Values: node_exporter is scraped before and after a read
# tick of the collector, whose counters must lie between the two (within
# node_exporter's precision: 1/100 s for CPU times, 1 ms for disk times),
# and whose gauges must be close (memory within 16 MiB, load within 1,
# boot time within 1 s, I/Os in flight within 4).  Runs under busybox sh;
# prints TAP with its plan last, exits 1 if any test is not ok.
tmp=/tmp/host-ne
cpid='' npid=''
ne=/usr/bin/prometheus-node-exporter

. "$(dirname "$0")/lib/tap.sh"
cleanup() {
	stop_pids $npid $cpid
	rm -rf "$tmp"
}
on_exit cleanup

require "node_exporter comparison" /dev/statsfd_host statsfd-collector "$ne"
scratch_dir "$tmp"

# The collectors whose families --host maps, with their default flags but
# for the device excludes, Debian's ^lo$ for interfaces and ram*, loop*,
# ... for disks: --host exports every interface and every whole disk.
"$ne" --web.listen-address=127.0.0.1:19100 --collector.disable-defaults \
	--collector.cpu --collector.stat --collector.loadavg --collector.meminfo \
	--collector.vmstat --collector.netdev --collector.diskstats \
	--collector.netdev.device-exclude='^$' \
	--collector.diskstats.device-exclude='^$' >"$tmp/ne.log" 2>&1 &
npid=$!
statsfd-collector --host --socket "$tmp/c.sock" --socket-mode 0600 \
	--listen 127.0.0.1:0 --port-file "$tmp/port" --user nobody \
	--interval 200 2>"$tmp/collector.log" &
cpid=$!
ne_up() { wget -q -O "$tmp/a" http://127.0.0.1:19100/metrics 2>/dev/null; }
if ! waitfor 100 test -s "$tmp/port" || ! waitfor 100 ne_up; then
	nok "node_exporter and statsfd-collector --host start"
	sed 's/^/# /' "$tmp/ne.log" "$tmp/collector.log" | tail -n 20
	finish
fi
port=$(cat "$tmp/port")
ok "node_exporter on 127.0.0.1:19100, statsfd-collector --host on 127.0.0.1:$port"

# node_exporter before, a read tick of ours, ours, node_exporter after.
wget -q -O "$tmp/a" http://127.0.0.1:19100/metrics
sleep 0.6
wget -q -O "$tmp/p" "http://127.0.0.1:$port/metrics"
wget -q -O "$tmp/b" http://127.0.0.1:19100/metrics
disks=$(ls /sys/block | tr '\n' ' ')

# compare.awk A P B: prints "compared N" and one line per problem.
cat >"$tmp/compare.awk" <<'EOF'
function family(k) { sub(/\{.*/, "", k); return k }
function device(k) {
	if (!match(k, /device="[^"]*"/))
		return ""
	return substr(k, RSTART + 8, RLENGTH - 9)
}
function abs(x) { return x < 0 ? -x : x }
FNR == 1 { f++ }
/^# TYPE / { if (f == 2 && $3 ~ /^node_/) type[$3] = $4; next }
/^#/ || NF < 2 { next }
f == 1 { a[$1] = $2 }
f == 2 && $1 ~ /^node_/ { p[$1] = $2 }
f == 3 { b[$1] = $2 }
END {
	split(disks, dl, " ")
	for (i in dl) whole[dl[i]] = 1
	for (k in p) {
		fam = family(k)
		if (!(k in a) || !(k in b)) {
			print "not in node_exporter's: " k
			continue
		}
		n++
		av = a[k] + 0; bv = b[k] + 0; pv = p[k] + 0
		t = type[fam]
		if (t == "counter" || t == "untyped") {
			# node_exporter's text has 1/100 s for CPUs, 1 ms for disks.
			tol = fam ~ /_seconds_total$/ ? 0.011 : 0
			if (pv < av - 1e-9 * abs(av) || pv > bv + tol + 1e-9 * abs(bv))
				print k ": " pv " not between " av " and " bv
		} else {
			lo = av < bv ? av : bv; hi = av < bv ? bv : av
			tol = fam ~ /^node_memory_/ ? 16777216 : fam ~ /^node_load/ ? 1 : fam == "node_disk_io_now" ? 4 : 1
			if (pv < lo - tol || pv > hi + tol)
				print k ": " pv " far from " av " and " bv
		}
	}
	# The other way: node_exporter's series of the families we export.
	for (k in a) {
		fam = family(k)
		if (!(fam in type) || (k in p))
			continue
		if (fam ~ /^node_disk_/ && !(device(k) in whole))
			continue
		print "only in node_exporter's: " k
	}
	print "compared " n
}
EOF
awk -v disks="$disks" -f "$tmp/compare.awk" "$tmp/a" "$tmp/p" "$tmp/b" >"$tmp/cmp" 2>&1
compared=$(awk '/^compared / { print $2 }' "$tmp/cmp")
grep -v '^compared ' "$tmp/cmp" | sed 's/^/# /' | head -n 40
check "every mapped series ($compared) is node_exporter's, and its value agrees" \
	sh -c "[ '${compared:-0}' -gt 50 ] && ! grep -qv '^compared ' '$tmp/cmp'"
check "the same families: node_cpu_seconds_total, node_network_*, node_disk_* in both" \
	sh -c "grep -q '^node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} ' '$tmp/p' && grep -q '^node_network_receive_bytes_total{device=\"lo\"} ' '$tmp/p' && { [ -z '$disks' ] || grep -q '^node_disk_io_time_seconds_total{' '$tmp/p'; }"
# The comparison itself must be able to fail: a wrong value.
sed 's/^\(node_vmstat_pgfault\) \(.*\)$/\1 1/' "$tmp/p" >"$tmp/p-bad"
awk -v disks="$disks" -f "$tmp/compare.awk" "$tmp/a" "$tmp/p-bad" "$tmp/b" >"$tmp/cmp-bad" 2>&1
check "a wrong value is noticed (node_vmstat_pgfault 1)" grep -q '^node_vmstat_pgfault: 1 not between' "$tmp/cmp-bad"
finish
