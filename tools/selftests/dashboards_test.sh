#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The Grafana dashboards (tools/dashboards/*.json, installed in
# /usr/share/statsfd/dashboards/) against real data, in the guest with
# statsfd_vm.ko and statsfd_host.ko.  Grafana is not in Debian, so this
# does what Grafana would do with them, with jq:
#
# 1. Their JSON model: one Prometheus datasource input (__inputs, as a
#    grafana.com export has) that the datasource variable defaults to;
#    every panel and query variable on that variable; unique panel ids,
#    grid positions inside the 24 columns and not overlapping; every
#    panel but rows has at least one query; every variable a query uses
#    is defined (or one of Grafana's $__rate_interval, $__interval,
#    $__range); each query variable is a label_values(SELECTOR, LABEL).
# 2. Their queries on Prometheus (Debian's 2.42, the copy
#    tools/testing/servers.sh unpacked) scraping every 3 s a
#    statsfd-collector --host fed by statsfd-vmm (2 VMs with a
#    running vCPU each): each query variable is resolved as Grafana does (its
#    selector through /api/v1/series, the first value, or all of them
#    as a regex when it is multi-valued or has "All"), then every
#    panel's every query, the variables and Grafana's intervals
#    substituted, must parse (status "success" from /api/v1/query) and
#    return at least one sample with a finite value, waited for (rate()
#    needs two scrapes in its window) within a bound.
# 3. That this can fail: a metric name misspelt in a real panel's query
#    returns nothing, and a syntax error is refused.
#
# Runs under busybox sh with jq; prints TAP with its plan last, and exits
# 1 if any test is not ok.  The guest loads the modules and make check
# copies prometheus and jq in, so anything missing is a failure.
tmp=/tmp/dashboards-test
dash=$(dirname "$0")/dashboards
cpid='' vpid='' ppid=''
# Grafana's built-in intervals, as Grafana would set them for a 3 s
# scrape interval and a short time range ($__rate_interval is at least
# four scrape intervals; 15 s leaves room for a slow guest).  Scrapes
# every 3 s, not every second: ingesting them costs a loaded TCG guest.
RATE_INTERVAL=15s
INTERVAL=3s
RANGE=60s

. "$(dirname "$0")/lib/tap.sh"
# Each result says when it came (seconds since the start).
TAP_T0=$(date +%s)
cleanup() {
	stop_pids $ppid $vpid $cpid
	rm -rf "$tmp"
}
on_exit cleanup

require dashboards /dev/statsfd_vm /dev/statsfd_host statsfd-collector \
	statsfd-vmm prometheus jq
