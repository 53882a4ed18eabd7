#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# statsfd-collector --host as a daemon on the host, without statsfd_host.ko:
# --test-host gives it a fake sysfs (CPUs online, disks) and, for each
# object's stats fd, a memfd holding a synthetic image (host_test
# --write-images).  Its scrape has node_exporter's series with the
# images' exact values and passes promtool (but for node_exporter's own
# camelCase meminfo names); a CPU going offline, a disk added and a disk
# removed in the fake sysfs are seen by the next rescan
# (--discover-interval); the host's sources are in query-sources; a
# --discover-interval without --discover-kvm or --host is refused.  The
# real device is host_tools_test.sh's, in the guest.
# Usage: host_collector_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
. "$(dirname "$0")/scratch.sh"
out=${1:?usage: host_collector_test.sh BUILD_DIR}
bin=${STATSFD_BIN:-$out/san/bin}/statsfd-collector
cli=${STATSFD_BIN:-$out/san/bin}/statsfd
scratch_tmp host-collector-test 700
export ASAN_OPTIONS=detect_leaks=0
scrape() { curl -s "http://127.0.0.1:$port/metrics"; }
has() { scrape | grep -q "^$1 "; }
# absent PATTERN: the collector answers, and nothing matches PATTERN.
absent() {
	local m
	m=$(scrape)
	grep -q '^statsfd_collector_sources ' <<<"$m" && ! grep -q "$1" <<<"$m"
}
value() { scrape | awk -v k="$1" 'index($0, k " ") == 1 { print $2 }'; }

"$bin" --socket "$tmp/x.sock" --listen none --user root --discover-interval 500 \
	>/dev/null 2>"$tmp/alone.err"
check "--discover-interval alone refused" \
	bash -c "[ $? = 2 ] && grep -q -- '--discover-interval needs --discover-kvm or --host' '$tmp/alone.err'"

mkdir -p "$tmp/host/images" "$tmp/host/sys/devices/system/cpu" \
	"$tmp/host/sys/block/vda"
: >"$tmp/host/statsfd_host"
echo 0-1 >"$tmp/host/sys/devices/system/cpu/online"
echo 252:0 >"$tmp/host/sys/block/vda/dev"
"$out/san/tests/host_test" --write-images "$tmp/host/images"
check "host_test --write-images" test -s "$tmp/host/images/host-node.img"
# Every interface of this netns gets the image of eth0 under its name.
for d in /sys/class/net/*; do
	i=${d##*/}
	[ "$i" = eth0 ] || cp "$tmp/host/images/host-net-eth0.img" "$tmp/host/images/host-net-$i.img"
done
nifs=$(ls /sys/class/net | wc -l)
[ -e /sys/class/net/eth0 ] || rm -f "$tmp/host/images/host-net-eth0.img"

"$bin" --test-host "$tmp/host" --test-accept-memfd --socket "$tmp/c.sock" \
	--listen 127.0.0.1:0 --port-file "$tmp/port" --user root --interval 100 \
	--discover-interval 200 2>"$tmp/collector.log" &
daemon=$!
wait_started 100 "$tmp/port" "$tmp/collector.log" "collector --test-host starts"
port=$(cat "$tmp/port")
ok "collector --test-host listening on 127.0.0.1:$port"
scrape >"$tmp/m1"
nsrc=$((1 + 2 + nifs + 1))
check "node, 2 CPUs, $nifs interfaces and vda: $nsrc sources" \
	grep -q "^statsfd_collector_sources $nsrc\$" "$tmp/m1"
check "node_cpu_seconds_total of CPU 1 (user): the image's 246913578031 ns" \
	grep -q '^node_cpu_seconds_total{cpu="1",mode="user"} 246.913578031$' "$tmp/m1"
check "node_memory_MemTotal_bytes, node_load1, node_disk_read_bytes_total{device=\"vda\"}" \
	bash -c "grep -q '^node_memory_MemTotal_bytes ' '$tmp/m1' && grep -q '^node_load1 2.24\$' '$tmp/m1' && grep -q '^node_disk_read_bytes_total{device=\"vda\"} ' '$tmp/m1'"
check "node_network_receive_bytes_total{device=\"lo\"}" \
	grep -q '^node_network_receive_bytes_total{device="lo"} ' "$tmp/m1"
check "the unmapped stats as statsfd_*, with cpu and device labels" \
	bash -c "grep -q '^statsfd_online{provider=\"statsfd_host\",target=\"cpu\",cpu=\"0\"} ' '$tmp/m1' && grep -q '^statsfd_rx_otherhost_dropped_total{provider=\"statsfd_host\",target=\"net\",device=\"lo\"} ' '$tmp/m1' && ! grep -q 'statsfd_user_seconds_total{provider=\"statsfd_host\",target=\"cpu\"' '$tmp/m1' && ! grep -q online_sum '$tmp/m1'"
