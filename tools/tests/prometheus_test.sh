#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# End to end on the host: statsfd-collector (dropping to nobody) fed by a
# VMM-like client over SCM_RIGHTS, its exposition checked by `promtool check
# metrics`, then scraped every second by a real Prometheus server on
# loopback, and the samples read back through Prometheus' HTTP query API.
# Then a second Prometheus with native histograms: it negotiates the
# protobuf exposition, and histogram_quantile() over the native histogram
# of a log2 stat matches the quantile of the buckets `statsfd show` reads
# from the same fd, within the bucket's resolution.
# Every wait is bounded; every process started here is stopped on exit.
# Usage: prometheus_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
. "$(dirname "$0")/scratch.sh"
. "$(dirname "$0")/prometheus.sh"
out=${1:?usage: prometheus_test.sh BUILD_DIR}
bindir=${STATSFD_BIN:-$out/san/bin}
feeder=$out/san/tests/collector_test
scratch_tmp prom-test 755

command -v prometheus >/dev/null || skip_all "prometheus end to end" "no prometheus binary"
command -v promtool >/dev/null || skip_all "prometheus end to end" "no promtool"
command -v curl >/dev/null || skip_all "prometheus end to end" "no curl"
user=nobody
[ "$(id -u)" = 0 ] || user=$(id -un)

# The feeder's stats fds are memfds: accepted only in test mode.
ASAN_OPTIONS=detect_leaks=0 "$bindir/statsfd-collector" --socket "$tmp/c.sock" \
	--socket-mode 0600 --listen 127.0.0.1:0 --port-file "$tmp/port" \
	--user "$user" --interval 200 --test-accept-memfd 2>"$tmp/collector.log" &
pids+=($!)
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port" 2>/dev/null)
if [ -z "$port" ]; then
	nok "collector started"; sed 's/^/# /' "$tmp/collector.log"; finish
fi
ok "collector listening on 127.0.0.1:$port"

"$feeder" --feed "$tmp/c.sock" --seconds 120 >"$tmp/feed.log" 2>&1 &
pids+=($!)
feeder_pid=$!
for _ in $(seq 100); do grep -q registered "$tmp/feed.log" && break; sleep 0.05; done
sleep 0.5
curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"
if promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.log" 2>&1; then
	ok "promtool check metrics accepts the exposition ($(wc -l <"$tmp/metrics.txt") lines)"
else
	nok "promtool check metrics"; sed 's/^/# /' "$tmp/promtool.log"
fi
if grep -q '^statsfd_halt_wait_hist_seconds_bucket{provider="statsfd_vm",target="vcpu",vm="web",vcpu="0",le="+Inf"}' "$tmp/metrics.txt" &&
   grep -q '^# TYPE statsfd_halt_exits_total counter$' "$tmp/metrics.txt" &&
   grep -q '^# TYPE statsfd_max_halt_seconds gauge$' "$tmp/metrics.txt"; then
	ok "counters as *_total, peaks as gauges, histograms with le buckets"
else
	nok "metric types"
fi

prom_config "$port"
prom_start "$tmp/data" "$tmp/prometheus.log"

if prom_wait 60 'statsfd_halt_exits_total{vm="web",vcpu="0"}' \
	'(.data.result | length == 1) and (.data.result[0].value[1] | tonumber > 0)'; then
	ok "Prometheus scraped the collector: halt_exits_total{vm=web,vcpu=0} = $(echo "$r" | jq -r '.data.result[0].value[1]')"
else
	nok "Prometheus has no samples after 60 s"
	tail -n 20 "$tmp/prometheus.log" | sed 's/^/# /'
	finish
fi
sleep 3
prom_check "rate() over the counter is positive: " \
	'rate(statsfd_halt_exits_total{vm="web",vcpu="0"}[5s])' \
	'(.data.result[0].value[1] | tonumber) > 0' '.data.result[0].value[1] + "/s"'
prom_check "histogram series of both vCPUs stored" \
	'statsfd_halt_wait_hist_seconds_count{vm="web",target="vcpu"}' '.data.result | length == 2'
prom_check "scrape target up" 'up{job="statsfd"}' '.data.result[0].value[1] == "1"'
prom_check "statsfd_collector_source_up is 1 for the VM and its 2 vCPUs" \
	'statsfd_collector_source_up{provider="statsfd_vm"}' \
	'(.data.result | length == 3) and all(.data.result[]; .value[1] == "1")'
