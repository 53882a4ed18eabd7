#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real Prometheus scraping statsfd-collector every second while hostile
# clients attack it: the attacks of collector_hostile_test (--attack) and
# 64 idle HTTP connections, against a daemon an honest VMM-like feeder
# (collector_test --feed) keeps registered.  Afterwards Prometheus' HTTP
# API is asked, over the attack window, whether every scrape succeeded
# (`up` 1), whether Prometheus kept scraping, whether every honest series
# (vm="web") has a sample at every scrape, and whether the honest
# counters grew and never went back.  Controls then stop the collector
# (SIGSTOP) and Prometheus for 3 s each: the same checks must report the
# failed scrapes, the missing samples and the late scrapes.
# Every wait is bounded; every process started here is stopped on exit.
# Usage: prometheus_hostile_test.sh BUILD_DIR   (as root; TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
. "$(dirname "$0")/prometheus.sh"
out=${1:?usage: prometheus_hostile_test.sh BUILD_DIR}
# The collector as installed, not the sanitized one: ASan makes rendering
# the 6 MB exposition of the 1000-vCPU attack several times slower, past
# Prometheus' 1 s scrape timeout on a loaded machine, and this test is
# about scrapes; collector_hostile_test runs the same attacks on the
# sanitized daemon.
collector=$out/bin/statsfd-collector
feeder=$out/san/tests/collector_test
attacker=$out/san/tests/collector_hostile_test
tmp=$(mktemp -d /tmp/statsfd-prom-hostile.XXXXXX)
# The attacker's children (uid 12345) reach the socket through it.
chmod 755 "$tmp"
export ASAN_OPTIONS=detect_leaks=0
pids=()
cleanup() {
	# A control may have left the collector stopped: SIGTERM needs it running.
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
on_exit cleanup
now() { date +%s.%N; }

[ "$(id -u)" = 0 ] || bail "needs root (the attacks use a foreign uid, the daemon drops to nobody)"
for c in prometheus curl jq python3; do
	command -v "$c" >/dev/null || bail "no $c (tools/testing/deps.sh installs it)"
done

# As collector_hostile_test starts its own daemon (--attack relies on
# these options); memfd fixtures are accepted in test mode only.
"$collector" --socket "$tmp/c.sock" --socket-mode 0666 \
	--listen 127.0.0.1:0 --port-file "$tmp/port" --user nobody \
	--allow-uid 0,12345 --interval 200 --client-timeout 1000 \
	--test-accept-memfd 2>"$tmp/collector.log" &
cpid=$!
pids+=("$cpid")
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port" 2>/dev/null)
if [ -z "$port" ]; then
	sed 's/^/# /' "$tmp/collector.log"
	bail "collector started"
fi
ok "collector listening on 127.0.0.1:$port"

"$feeder" --feed "$tmp/c.sock" --seconds 120 >"$tmp/feed.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q registered "$tmp/feed.log" && break; sleep 0.05; done
check_quiet "the honest feeder registered VM web and its 2 vCPUs" grep -q registered "$tmp/feed.log"

prom_config "$port" "scrape_timeout: 1s"
prom_start "$tmp/data" "$tmp/prometheus.log"

if ! prom_wait 30 'statsfd_halt_exits_total{job="statsfd",vm="web",vcpu="0"}' \
	'.data.result | length == 1'; then
	tail -n 20 "$tmp/prometheus.log" | sed 's/^/# /'
	bail "Prometheus scrapes the collector within 30 s"
fi
ok "Prometheus (127.0.0.1:$pport, scraping every 1 s) has the honest series"
# A few scrapes before the attacks start.
sleep 2

# scrapes FROM TO NAME: the raw samples Prometheus stored between the
# Unix times FROM and TO (the range ending at TO, whole seconds back to
# FROM), of the job's `up` and of every honest series, summarized in
# $tmp/NAME.json: scrapes, failed (up 0), the largest gap between two
# scrapes, the late ones (more than 1.5 s after the previous one ended,
# FROM and TO counting as scrapes), the longest scrape_duration_seconds,
# the most samples in a scrape, the honest series, those missing the
# sample of a scrape, the samples missing, and two honest counters'
# samples, first and last values and decreases.
scrapes() {
	local from=$1 to=$2 name=$3 w
	w=$(echo "$to $from" | awk '{ w = $1 - $2; print (w == int(w)) ? w : int(w) + 1 }')
	q "up{job=\"statsfd\"}[${w}s]" "$to" >"$tmp/$name.up.json" &&
	q "{job=\"statsfd\",vm=\"web\"}[${w}s]" "$to" >"$tmp/$name.web.json" &&
	q "scrape_duration_seconds{job=\"statsfd\"}[${w}s]" "$to" >"$tmp/$name.dur.json" &&
	q "scrape_samples_scraped{job=\"statsfd\"}[${w}s]" "$to" >"$tmp/$name.samples.json" &&
	jq -n --slurpfile up "$tmp/$name.up.json" --slurpfile web "$tmp/$name.web.json" \
		--slurpfile dur "$tmp/$name.dur.json" --slurpfile smp "$tmp/$name.samples.json" \
		--argjson from "$from" --argjson to "$to" '
	def counter($n; $v): [$web[0].data.result[] |
		select(.metric.__name__ == $n and .metric.vcpu == $v) | .values[][1] | tonumber];
	($up[0].data.result[0].values // []) as $u |
	($u | map(.[0])) as $ts |
	($dur[0].data.result[0].values // [] |
	 map({ key: (.[0] | tostring), value: (.[1] | tonumber) }) | from_entries) as $d |
	([$from] + $ts + [$to]) as $t |
	[$web[0].data.result[] | ($ts - (.values | map(.[0]))) | length] as $missing |
	{
		scrapes: ($u | length),
		failed: ($u | map(select(.[1] != "1")) | length),
		max_gap: ([range(1; $ts | length) | $ts[.] - $ts[. - 1]] | max // 0),
		late: [range(1; $t | length) as $i |
		       select($t[$i] - $t[$i - 1] > ($d[$t[$i - 1] | tostring] // 0) + 1.5) |
		       [$t[$i - 1], $t[$i]]],
		max_ms: (($d | [.[]] | max // 0) * 1000 | floor),
		max_samples: ([$smp[0].data.result[0].values[][1] | tonumber] | max),
		series: ($missing | length),
		series_missing: ($missing | map(select(. > 0)) | length),
		samples_missing: ($missing | add // 0),
		counters: [counter("statsfd_halt_exits_total"; "0"),
			   counter("statsfd_io_exits_total"; "1")] |
			  map({ n: length, first: .[0], last: .[-1],
				decreases: ([range(1; length) as $i | select(.[$i] < .[$i - 1])] | length) })
	}' >"$tmp/$name.json"
}
# get NAME FIELD: one field of a summary.
get() { jq -r ".$2" "$tmp/$1.json"; }

# 64 idle HTTP connections from 127.0.0.2 (the per-address limit keeps
# them from Prometheus' 127.0.0.1); bash's /dev/tcp cannot choose its
# source address.
python3 -c '
import socket, sys, time
conns = []
for i in range(64):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", int(sys.argv[1])))
    conns.append(s)
print("ready", flush=True)
time.sleep(60)
' "$port" >"$tmp/idle.log" 2>&1 &
idle=$!
pids+=("$idle")
t0=$(now)
for _ in $(seq 100); do grep -q ready "$tmp/idle.log" && break; sleep 0.05; done
check_quiet "64 idle HTTP connections from 127.0.0.2 held open" grep -q ready "$tmp/idle.log"

# The attacks, their TAP merged into this one.
timeout 120 "$attacker" --attack "$tmp/c.sock" "$port" "$cpid" >"$tmp/attack.log" \
	2>"$tmp/attack.err"
rc=$?
tap_merge attack "$tmp/attack.log"
if [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$tmp/attack.log"; then
	nok "attack: collector_hostile_test --attack exited with status $rc"
	tail -n 20 "$tmp/attack.err" | sed 's/^/# /'
fi
kill "$idle" 2>/dev/null
wait "$idle" 2>/dev/null
# Two more scrapes in the window, then let Prometheus store the last.
sleep 2
t1=$(now)
sleep 1.5
if scrapes "$t0" "$t1" attack; then
	ok "Prometheus' API answers for the attack window"
else
	nok "Prometheus' API answers for the attack window"
fi
echo "# attack window: $(jq -c . "$tmp/attack.json")"
w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
check_quiet "every scrape during the attacks succeeded: $(get attack failed) of $(get attack scrapes) with up 0" \
	test "$(get attack failed)" = 0 -a "$(get attack scrapes)" -gt 0
# Prometheus skips the ticks that come while it still stores the previous
# scrape (the 56000 new series of the 1000-vCPU attack take it seconds on
# a loaded 2-core machine; scrape_duration_seconds includes that): that
# much later is its own cost; any later, it stopped scraping.
check_quiet "scraped throughout: $(get attack scrapes) scrapes in $w s, each within 1.5 s of the previous one's end (longest $(get attack max_ms) ms)" \
	test "$(get attack late)" = "[]"
check_quiet "no gap: each of the $(get attack series) honest series has a sample at every scrape ($(get attack samples_missing) missing)" \
	test "$(get attack series)" -gt 3 -a "$(get attack series_missing)" = 0
for i in 0 1; do
	c=$(jq -c ".counters[$i]" "$tmp/attack.json")
	check_quiet "honest counter $((i + 1)) of 2 kept increasing: $c" \
		jq -e --argjson s "$(get attack scrapes)" \
		'.n == $s and .decreases == 0 and .last > .first' <<<"$c"
done

# Controls, or the checks above prove nothing: the collector stopped for
# 3 s must show up as failed scrapes and honest series missing samples,
# then Prometheus itself stopped for 3 s as scrapes that came late.
c0=$(now)
sleep 1
kill -STOP "$cpid"
sleep 3
kill -CONT "$cpid"
sleep 1
kill -STOP "$prom_pid"
sleep 3
kill -CONT "$prom_pid"
sleep 2
c1=$(now)
sleep 1.5
scrapes "$c0" "$c1" control
echo "# control window: $(jq -c . "$tmp/control.json")"
check_quiet "control: the collector stopped 3 s, $(get control failed) scrapes with up 0 seen" \
	test "$(get control failed)" -ge 1
check_quiet "control: the gap seen in every honest series ($(get control series_missing) of $(get control series), $(get control samples_missing) samples missing)" \
	test "$(get control series)" -gt 3 -a "$(get control series_missing)" = "$(get control series)"
check_quiet "control: Prometheus stopped 3 s, its scrapes late: $(jq -c .late "$tmp/control.json")" \
	jq -e '.late | length >= 1' "$tmp/control.json"
r=$(q 'up{job="statsfd"}')
check_quiet "and the target up again after SIGCONT" \
	jq -e '.data.result[0].value[1] == "1"' <<<"$r"
finish
