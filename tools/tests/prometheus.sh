# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# prometheus.sh - a real Prometheus server scraping a collector, for the
# end-to-end tests that source it after tap.sh (prometheus_test.sh,
# prometheus_hostile_test.sh).  They set $tmp (a scratch folder) and the
# array pids (stopped by their clean-up) first.
#
#   prom_config PORT [LINE...]   $tmp/prometheus.yml: job "statsfd" scraping
#                                127.0.0.1:PORT every second; each LINE is
#                                one more setting of its global section
#   prom_start DATA LOG [ARG...] a Prometheus on that file, storing in DATA,
#                                logging to LOG: its pid in $prom_pid and
#                                pids, its port in $pport (a free one, picked
#                                by the first call)
#   q EXPR [TIME]                an instant query (at TIME, default now)
#   prom_wait SECS EXPR JQ       asks EXPR once a second until `jq -e JQ`
#                                accepts the reply, at most SECS times; the
#                                last reply in $r, status 1 when never
#   prom_check DESC EXPR JQ [SHOW]  ok DESC when `jq -e JQ` accepts the
#                                reply to EXPR (then DESC is followed by
#                                `jq -r SHOW` of it, when given), else nok
#                                DESC (less a trailing ": ") and the reply
#                                as a comment
pport=
prom_pid=

prom_config() {
	local port=$1 line
	shift
	{
		echo "global:"
		echo "  scrape_interval: 1s"
		for line in "$@"; do echo "  $line"; done
		echo "  evaluation_interval: 1s"
		echo "scrape_configs:"
		echo "  - job_name: statsfd"
		echo "    static_configs:"
		echo "      - targets: ['127.0.0.1:$port']"
	} >"$tmp/prometheus.yml"
}

prom_start() {
	local data=$1 log=$2
	shift 2
	if [ -z "$pport" ]; then
		for _ in $(seq 50); do
			pport=$((20000 + RANDOM % 30000))
			ss -ltn 2>/dev/null | grep -q ":$pport " || break
		done
	fi
	prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$data" \
		--web.listen-address="127.0.0.1:$pport" "$@" >"$log" 2>&1 &
	prom_pid=$!
	pids+=("$prom_pid")
}

q() {
	local time=()
	[ $# -gt 1 ] && time=(--data-urlencode "time=$2")
	curl -sf --max-time 5 -G "http://127.0.0.1:$pport/api/v1/query" \
		--data-urlencode "query=$1" "${time[@]}"
}

prom_wait() {
	local secs=$1 expr=$2 filter=$3
	for _ in $(seq "$secs"); do
		r=$(q "$expr" 2>/dev/null)
		if [ -n "$r" ] && echo "$r" | jq -e "$filter" >/dev/null 2>&1; then
			return 0
		fi
		sleep 1
	done
	return 1
}

prom_check() {
	local desc=$1 filter=$3 show=${4:-}
	r=$(q "$2")
	if [ -n "$r" ] && echo "$r" | jq -e "$filter" >/dev/null 2>&1; then
		ok "$desc${show:+$(echo "$r" | jq -r "$show")}"
	else
		nok "${desc%: }"
		echo "# $r"
	fi
}
