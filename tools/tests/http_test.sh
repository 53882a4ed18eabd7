#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# statsfd-collector's HTTP side, end to end on the host: --version, every
# bad --listen and HTTP flag, IPv4, IPv6 and dual-stack listeners, the
# URLs, gzip, the exposition cached per read tick, connection limits under
# 64 idle connections, and --web.config.file: TLS (certificates made here
# with openssl), basic auth and client certificates.
# Every wait is bounded; every process started here is stopped on exit.
# Usage: http_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
. "$(dirname "$0")/scratch.sh"
out=${1:?usage: http_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
bindir=${STATSFD_BIN:-$out/san/bin}
collector=$bindir/statsfd-collector
feeder=$out/san/tests/collector_test
scratch_tmp http-test 755
export ASAN_OPTIONS=detect_leaks=0
user=nobody
[ "$(id -u)" = 0 ] || user=
# bcrypt of "secret" (cost 5), as in basic_auth_users.
hash='$2b$05$q0r3sZn/HC7UwIVwd25qtOvUaUsFB3/iQi14X3a36QkNQQL7w14B6'

# start NAME ARGS...: a collector in the background; its ports in $ports.
start() {
	local name=$1
	shift
	rm -f "$tmp/$name.port"
	# The feeder's stats images are memfds: test mode lets them in.
	"$collector" --socket "$tmp/$name.sock" --socket-mode 0666 \
		--port-file "$tmp/$name.port" --user "$user" --test-accept-memfd "$@" \
		2>"$tmp/$name.log" &
	pids+=($!)
	pid=$!
	for _ in $(seq 200); do [ -s "$tmp/$name.port" ] && break; sleep 0.05; done
	mapfile -t ports <"$tmp/$name.port" 2>/dev/null
	[ "${#ports[@]}" -gt 0 ]
}
# idle_from PORT N A...: N idle connections to 127.0.0.1:PORT from each
# 127.0.0.A, held 8 s (bash's /dev/tcp cannot choose its source address).
idle_from() {
	rm -f "$tmp/idle.log"
	python3 -c '
import socket, sys, time
conns = []
for a in sys.argv[3:]:
    for i in range(int(sys.argv[2])):
        s = socket.socket()
        s.bind(("127.0.0." + a, 0))
        s.connect(("127.0.0.1", int(sys.argv[1])))
        conns.append(s)
print("ready", flush=True)
time.sleep(8)
' "$@" >"$tmp/idle.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -q ready "$tmp/idle.log" && break; sleep 0.05; done
	sleep 0.3
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
# code URL [CURL ARGS...]: the HTTP status, 000 when no answer.
code() { local u=$1; shift; curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$u"; }
# until_200 URL [CURL_ARGS...]: asks URL (1 s at most each time) until it
# answers 200, for 6 s at most; the last answer in $c1, the time in $ms.
until_200() {
	local t0
	t0=$(date +%s%N)
	c1=000
	while [ "$c1" != 200 ] && [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 6000 ]; do
		c1=$(code "$@" --max-time 1)
		[ "$c1" = 200 ] || sleep 0.2
	done
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

# --version: the version of dkms.conf, the one version string.
want=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/../../dkms.conf")
v=$("$collector" --version); rc=$?
check "--version prints 'statsfd-collector $want' and exits 0" \
	test "$rc" = 0 -a "$v" = "statsfd-collector $want"
check "--help documents --web.config.file and the HTTP limits" \
	bash -c "'$collector' --help | grep -q -- '--web.config.file' &&
		 '$collector' --help | grep -q -- '--http-max-per-ip'"

# Every bad value: refused at startup, exit 2 or 1, with its message.
bad() {
	local want=$1 what=$2
	shift 2
	"$collector" --socket "$tmp/bad.sock" --user "$user" "$@" >/dev/null 2>"$tmp/bad.log"
	local rc=$?
	if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$tmp/bad.log"; then
		ok "refused: $what"
	else
		nok "refused: $what (status $rc)"; sed 's/^/# /' "$tmp/bad.log"
	fi
}
lmsg="expected HOST:PORT, [IPV6]:PORT or :PORT, numeric"
bad "--listen 127.0.0:80: $lmsg" "an IPv4 address with three parts" --listen 127.0.0:80
bad "--listen ::1:80: $lmsg" "an IPv6 address without brackets" --listen ::1:80
bad "--listen [::1]80: $lmsg" "brackets without a port" --listen '[::1]80'
bad "--listen [127.0.0.1]:80: $lmsg" "an IPv4 address in brackets" --listen '[127.0.0.1]:80'
bad "--listen 127.0.0.1:: $lmsg" "no port" --listen 127.0.0.1:
bad "--listen 127.0.0.1:65536: $lmsg" "port 65536" --listen 127.0.0.1:65536
bad "--listen 127.0.0.1:+80: $lmsg" "a signed port" --listen 127.0.0.1:+80
bad "--listen localhost:80: $lmsg" "a host name" --listen localhost:80
bad "--listen 9477: $lmsg" "no colon" --listen 9477
bad "bad value 'none'" "'none' after an address" --listen 127.0.0.1:0 --listen none
bad "bad value '127.0.0.1:0'" "an address after 'none'" --listen none --listen 127.0.0.1:0
many=(); for i in $(seq 17); do many+=(--listen "127.0.0.1:0"); done
bad "bad value '127.0.0.1:0'" "a 17th --listen" "${many[@]}"
bad "bad value '0'" "--http-max-connections 0" --http-max-connections 0
bad "bad value '0'" "--http-max-per-ip 0" --http-max-per-ip 0
bad "bad value '0'" "--http-idle-timeout 0" --http-idle-timeout 0
bad "bad value '3601'" "--http-idle-timeout 3601" --http-idle-timeout 3601
printf 'tls_server_config:\n  cert_file: c\n  keyfile: k\n' >"$tmp/typo.yml"
bad "--web.config.file $tmp/typo.yml: line 3: tls_server_config: unknown key 'keyfile'" \
	"a web config with an unknown key" --listen 127.0.0.1:0 --web.config.file "$tmp/typo.yml"
bad "--web.config.file $tmp/none.yml: cannot open: No such file or directory" \
	"a web config that does not exist" --listen 127.0.0.1:0 --web.config.file "$tmp/none.yml"
printf 'tls_server_config:\n  cert_file: %s/nocert.pem\n  key_file: k\n' "$tmp" >"$tmp/nocert.yml"
bad "--web.config.file: $tmp/nocert.pem: No such file or directory" \
	"a web config naming a certificate that does not exist" \
	--listen 127.0.0.1:0 --web.config.file "$tmp/nocert.yml"

start none --interval 200 --listen none
check "--listen none: port 0 in --port-file" test "${ports[*]}" = 0
stop

# IPv4, IPv6 and every address at once; a long interval: one render only.
have6=1
ip -6 addr show dev lo 2>/dev/null | grep -q '::1' || have6=0
if [ "$have6" = 1 ]; then
	start multi --interval 3600000 --listen 127.0.0.1:0 --listen '[::1]:0' --listen :0
else
	start multi --interval 3600000 --listen 127.0.0.1:0 --listen 127.0.0.1:0 --listen :0
fi
check "one port per --listen in --port-file (${ports[*]})" test "${#ports[@]}" = 3
p4=${ports[0]} p6=${ports[1]} pany=${ports[2]}
check "IPv4 127.0.0.1: /metrics 200" test "$(code "http://127.0.0.1:$p4/metrics")" = 200
if [ "$have6" = 1 ]; then
	check "IPv6 [::1]: /metrics 200" test "$(code "http://[::1]:$p6/metrics")" = 200
	check "IPv6 [::1] listener does not answer on IPv4" \
		test "$(code "http://127.0.0.1:$p6/metrics")" = 000
	check ":PORT answers on IPv6" test "$(code "http://[::1]:$pany/metrics")" = 200
else
	nok "IPv6: the host has no ::1 on lo"
fi
check ":PORT answers on IPv4" test "$(code "http://127.0.0.1:$pany/metrics")" = 200
u=http://127.0.0.1:$p4
check "/healthz: 200 'ok'" test "$(curl -s --max-time 5 "$u/healthz")" = ok
check "/: 404" test "$(code "$u/")" = 404
check "/metrics/x: 404" test "$(code "$u/metrics/x")" = 404
curl -sv --max-time 5 -o /dev/null "$u/metrics" -o /dev/null "$u/healthz" 2>"$tmp/keepalive.log"
check "two requests on one connection (keep-alive, as Prometheus scrapes)" \
	grep -q 'Re-using existing connection' "$tmp/keepalive.log"
check "HEAD /metrics: 200" test "$(code "$u/metrics" -I)" = 200
check "POST /metrics: 405" test "$(code "$u/metrics" -X POST -d x)" = 405

"$feeder" --feed "$tmp/multi.sock" --seconds 60 >"$tmp/feed.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q registered "$tmp/feed.log" && break; sleep 0.05; done
curl -s --max-time 5 "$u/metrics" >"$tmp/m1"
check "a new source is in the next scrape, without a read tick" \
	grep -q '^statsfd_collector_sources 3$' "$tmp/m1"
for i in 2 3 4; do curl -s --max-time 5 "$u/metrics" >"$tmp/m$i"; done
check "between two read ticks every scrape gets the same exposition" \
	bash -c "cmp -s '$tmp/m1' '$tmp/m2' && cmp -s '$tmp/m1' '$tmp/m4'"
curl -s --max-time 5 -D "$tmp/h.gz" -H 'Accept-Encoding: gzip' -o "$tmp/m.gz" "$u/metrics"
check "Accept-Encoding: gzip: Content-Encoding: gzip and Vary" \
	bash -c "grep -qi '^Content-Encoding: gzip' '$tmp/h.gz' && grep -qi '^Vary: Accept-Encoding' '$tmp/h.gz'"
check "the gzip body decompresses to the plain one ($(wc -c <"$tmp/m.gz") of $(wc -c <"$tmp/m1") bytes)" \
	bash -c "gzip -dc '$tmp/m.gz' | cmp -s - '$tmp/m1'"
curl -s --max-time 5 -D "$tmp/h.q0" -H 'Accept-Encoding: gzip;q=0, identity' -o "$tmp/m.q0" "$u/metrics"
check "Accept-Encoding: gzip;q=0: plain" \
	bash -c "! grep -qi '^Content-Encoding' '$tmp/h.q0' && cmp -s '$tmp/m.q0' '$tmp/m1'"
curl -s --max-time 5 -D "$tmp/h.br" -H 'Accept-Encoding: br, deflate' -o "$tmp/m.br" "$u/metrics"
check "Accept-Encoding without gzip: plain" \
	bash -c "! grep -qi '^Content-Encoding' '$tmp/h.br' && cmp -s '$tmp/m.br' '$tmp/m1'"
curl -s --max-time 5 -H 'Accept-Encoding: x-gzip2, GZIP' "$u/metrics" -o "$tmp/m.uc" -D "$tmp/h.uc"
check "Accept-Encoding: GZIP (case-insensitive) after another token: gzip" \
	grep -qi '^Content-Encoding: gzip' "$tmp/h.uc"
if command -v promtool >/dev/null; then
	check "promtool check metrics accepts the exposition" \
		bash -c "promtool check metrics <'$tmp/m1' >/dev/null 2>&1"
else
	nok "promtool check metrics: no promtool"
fi

# OpenMetrics when asked, as Prometheus asks: the same samples as the text
# of the same read tick, counters' families without _total, # UNIT,
# _created for the collector's own counters, # EOF last.
om_accept='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
for _ in $(seq 20); do
	curl -s --max-time 5 -o "$tmp/t1" "$u/metrics"
	curl -s --max-time 5 -D "$tmp/h.om" -H "Accept: $om_accept" -o "$tmp/m.om" "$u/metrics"
	curl -s --max-time 5 -o "$tmp/t2" "$u/metrics"
	cmp -s "$tmp/t1" "$tmp/t2" && break
done
check "Accept as Prometheus 2.42 sends it: OpenMetrics 1.0.0, Vary: Accept-Encoding, Accept" \
	bash -c "grep -qi '^Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8' '$tmp/h.om' &&
		grep -qi '^Vary: Accept-Encoding, Accept' '$tmp/h.om'"
check "OpenMetrics: # EOF last; counter statsfd_halt_exits with statsfd_halt_exits_total samples; # UNIT" \
	bash -c "[ \"\$(tail -n 1 '$tmp/m.om')\" = '# EOF' ] &&
		grep -A1 '^# TYPE statsfd_halt_exits counter\$' '$tmp/m.om' | grep -q '^statsfd_halt_exits_total{' &&
		grep -q '^# UNIT statsfd_halt_wait_hist_seconds seconds\$' '$tmp/m.om' &&
		grep -q '^# UNIT statsfd_collector_source_bytes bytes\$' '$tmp/m.om' &&
		! grep -q '^# TYPE [^ ]*_total ' '$tmp/m.om'"
check "OpenMetrics: _created for the collector's counters (its start), none for the sources' stats; build_info an info" \
	bash -c "start=\$(awk '/^process_start_time_seconds /{print \$2}' '$tmp/t1');
		awk -v s=\"\$start\" '/^statsfd_collector_reads_created /{d = \$2 - s; f = d < 0.01 && d > -0.01}
			END {exit !(s > 0 && f)}' '$tmp/m.om' &&
		grep -q '^statsfd_collector_scrapes_created ' '$tmp/m.om' &&
		! grep -q '^statsfd_halt_exits_created' '$tmp/m.om' &&
		grep -q '^# TYPE statsfd_collector_build info\$' '$tmp/m.om' &&
		grep -q '^statsfd_collector_build_info{version=' '$tmp/m.om'"
# The text's samples, bucket bounds as canonical floats ("1.0" for "1");
# the scrape counter and process_* are read when each format is rendered.
grep -v '^#' "$tmp/t1" | grep -Ev '^(statsfd_collector_scrapes_total|process_)' >"$tmp/t1.s"
grep -v '^#' "$tmp/m.om" | grep -v '_created[{ ]' | grep -Ev '^(statsfd_collector_scrapes_total|process_)' |
	sed -E 's/(_bucket\{.*le="[0-9]+)\.0"\}/\1"}/' >"$tmp/om.s"
check "OpenMetrics: the text format's samples of the same read tick ($(wc -l <"$tmp/t1.s") lines)" \
	cmp -s "$tmp/t1.s" "$tmp/om.s"
if command -v promtool >/dev/null; then
	# promtool check metrics reads the text format only; Prometheus'
	# OpenMetrics parser is in its backfill, which wants timestamps.
	awk '/^#/ {print; next} {print $0 " 1700000000"}' "$tmp/m.om" >"$tmp/om.ts"
	check "Prometheus' OpenMetrics parser accepts it (promtool tsdb create-blocks-from openmetrics)" \
		bash -c "promtool tsdb create-blocks-from openmetrics '$tmp/om.ts' '$tmp/om.blocks' >/dev/null 2>&1"
else
	nok "OpenMetrics parser: no promtool"
fi
ct() { curl -s --max-time 5 -D - -o /dev/null -H "Accept: $1" "$u/metrics" | grep -i '^Content-Type:' | tr -d '\r'; }
check "Accept: text preferred by q-value over OpenMetrics: text" \
	test "$(ct 'text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=0.5')" = \
	'Content-Type: text/plain; version=0.0.4; charset=utf-8'
check "Accept: OpenMetrics with q=0: text" \
	test "$(ct 'application/openmetrics-text;version=1.0.0;q=0')" = \
	'Content-Type: text/plain; version=0.0.4; charset=utf-8'
check "Accept: OpenMetrics of a version we do not speak: text" \
	test "$(ct 'application/openmetrics-text;version=2.0.0')" = \
	'Content-Type: text/plain; version=0.0.4; charset=utf-8'
curl -s --max-time 5 -D "$tmp/h.omgz" -H "Accept: $om_accept" -H 'Accept-Encoding: gzip' \
	-o "$tmp/m.omgz" "$u/metrics"
check "OpenMetrics and gzip: Content-Encoding gzip of an OpenMetrics body" \
	bash -c "grep -qi '^Content-Encoding: gzip' '$tmp/h.omgz' && gzip -dc '$tmp/m.omgz' | tail -n 1 | grep -qx '# EOF'"
stop

# 64 idle connections from one address cannot starve scrapes: at most
# --http-max-per-ip of them are kept, others get in at once, and the
# attacker's own address gets in after --http-idle-timeout.
start limits --interval 200 --listen :0 --http-max-per-ip 4 \
	--http-max-connections 12 --http-idle-timeout 2
lp=${ports[0]}
idle=()
for i in $(seq 64); do
	exec {fd}<>"/dev/tcp/127.0.0.1/$lp" && idle+=("$fd")
done
sleep 0.5
# The dual-stack socket sees IPv4 peers as [::ffff:127.0.0.1].
held=$(ss -Htn state established "( sport = :$lp )" 2>/dev/null | grep -c '127\.0\.0\.1\]*:')
check "64 idle connections from 127.0.0.1: the collector keeps at most 4 ($held)" \
	test "$held" -ge 1 -a "$held" -le 4
# What each may hold in the kernel: the collector's side of every
# connection has a send buffer ("tb" in ss -m) of at most 2 x 128 KiB,
# where autotuning would allow tcp_wmem's 4 MiB.
tbs=$(ss -Htnm state established "( sport = :$lp )" 2>/dev/null |
	grep -o 'tb[0-9]*' | tr -d tb | sort -n | tail -n 1)
check "their send buffers are capped: SO_SNDBUF 128 KiB (largest tb ${tbs:-none} <= 262144)" \
	test -n "$tbs" -a "${tbs:-0}" -le 262144
t0=$(date +%s%N)
c2=$(code "http://127.0.0.1:$lp/metrics" --interface 127.0.0.2)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "meanwhile a scrape from 127.0.0.2 answers 200 in $ms ms (bound 1000)" \
	test "$c2" = 200 -a "$ms" -lt 1000
until_200 "http://127.0.0.1:$lp/metrics"
check "a scrape from 127.0.0.1 itself answers 200 once idle ones time out: $ms ms (bound 4000)" \
	test "$c1" = 200 -a "$ms" -lt 4000
for fd in "${idle[@]}"; do exec {fd}>&-; done
# Over the global limit: 4 idle connections from each of 127.0.0.3..5 fill
# the 12.
idle_from "$lp" 4 3 4 5
logged=$(grep -c 'http: ' "$tmp/limits.log")
check "refused connections logged at most 10 a second, the rest counted ($logged lines)" \
	bash -c "[ '$logged' -le 60 ] && grep -q 'messages not logged' '$tmp/limits.log'"
check "--http-max-connections 12 reached: a 13th address is refused" \
	test "$(code "http://127.0.0.1:$lp/metrics" --interface 127.0.0.6 --max-time 1)" = 000
until_200 "http://127.0.0.1:$lp/metrics" --interface 127.0.0.6
check "and answered once the idle connections time out: $ms ms (bound 4000)" \
	test "$c1" = 200 -a "$ms" -lt 4000
stop

# --http-max-connections counts every address together.
start global --interval 200 --listen 127.0.0.1:0 --listen 127.0.0.1:0 \
	--http-max-connections 4 --http-idle-timeout 2
idle_from "${ports[0]}" 4 7
check "--http-max-connections 4 filled on one address: the other refuses too" \
	test "$(code "http://127.0.0.1:${ports[1]}/metrics" --max-time 1)" = 000
until_200 "http://127.0.0.1:${ports[1]}/metrics"
check "and answers once they time out" test "$c1" = 200
stop

# TLS and basic auth.  A CA, a server certificate for 127.0.0.1, a client
# certificate from the CA and one self-signed.
(
	cd "$tmp" || exit 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout ca.key -out ca.pem -days 2 -subj /CN=statsfd-test-ca
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout server.key -out server.csr -subj /CN=127.0.0.1
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
		-out server.pem -days 2 -extfile san.ext
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout client.key -out client.csr -subj /CN=prometheus
	openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
		-out client.pem -days 2
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout rogue.key -out rogue.pem -days 2 -subj /CN=prometheus
) >"$tmp/openssl.log" 2>&1
check "openssl made the certificates" test -s "$tmp/rogue.pem"
# tlsconf CERT KEY [CA [TYPE]]: $tmp/t.yml, TLS with CERT and KEY, and
# with a CA: client certificates checked (client_auth_type TYPE, by
# default RequireAndVerifyClientCert).
tlsconf() {
	printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$1" "$2" >"$tmp/t.yml"
	[ -z "${3:-}" ] || printf '  client_auth_type: %s\n  client_ca_file: %s\n' \
		"${4:-RequireAndVerifyClientCert}" "$3" >>"$tmp/t.yml"
}
# Every file the web config names is read at startup; each failure stops it.
tlsconf "$tmp/server.pem" "$tmp/nokey.pem"
bad "--web.config.file: $tmp/nokey.pem: No such file or directory" \
	"a key_file that does not exist" --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"
tlsconf "$tmp/server.pem" "$tmp/server.key" "$tmp/noca.pem"
bad "--web.config.file: $tmp/noca.pem: No such file or directory" \
	"a client_ca_file that does not exist" --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"
: >"$tmp/empty.pem"
tlsconf "$tmp/empty.pem" "$tmp/server.key"
bad "--web.config.file: $tmp/empty.pem: cannot read (empty, or larger than 1048576 bytes)" \
	"an empty cert_file" --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"
head -c 1100000 /dev/zero | tr '\0' 'A' >"$tmp/huge.pem"
tlsconf "$tmp/server.pem" "$tmp/huge.pem"
bad "--web.config.file: $tmp/huge.pem: cannot read (empty, or larger than 1048576 bytes)" \
	"a key_file over 1 MiB" --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"
tlsconf "$tmp/server.pem" "$tmp/ca.pem"
bad "http: cannot listen on 127.0.0.1:0" \
	"a key_file that is a certificate" --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"

cat >"$tmp/web.yml" <<EOF
# node_exporter's format
tls_server_config:
  cert_file: $tmp/server.pem
  key_file: $tmp/server.key
basic_auth_users:
  alice: '$hash'
EOF
# Root's only: the collector reads them before it drops to --user.
chmod 0600 "$tmp/web.yml" "$tmp/server.key"
start tls --interval 200 --listen 127.0.0.1:0 --web.config.file "$tmp/web.yml"
s=https://127.0.0.1:${ports[0]}
check "TLS + basic auth: the right password 200" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" -u alice:secret)" = 200
check "TLS + basic auth: the right password again (remembered digest) 200" \
	test "$(code "$s/healthz" --cacert "$tmp/ca.pem" -u alice:secret)" = 200
check "a wrong password: 401" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" -u alice:Secret)" = 401
check "an unknown user: 401" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" -u bob:secret)" = 401
curl -s -D "$tmp/h.401" -o /dev/null --max-time 5 --cacert "$tmp/ca.pem" "$s/metrics"
check "no credentials: 401 with WWW-Authenticate: Basic" \
	bash -c "grep -q '^HTTP/1.1 401' '$tmp/h.401' && grep -qi '^WWW-Authenticate: Basic' '$tmp/h.401'"
check "/healthz needs the credentials too: 401" \
	test "$(code "$s/healthz" --cacert "$tmp/ca.pem")" = 401
check "plain HTTP to the TLS port gets no HTTP answer" \
	test "$(code "http://127.0.0.1:${ports[0]}/metrics" -u alice:secret)" = 000
check "a client that does not trust the server's CA fails" \
	test "$(code "$s/metrics" -u alice:secret)" = 000
check "TLS 1.1 is not served" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" -u alice:secret --tls-max 1.1 --tlsv1.0)" = 000
stop

tlsconf "$tmp/server.pem" "$tmp/server.key" "$tmp/ca.pem"
echo "  min_version: TLS13" >>"$tmp/t.yml"
start mtls --interval 200 --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"
s=https://127.0.0.1:${ports[0]}
check "RequireAndVerifyClientCert: a certificate from the CA 200" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" --cert "$tmp/client.pem" --key "$tmp/client.key")" = 200
check "RequireAndVerifyClientCert: no certificate, the handshake fails" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem")" = 000
c=$(code "$s/metrics" --cacert "$tmp/ca.pem" --cert "$tmp/rogue.pem" --key "$tmp/rogue.key")
check "RequireAndVerifyClientCert: a self-signed certificate, the handshake fails" \
	test "$c" = 000
check "min_version TLS13: TLS 1.2 is not served" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" --cert "$tmp/client.pem" --key "$tmp/client.key" --tls-max 1.2)" = 000
stop

tlsconf "$tmp/server.pem" "$tmp/server.key" "$tmp/ca.pem" VerifyClientCertIfGiven
start ifgiven --interval 200 --listen 127.0.0.1:0 --web.config.file "$tmp/t.yml"
s=https://127.0.0.1:${ports[0]}
check "VerifyClientCertIfGiven: no certificate 200" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem")" = 200
check "VerifyClientCertIfGiven: a certificate from the CA 200" \
	test "$(code "$s/metrics" --cacert "$tmp/ca.pem" --cert "$tmp/client.pem" --key "$tmp/client.key")" = 200
c=$(code "$s/metrics" --cacert "$tmp/ca.pem" --cert "$tmp/rogue.pem" --key "$tmp/rogue.key")
check "VerifyClientCertIfGiven: a self-signed certificate 403" test "$c" = 403
stop

# basic_auth_users alone: plain HTTP with authentication; an empty file.
printf 'basic_auth_users:\n  alice: %s\n' "'$hash'" >"$tmp/auth.yml"
start auth --interval 200 --listen 127.0.0.1:0 --web.config.file "$tmp/auth.yml"
u=http://127.0.0.1:${ports[0]}
check "basic auth without TLS: no credentials 401, the right ones 200" \
	test "$(code "$u/metrics")/$(code "$u/metrics" -u alice:secret)" = 401/200
stop
# bcrypt CPU per address: 3 ms a second (6 ms saved up at most, a few
# checks at cost 5).  The right password first: its digest is remembered.
start auth --interval 200 --listen 127.0.0.1:0 --web.config.file "$tmp/auth.yml" \
	--http-auth-cpu-per-ip 3
u=http://127.0.0.1:${ports[0]}
check "the right password, once: 200" test "$(code "$u/metrics" -u alice:secret)" = 200
# Guessing passwords: 16 wrong ones on one connection, at once.
urls=(); for i in $(seq 16); do urls+=(-o /dev/null "$u/metrics"); done
sleep 1
codes=$(curl -s --max-time 20 -u alice:guess \
	-w '%{http_code}:%header{retry-after}\n' "${urls[@]}")
n401=$(grep -c '^401:$' <<<"$codes") n429=$(grep -c '^429:1$' <<<"$codes")
check "16 guesses at once, 3 ms of bcrypt a second for the address: a few checks (401 x $n401), 429 with Retry-After: 1 for the rest (x $n429)" \
	test "$n401" -ge 1 -a "$n401" -le 12 -a $((n401 + n429)) = 16
check "meanwhile the known-good password gets in: 200" \
	test "$(code "$u/metrics" -u alice:secret)" = 200
stop
: >"$tmp/empty.yml"
start empty --interval 200 --listen 127.0.0.1:0 --web.config.file "$tmp/empty.yml"
check "an empty web config: plain HTTP, no authentication, 200" \
	test "$(code "http://127.0.0.1:${ports[0]}/metrics")" = 200
stop

finish