ls "$dash"/*.json >/dev/null 2>&1 || bail "dashboards: missing $dash/*.json"
scratch_dir "$tmp"

# ---- 1. The JSON model --------------------------------------------------
# model.jq: problems, those of a dashboard, one string each.
cat >"$tmp/model.jq" <<'EOF'
def problems:
def dsref: {type: "prometheus", uid: "${datasource}"};
def allpanels: [.panels[]? | ., (.panels[]?)];
def builtins: ["__rate_interval", "__interval", "__range", "__range_s"];
def refs: [scan("\\$\\{?([A-Za-z_][A-Za-z0-9_]*)") | .[0]];
. as $d
| [.__inputs[]? | select(.type == "datasource" and .pluginId == "prometheus") | .name] as $inputs
| [.templating.list[]?] as $vars
| ($vars | map(.name)) as $names
| allpanels as $panels
| (if (.title | type) != "string" or .title == "" then "no title" else empty end),
  (if (.uid | type) != "string" or .uid == "" or (.uid | length) > 40
   then "uid missing or longer than 40 characters" else empty end),
  (if (.schemaVersion // 0) < 36 then "schemaVersion \(.schemaVersion) below 36" else empty end),
  (if ($inputs | length) != 1 or (.__inputs | length) != 1
   then "__inputs: not exactly one input, a Prometheus datasource" else empty end),
  ($vars | map(select(.type == "datasource"))
   | if length != 1 or .[0].name != "datasource" or .[0].query != "prometheus"
     then "templating: no single datasource variable \"datasource\" of type prometheus"
     elif .[0].current.value != "${\($inputs[0])}"
     then "the datasource variable's default is not the input ${\($inputs[0])}"
     else empty end),
  ($names | group_by(.) | map(select(length > 1)[0])[]
   | "variable \(.) defined twice"),
  ($vars[] | select(.type == "query")
   | if .datasource != dsref then "variable \(.name): datasource is not ${datasource}"
     elif (.query.query | type) != "string"
       or (.query.query | test("^label_values\\(.+, *[a-zA-Z_][a-zA-Z0-9_]*\\)$") | not)
     then "variable \(.name): query is not label_values(SELECTOR, LABEL)"
     elif .definition != .query.query
     then "variable \(.name): definition differs from its query"
     else empty end),
  ($vars[] | select(.type != "datasource" and .type != "query")
   | "variable \(.name): type \(.type) (only datasource and query)"),
  ([$panels[] | .id] | group_by(.) | map(select(length > 1)[0])[]
   | "panel id \(.) used twice"),
  ($panels[]
   | . as $p
   | "panel \(.id // "?") \"\(.title // "")\""
   | . as $where
   | ($p
      | (if (.id | type) != "number" then "\($where): no numeric id" else empty end),
        (if (.title | type) != "string" or (.title == "" and .type != "row")
         then "\($where): no title" else empty end),
        (.gridPos
         | if type != "object" or ([.x, .y, .w, .h] | map(type == "number") | all | not)
           then "\($where): no gridPos {x, y, w, h}"
           elif .x < 0 or .y < 0 or .w < 1 or .h < 1 or .x + .w > 24
           then "\($where): gridPos outside the 24 columns"
           else empty end),
        (if .type == "row" then empty
         elif ([.type] | inside(["timeseries", "stat", "heatmap", "gauge", "bargauge", "table"]) | not)
         then "\($where): panel type \(.type)"
         elif .datasource != dsref then "\($where): datasource is not ${datasource}"
         elif (.targets | type) != "array" or (.targets | length) == 0
         then "\($where): no query"
         else (.targets[]
               | if (.expr | type) != "string" or .expr == ""
                 then "\($where) query \(.refId): no expr"
                 elif .datasource != dsref
                 then "\($where) query \(.refId): datasource is not ${datasource}"
                 else empty end),
              ([.targets[].refId] | group_by(.) | map(select(length > 1)[0])[]
               | "\($where): refId \(.) used twice")
         end))),
  ([$panels[] | select(.gridPos | type == "object")] as $g
   | range(0; $g | length) as $i | range($i + 1; $g | length) as $j
   | $g[$i].gridPos as $a | $g[$j].gridPos as $b
   | select($a.x < $b.x + $b.w and $b.x < $a.x + $a.w
            and $a.y < $b.y + $b.h and $b.y < $a.y + $a.h)
   | "panels \($g[$i].id) and \($g[$j].id) overlap"),
  ([($vars[] | select(.type == "query") | .query.query),
    ($panels[] | .targets[]?.expr | strings)] | map(refs[]) | unique[]
   | select(. as $r | ($names + builtins) | index($r) | not)
   | "undefined variable $\(.)");
EOF
# queries.jq: every query of a dashboard, one JSON object a line.
cat >"$tmp/queries.jq" <<'EOF'
[.panels[]? | ., (.panels[]?)][] | select(.type != "row")
| . as $p | .targets[]?
| {panel: $p.id, title: $p.title, refId, expr}
EOF
# subst.jq: $vars (name -> value) substituted in the string input, as
# ${name} and $name, longest names first (so $__range_s before $__range;
# the model check has refused any name not defined).  split/join, not
# gsub: jq 1.6's gsub takes minutes over a dashboard in a slow guest.
cat >"$tmp/subst.jq" <<'EOF'
reduce ($vars | to_entries | sort_by(-(.key | length)))[] as $v (.;
	split("${\($v.key)}") | join($v.value) | split("$\($v.key)") | join($v.value))
EOF

# One jq over every dashboard: "FILE<TAB>problem" lines, then for each
# file "FILE<TAB>=<TAB>PANELS<TAB>UID<TAB>TITLE" and for each query
# variable "FILE<TAB>var<TAB>NAME<TAB>MULTI<TAB>=ALLVALUE<TAB>QUERY" (jq
# takes seconds to start in a loaded guest: it runs as few times as
# possible).
if ! jq -r "$(cat "$tmp/model.jq")"'
	(input_filename | sub(".*/"; "")) as $f
	| ([.panels[]? | ., (.panels[]?)] | map(select(.type != "row")) | length) as $np
	| (problems | "\($f)\t\(.)"),
	  "\($f)\t=\t\($np)\t\(.uid)\t\(.title)",
	  (.templating.list[]? | select(.type == "query")
	   | "\($f)\tvar\t\(.name)\t\(.multi or .includeAll)\t=\(.allValue // "")\t\(.query.query)")' \
	"$dash"/*.json >"$tmp/model.out" 2>"$tmp/err"; then
	nok "the dashboards are JSON ($(head -c 300 "$tmp/err"))"
	finish