prom_check "statsfd_collector_sources reads 3 in Prometheus" 'statsfd_collector_sources' \
	'.data.result[0].value[1] == "3"'

# Native histograms: Prometheus 2.42 asks for the protobuf exposition when
# the feature is on.
kill "${pids[-1]}" 2>/dev/null
wait "${pids[-1]}" 2>/dev/null
unset 'pids[-1]'
prom_start "$tmp/data-native" "$tmp/prometheus-native.log" --enable-feature=native-histograms
hq='statsfd_halt_wait_hist_seconds{vm="web",vcpu="0"}'
if prom_wait 60 "$hq" '.data.result | length == 1 and (.[0].histogram[1].count | tonumber > 0)'; then
	ok "native histograms: Prometheus stored halt_wait_hist_seconds as a native histogram ($(echo "$r" | jq -r '.data.result[0].histogram[1].count') samples)"
else
	nok "native histograms: no native histogram after 60 s"; echo "# $r"
	tail -n 20 "$tmp/prometheus-native.log" | sed 's/^/# /'
fi
r=$(q 'count({__name__=~"statsfd_halt_wait_hist_seconds_bucket|statsfd_halt_wait_hist_seconds_count"})')
check_classic=$(echo "$r" | jq -r '.data.result | length')
if [ "$check_classic" = 0 ] && q 'statsfd_halt_exits_total{vm="web",vcpu="0"}' | jq -e '.data.result | length == 1' >/dev/null 2>&1; then
	ok "native histograms: no classic _bucket or _count series of it; counters still there"
else
	nok "native histograms: classic series of the log2 histogram present, or counters missing"; echo "# $r"
fi
prom_check "native histograms: the collector's own samples (source_up of 3 sources with their labels, sources = 3) through protobuf" \
	'statsfd_collector_source_up{provider="statsfd_vm"} + on() group_left statsfd_collector_sources' \
	'(.data.result | length == 3) and all(.data.result[]; .value[1] == "4")'
# The CLI reads vCPU 0's fd in the feeder (its memfd, /proc/PID/fd/N).
cli_json=
for f in /proc/"$feeder_pid"/fd/*; do
	case $(readlink "$f") in /memfd:*) ;; *) continue ;; esac
	j=$("$bindir/statsfd" show --file "$f" --json 2>/dev/null) || continue
	if echo "$j" | jq -e '.[0].target == "vcpu" and .[0].vcpu == 0' >/dev/null 2>&1; then
		cli_json=$j
		break
	fi
done
# The quantile as Prometheus interpolates classic buckets, over the CLI's
# buckets [lower, upper): its value, and the bucket's bounds.
cli_q=$(echo "$cli_json" | jq -r '.[0].stats[] | select(.name == "halt_wait_hist_ns") |
	(.buckets | map(.count) | add) as $n | (0.9 * $n) as $rank |
	reduce .buckets[] as $b ({cum: 0, out: null};
		if .out == null and .cum + $b.count >= $rank and $b.count > 0 then
			.out = [$b.lower + ($b.upper - $b.lower) * (($rank - .cum) / $b.count), $b.lower, $b.upper]
		else . end | .cum += $b.count) | .out | map(tostring) | join(" ")' 2>/dev/null)
r=$(q "histogram_quantile(0.9, $hq)")
prom_q=$(echo "$r" | jq -r '.data.result[0].value[1]' 2>/dev/null)
# Prometheus' schema-0 bucket of a nanosecond bucket [lo, hi) is
# (lo, hi] * 2^-30 s / 1 ns = (0.93 lo, 0.93 hi]: within the bucket.
if [ -n "$cli_q" ] && [ -n "$prom_q" ] && awk -v p="$prom_q" -v c="$cli_q" 'BEGIN {
	split(c, a, " "); q = a[1]; lo = a[2]; hi = a[3]
	exit !(p >= 0.9 * lo && p <= hi && (p - q < hi - lo) && (q - p < hi - lo))
}'; then
	ok "histogram_quantile(0.9) over the native histogram: $prom_q s, the CLI's buckets: ${cli_q%% *} s in [$(echo "$cli_q" | cut -d' ' -f2), $(echo "$cli_q" | cut -d' ' -f3)) s"
else
	nok "histogram_quantile(0.9): Prometheus $prom_q, CLI ${cli_q:-none}"; echo "# $r"
fi
finish