check "source health with the host's labels" \
	grep -q '^statsfd_collector_source_up{provider="statsfd_host",target="block",device="vda"} 1$' "$tmp/m1"
promtool check metrics <"$tmp/m1" >"$tmp/promtool.out" 2>&1
rc=$?
check "promtool check metrics: nothing but node_exporter's camelCase meminfo names" \
	bash -c "[ $rc = 0 ] || [ $rc = 3 ] && ! grep -v \"^node_memory_[A-Za-z_]* metric names should be written in 'snake_case' not 'camelCase'\$\" '$tmp/promtool.out' | grep -q ."
# The host's families go through the same formats: OpenMetrics names the
# counter family without _total, with its unit, and gives no _created
# (a device counts since it appeared, which nothing says).
curl -s --max-time 5 -H 'Accept: application/openmetrics-text;version=1.0.0' \
	"http://127.0.0.1:$port/metrics" >"$tmp/m1.om"
check "OpenMetrics: node_cpu_seconds as a counter with its unit, node_cpu_seconds_total samples, no _created" \
	bash -c "grep -A2 '^# TYPE node_cpu_seconds counter\$' '$tmp/m1.om' | grep -qx '# UNIT node_cpu_seconds seconds' &&
		grep -q '^node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 246.913578031\$' '$tmp/m1.om' &&
		! grep -q '^node_cpu_seconds_created' '$tmp/m1.om' && tail -n 1 '$tmp/m1.om' | grep -qx '# EOF'"
check "OpenMetrics: node_vmstat_pgfault is of type unknown (OpenMetrics has no untyped; Prometheus refuses the scrape)" \
	bash -c "grep -qx '# TYPE node_vmstat_pgfault unknown' '$tmp/m1.om' && ! grep -q '^# TYPE .* untyped\$' '$tmp/m1.om'"
"$cli" query --collector "$tmp/c.sock" --sources --provider statsfd_host >"$tmp/src.json"
check "query-sources: the host's sources, a disk's name as its vm" \
	bash -c "grep -c '\"provider\": \"statsfd_host\"' '$tmp/src.json' | grep -qx $nsrc && grep -q '\"vm\": \"vda\"' '$tmp/src.json'"

echo 0 >"$tmp/host/sys/devices/system/cpu/online"
check "CPU 1 offline: its source dropped at the next rescan" \
	waitfor 50 absent 'cpu="1"'
check "... and logged" grep -q 'host: cpu 1 gone: source [0-9]* dropped' "$tmp/collector.log"
mkdir -p "$tmp/host/sys/block/vdb"
echo 252:16 >"$tmp/host/sys/block/vdb/dev"
cp "$tmp/host/images/host-block-vda.img" "$tmp/host/images/host-block-vdb.img"
check "disk vdb added: exported at the next rescan" \
	waitfor 50 has 'node_disk_io_now{device="vdb"}'
rm -r "$tmp/host/sys/block/vda"
check "disk vda gone: dropped" waitfor 50 absent 'device="vda"'
check "CPU 1 back: exported again" \
	bash -c "echo 0-1 >'$tmp/host/sys/devices/system/cpu/online' && for i in \$(seq 50); do curl -s http://127.0.0.1:$port/metrics | grep -q '^node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} ' && exit 0; sleep 0.1; done; exit 1"
echo garbage >"$tmp/host/sys/devices/system/cpu/online"
# The first rescan that fails logs (waited for: a loaded host may run it
# late); the ones in the next half second (every 200 ms) must not.
waitfor 100 grep -q 'host: cannot list the CPUs, interfaces and disks' "$tmp/collector.log"
sleep 0.5
check "a CPU list that does not parse: logged once, the sources kept" \
	bash -c "[ \$(grep -c 'host: cannot list the CPUs, interfaces and disks' '$tmp/collector.log') = 1 ] && curl -s http://127.0.0.1:$port/metrics | grep -q '^node_cpu_seconds_total{cpu=\"1\",'"
kill "$daemon"
wait "$daemon"
check "exits cleanly on SIGTERM" test $? -eq 0
daemon=

rm -f "$tmp/host/images/host-node.img"
echo 0-1 >"$tmp/host/sys/devices/system/cpu/online"
"$bin" --test-host "$tmp/host" --test-accept-memfd --socket "$tmp/c2.sock" \
	--listen none --user root 2>"$tmp/c2.log" &
daemon=$!
# Its first scan logs how many sources it made.
waitfor 100 grep -q 'host: [0-9]* sources' "$tmp/c2.log"
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
daemon=
check "an object without a stats fd is left out, the others read" \
	grep -q "host: $((nsrc - 1)) sources" "$tmp/c2.log"
finish