fi
ndash=0
for f in "$dash"/*.json; do
	b=${f##*/}
	ndash=$((ndash + 1))
	grep "^$b	" "$tmp/model.out" | grep -v "^$b	=	" | grep -v "^$b	var	" |
		sed "s/^/# /" >"$tmp/problems"
	cat "$tmp/problems"
	info=$(grep "^$b	=	" "$tmp/model.out")
	np=$(printf '%s\n' "$info" | cut -f 3)
	check_quiet "$b: Grafana's JSON model, ${np:-no} panels ($(printf '%s\n' "$info" | cut -f 5))" \
		sh -c "[ -n '$np' ] && [ ! -s '$tmp/problems' ]"
done
nuid=$(grep '^[^	]*	=	' "$tmp/model.out" | cut -f 4 | sort -u | wc -l)
check_quiet "$ndash dashboards (fleet, VM, host), $nuid uids: unique" \
	sh -c "[ $ndash -ge 3 ] && [ $nuid -eq $ndash ]"

# ---- 2. Real data: collector --host, statsfd-vmm, Prometheus ---------
collector_start "$tmp" 600 "statsfd-collector --host starts" \
	--host --interval 1000
# vm0 halts, polls and wakes up all the time; vm1 idles in long halts:
# every family moves, and the guest's CPUs are left to Prometheus (one
# vCPU each: fewer series for a slow guest to scrape).
statsfd-vmm --vms 2 --vcpus 1 --workload halt,idle --names vm0,vm1 \
	--collector "$tmp/c.sock" --ready-file "$tmp/ready" >"$tmp/vmm.log" 2>&1 &
vpid=$!
wait_started 1000 "$tmp/ready" "$tmp/vmm.log" "statsfd-vmm starts and registers"
ok "collector --host on 127.0.0.1:$port, statsfd-vmm's 2 VMs registered"

cat >"$tmp/prometheus.yml" <<EOC
global:
  scrape_interval: 3s
  scrape_timeout: 3s
  evaluation_interval: 3s
scrape_configs:
  - job_name: statsfd
    static_configs:
      - targets: ['127.0.0.1:$port']
EOC
# A port of our own, free in the guest.
pport=19090
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
ppid=$!
api="http://127.0.0.1:$pport/api/v1"
# get URL FILE: the answer's body, nothing on an HTTP error.
get() { wget -q -O "$2" "$1" 2>/dev/null || { : >"$2"; return 1; }; }
uri() { jq -rn --arg s "$1" '$s | @uri'; }
# The verdict on an answer of /api/v1/query: "ok" (a success with a
# finite sample), "empty" (a success without) or "error".
verdict='if .status != "success" then "error"
	else .data | if .resultType == "vector" then [.result[].value[1]]
		elif .resultType == "scalar" then [.result[1]]
		elif .resultType == "matrix" then [.result[].values[][1]]
		else [] end
	| map(select(. != "NaN" and . != "+Inf" and . != "-Inf"))
	| if length > 0 then "ok" else "empty" end end'
# query EXPR FILE: 0 when the answer is a success with at least one
# finite sample; the answer (or nothing) in FILE.
query() {
	get "$api/query?query=$(uri "$1")" "$2" &&
		jq -e "($verdict) == \"ok\"" "$2" >/dev/null 2>&1
}
if waitfor_secs 300 get "http://127.0.0.1:$pport/-/ready" "$tmp/a"; then
	echo "# Prometheus ready after $(($(date +%s) - TAP_T0)) s"
fi
# The first scrapes in, and rate() has two samples in its window, for a
# vCPU's exits and for the host's CPUs (polled with grep: no jq).
ready=$(uri "rate(statsfd_exits_total{target=\"vcpu\"}[$RATE_INTERVAL]) > 0 and on() rate(node_cpu_seconds_total[$RATE_INTERVAL]) >= 0")
has_data() { get "$api/query?query=$ready" "$tmp/a" && grep -q '"result":\[{' "$tmp/a"; }
if ! waitfor_secs 300 has_data; then
	nok "Prometheus scrapes the collector (rate() of exits and CPU time)"
	# Why: the target's health and last scrape error, what it serves.
	get "$api/targets" "$tmp/targets" &&
		jq -r '.data.activeTargets[] | "# target \(.scrapeUrl): \(.health) \(.lastError)"' "$tmp/targets"
	tail -n 5 "$tmp/prometheus.log" | sed 's/^/# /'
	finish
fi
ok "Prometheus on 127.0.0.1:$pport scrapes it every 3 s, rate() has data"

# Grafana's interpolation of a query variable: label_values(SELECTOR,
# LABEL) is the values of LABEL over the series SELECTOR matches; the
# value taken is the first, or for a multi-valued variable or one with
# "All" every value as a regex (v1|v2), each regex-escaped.  In shell
# (sed), not jq: "NAME<TAB>VALUE" lines in $tmp/vars.tsv.  Then every
# query of the dashboard with the variables substituted, one JSON object
# a line with the query URL-encoded (uri), is added to $tmp/all: one jq
# a dashboard.
# sub_vars STRING: STRING with $NAME and ${NAME} of vars.tsv replaced,
# longest names first.
sub_vars() {
	r=$1
	while IFS='	' read -r k v; do
		e=$(printf '%s\n' "$v" | sed 's/[\\&|]/\\&/g')
		r=$(printf '%s\n' "$r" | sed "s|\\\${$k}|$e|g; s|\\\$$k|$e|g")
	done <<EOV
$(awk -F '\t' '{ print length($1) "\t" $0 }' "$tmp/vars.tsv" | sort -rn | cut -f 2-)
EOV
	printf '%s\n' "$r"
}
# resolve FILE: 0 when every variable of FILE has values.
resolve() {
	b=${1##*/}
	printf '__rate_interval\t%s\n__interval\t%s\n__range\t%s\n__range_s\t%s\n' \
		"$RATE_INTERVAL" "$INTERVAL" "$RANGE" "${RANGE%s}" >"$tmp/vars.tsv"
	grep "^$b	var	" "$tmp/model.out" | cut -f 3- >"$tmp/vars.list"
	shown=
	while IFS='	' read -r name multi allv q; do
		q=$(sub_vars "$q")
		sel=$(printf '%s\n' "$q" | sed -n 's/^label_values(\(.*\), *\([a-zA-Z_][a-zA-Z0-9_]*\))$/\1/p')
		label=$(printf '%s\n' "$q" | sed -n 's/^label_values(\(.*\), *\([a-zA-Z_][a-zA-Z0-9_]*\))$/\2/p')
		get "$api/series?match%5B%5D=$(uri "$sel")" "$tmp/series"
		grep -o "\"$label\":\"[^\"]*\"" "$tmp/series" | sed 's/^[^:]*:"//; s/"$//' |
			sort -u >"$tmp/values"
		if [ ! -s "$tmp/values" ]; then
			echo "# variable $name: label_values($sel, $label): no values"
			return 1
		fi
		if [ "$multi" = true ]; then
			val=${allv#=}
			[ -n "$val" ] || val="($(sed 's/[][\\.+*?()|{}^$]/\\\\&/g' "$tmp/values" | paste -sd '|'))"
		else
			val=$(head -n 1 "$tmp/values")
		fi
		printf '%s\t%s\n' "$name" "$val" >>"$tmp/vars.tsv"
		shown="$shown $name=$val"
	done <"$tmp/vars.list"
	ok "$b: every variable has values:${shown:- none}"
	# vars.tsv as a JSON object for jq.
	sed 's/[\\"]/\\&/g; s/^\([^	]*\)	\(.*\)$/"\1": "\2"/' "$tmp/vars.tsv" |
		paste -sd ',' | sed 's/^/{/; s/$/}/' >"$tmp/vars.json"
	jq -c --slurpfile v "$tmp/vars.json" --arg b "$b" '$v[0] as $vars
		| [.panels[]? | ., (.panels[]?)][] | select(.type != "row")
		| . as $p | .targets[]?
		| {file: $b, panel: $p.id, title: $p.title, refId,
		   expr: (.expr | '"$(cat "$tmp/subst.jq")"')}
		| .uri = (.expr | @uri)' "$1" >>"$tmp/all"
}
: >"$tmp/all"
for f in "$dash"/*.json; do
	resolve "$f" || nok "${f##*/}: every variable has values"
done
nq=$(wc -l <"$tmp/all")
echo "# $nq queries"

# ask TODO: each query of TODO sent to /api/v1/query (its answer, or
# {"status": "http-error"}, in $tmp/r/N), two at a time, then one jq
# judges them all: the lines of TODO with a verdict, "ok" (a success
# with a finite sample), "empty" (a success without) or "error", in
# $tmp/judged.
ask_some() { # FIRST: the queries FIRST, FIRST + 2, ... of $tmp/uris
	awk -v f="$1" 'NR % 2 == f % 2 { print NR " " $0 }' "$tmp/uris" |
		while read -r k u; do
			wget -q -O "$tmp/r/$k" "$api/query?query=$u" 2>/dev/null ||
				echo '{"status": "http-error"}' >"$tmp/r/$k"
		done
}
ask() {
	rm -rf "$tmp/r"
	mkdir "$tmp/r"
	jq -r .uri "$1" >"$tmp/uris"
	ask_some 1 &
	ask_some 2
	wait $!
	(cd "$tmp/r" && jq -c -n --slurpfile q "$1" \
		"[inputs | $verdict] as \$v | range(0; \$q | length) as \$i | \$q[\$i] + {verdict: \$v[\$i]}" \
		$(seq 1 "$(wc -l <"$tmp/uris")")) >"$tmp/judged"
}
# Every query must parse; one with no finite sample yet is asked again
# (a rate() whose window does not yet hold two scrapes) for at most 60 s.
: >"$tmp/bad"
cp "$tmp/all" "$tmp/todo"
start=$(date +%s)
pass=0
while [ -s "$tmp/todo" ]; do
	pass=$((pass + 1))
	ask "$tmp/todo"
	jq -r 'select(.verdict == "error")
		| "\(.file) panel \(.panel) \"\(.title)\" \(.refId): does not parse: \(.expr)"' \
		"$tmp/judged" >>"$tmp/bad"
	echo "# pass $pass: $(wc -l <"$tmp/todo") queries asked, $(grep -c '"verdict":"ok"' "$tmp/judged") with data, $(($(date +%s) - start)) s"
	grep '"verdict":"empty"' "$tmp/judged" >"$tmp/todo"
	[ $(($(date +%s) - start)) -lt 60 ] || break
	[ -s "$tmp/todo" ] && sleep 2
done
jq -r '"\(.file) panel \(.panel) \"\(.title)\" \(.refId): no finite sample: \(.expr)"' \
	"$tmp/todo" >>"$tmp/bad"
sed 's/^/# /' "$tmp/bad"
if [ -s "$tmp/bad" ]; then
	# The scrapes (a failed one makes every series stale), and what
	# there is to query instead.
	query "sum_over_time(up[5m])" "$tmp/up.json"
	query "count_over_time(up[5m])" "$tmp/n.json"
	echo "# scrapes of the last 5 min: $(jq -r '.data.result[0].value[1]' "$tmp/n.json"), of which up: $(jq -r '.data.result[0].value[1]' "$tmp/up.json")"
	wget -q -O - "http://127.0.0.1:$port/metrics" | awk '/^# TYPE / { print $3 }' |
		tr '\n' ' ' | fold -w 160 | sed 's/^/# exported: /'
	echo
fi
check_quiet "all $nq panel queries parse and return data" \
	sh -c "[ $nq -gt 30 ] && [ ! -s '$tmp/bad' ]"

# ---- 3. The check itself can fail ---------------------------------------
# The first query with its first metric name misspelt: it parses, and the
# empty answer is what fails it.
first=$(head -n 1 "$tmp/all" | jq -r .expr)
typo=$(printf "%s\n" "$first" | sed -E 's/(statsfd|node)_/\1x_/')
if [ "$typo" = "$first" ]; then
	nok "a metric name to misspell in $first"
elif query "$typo" "$tmp/typo.json"; then
	nok "a misspelt metric name returns data ($typo): the check cannot fail"
else
	check_quiet "a misspelt metric name parses but returns nothing, so it fails ($typo)" \
		jq -e '.status == "success" and (.data.result | length == 0)' "$tmp/typo.json"
fi
check_quiet "a syntax error is refused: sum(rate(x[1m])" \
	sh -c "! wget -q -O /dev/null '$api/query?query=sum(rate(x%5B1m%5D)' 2>/dev/null"

kill "$ppid" "$vpid" "$cpid"
wait "$ppid" "$vpid" "$cpid" 2>/dev/null
ppid='' vpid='' cpid=''
finish
