#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# statsfd tools end to end in the guest, on the real statsfd_vm module:
# statsfd-collector running as uid nobody, statsfd-vmm creating VMs and
# handing their stats fds over, a Prometheus scrape over HTTP (busybox
# wget), filtered queries, the CLI's --device, --pid and watch modes, and
# VM teardown dropping the sources; views (--stats of the CLI and of the
# collector, through STATSFD_IOC_VIEW) and events (a vCPU added to a
# running VM appearing in `watch`, a VM torn down disappearing from
# `watch` and, its VMM keeping the connection, from the collector by its
# stats fds' hangup alone).  Runs under busybox sh; prints TAP
# with its plan last, and exits 1 if any test is not ok.  Only VM web,
# whose I/O exits are checked, runs the io workload; the other VMs run
# idle (one 50 ms halt per run: halt_exits still moves), since busy or
# often-waking vCPU threads only slow the guest down.  The guest loads
# statsfd_vm.ko and installs the tools, so a missing device or tool is a
# failure here, never a skip.
tmp=/tmp/tools-e2e
cpid= vpid= v2pid= c2pid= v3pid= wpid=

. "$(dirname "$0")/lib/tap.sh"
cleanup() {
	stop_pids $wpid $v3pid $c2pid $v2pid $vpid $cpid
	rm -rf "$tmp"
}
on_exit cleanup
metric() { # name{labels} -> value (0 when absent)
	metric_at "$port" "$1"
}
metric_at() { # port name{labels} -> value (0 when absent)
	wget -q -O - "http://127.0.0.1:$1/metrics" 2>/dev/null |
		awk -v k="$2" 'index($0, k " ") == 1 { v = $2 } END { print v + 0 }'
}

require "tools end to end" /dev/statsfd_vm statsfd statsfd-collector statsfd-vmm
scratch_dir "$tmp"

collector_start "$tmp" 100 "collector starts" --interval 200
ok "collector listening on 127.0.0.1:$port"
check "collector runs as uid nobody (65534)" \
	grep -q '^Uid:[[:space:]]*65534' /proc/$cpid/status

statsfd-vmm --vms 2 --vcpus 2 --workload io,idle --names web,db \
	--collector "$tmp/c.sock" --ready-file "$tmp/ready" >"$tmp/vmm.log" 2>&1 &
vpid=$!
wait_started 200 "$tmp/ready" "$tmp/vmm.log" "statsfd-vmm starts and registers"
ok "statsfd-vmm registered 2 VMs x 2 vCPUs"
# Until both VMs have counted (the checks below then say what is wrong).
waitfor 300 sh -c "wget -q -O - http://127.0.0.1:$port/metrics | grep -q '^statsfd_io_exits_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"web\",vcpu=\"0\"} [1-9]' && wget -q -O - http://127.0.0.1:$port/metrics | grep -q '^statsfd_halt_exits_sum_total{provider=\"statsfd_vm\",target=\"vm\",vm=\"db\"} [1-9]'"

wget -q -O "$tmp/metrics" "http://127.0.0.1:$port/metrics"
check "scrape: vCPU io_exits of VM web counting" \
	test "$(metric 'statsfd_io_exits_total{provider="statsfd_vm",target="vcpu",vm="web",vcpu="0"}')" -gt 0
check "scrape: VM aggregate over vCPUs (halt_exits_sum of db)" \
	test "$(metric 'statsfd_halt_exits_sum_total{provider="statsfd_vm",target="vm",vm="db"}')" -gt 0
check "scrape: halt wait histogram in seconds with +Inf bucket" \
	grep -q '^statsfd_halt_wait_hist_seconds_bucket{provider="statsfd_vm",target="vcpu",vm="db",vcpu="1",le="+Inf"}' "$tmp/metrics"
check "scrape: 6 sources" test "$(metric statsfd_collector_sources)" -eq 6

statsfd query --collector "$tmp/c.sock" --target vcpu --vm web --vcpus 1 \
	--names io_exits,halt_exits >"$tmp/q.json"
check "query-stats filtered to VM web, vCPU 1, two stats" \
	sh -c "grep -c '\"source\"' '$tmp/q.json' | grep -qx 1 && grep -q '\"vcpu\": 1' '$tmp/q.json' && grep -c '\"name\"' '$tmp/q.json' | grep -qx 2"
statsfd query --collector "$tmp/c.sock" --schemas >"$tmp/s.json"
check "query-stats-schemas: vm and vcpu schemas of statsfd_vm" \
	sh -c "grep -q '\"target\": \"vcpu\"' '$tmp/s.json' && grep -q 'halt_wait_hist' '$tmp/s.json'"
statsfd query --collector "$tmp/c.sock" --sources >"$tmp/src.json"
check "query-sources: the VMM's pid recorded" grep -q "\"pid\": $vpid" "$tmp/src.json"

statsfd list --device >"$tmp/dev.txt" 2>&1
check "statsfd --device: system stats plus every VM and vCPU (7 sources)" \
	test "$(grep -c 'provider statsfd_vm' "$tmp/dev.txt")" -eq 7
statsfd list --pid "$vpid" >"$tmp/pid.txt" 2>&1
check "statsfd --pid: the VMM's 2 VMs and 4 vCPUs via pidfd_getfd" \
	test "$(grep -c 'from pid' "$tmp/pid.txt")" -eq 6
timeout 30 statsfd watch --pid "$vpid" --count 2 --interval 0.5 >"$tmp/watch.txt" 2>&1
check "statsfd watch --pid: 2 refreshes with io_exits rates" \
	sh -c "grep -c '^statsfd watch:' '$tmp/watch.txt' | grep -qx 2 && grep -q '^  io_exits ' '$tmp/watch.txt'"
statsfd show --prometheus --device >"$tmp/cli-prom.txt" 2>/dev/null
check "statsfd show --prometheus --device" grep -q '^statsfd_vms_alive{provider="statsfd_vm",target="system",' "$tmp/cli-prom.txt"

# VM teardown inside a running VMM: only that VM's sources go.
statsfd-vmm --vms 2 --vcpus 1 --workload idle --names t0,t1 --teardown 0:1 \
	--collector "$tmp/c.sock" --ready-file "$tmp/ready2" >"$tmp/vmm2.log" 2>&1 &
v2pid=$!
check "second statsfd-vmm starts and registers" waitfor 200 test -s "$tmp/ready2"
check "teardown of VM t0 drops its 2 sources, t1 stays" \
	waitfor 50 sh -c "statsfd query --collector '$tmp/c.sock' --sources | grep -q '\"vm\": \"t1\"' && ! statsfd query --collector '$tmp/c.sock' --sources | grep -q '\"vm\": \"t0\"'"

# Views: --stats reads through STATSFD_IOC_VIEW, one stat per source here
# (io_exits of the vCPUs, io_exits_sum of the VMs).
statsfd list --pid "$vpid" --stats io_exits,io_exits_sum >"$tmp/view-list.txt" 2>"$tmp/view-list.err"
check "statsfd --stats: 2 VMs and 4 vCPUs each read through a kernel view of 1 stat" \
	test "$(grep -c ' 1 stats, 8 data bytes, through a view;' "$tmp/view-list.txt")" -eq 6
check "statsfd --stats: no fallback note (the module has views)" \
	sh -c "! grep -q 'have no views' '$tmp/view-list.err'"
statsfd show --pid "$vpid" --stats halt_exits >"$tmp/view-show.txt" 2>&1
check "statsfd show --stats halt_exits: that stat of the 4 vCPUs only" \
	sh -c "[ \$(grep -c '^  halt_exits ' '$tmp/view-show.txt') -eq 4 ] && ! grep -q '^  io_exits ' '$tmp/view-show.txt'"

# Events.  A collector reading through views (--stats) and a VMM whose VM
# h1 gets a second vCPU after 3 s and whose VM h0 is torn down after 5 s
# with its collector connection kept: only the hangup of its stats fds
# tells the collector.  `watch --pid` follows both.
statsfd-collector --socket "$tmp/c2.sock" --socket-mode 0600 \
	--listen 127.0.0.1:0 --port-file "$tmp/port2" --user nobody \
	--interval 200 --stats io_exits,halt_exits 2>"$tmp/collector2.log" &
c2pid=$!
wait_started 100 "$tmp/port2" "$tmp/collector2.log" "collector --stats starts"
port2=$(cat "$tmp/port2")
# The vCPU comes and the VM goes (8 s and 11 s into the VMM's run) only
# after watch has read everything once: the VMM is held stopped from its
# registration until watch's first refresh is out, however long starting
# watch takes in a loaded debug guest (its clock runs on meanwhile, so a
# late resume brings both events at once, 13.5 s of refreshes before
# watch ends).
statsfd-vmm --vms 2 --vcpus 1 --workload idle --names h0,h1 --add-vcpu 1:8 \
	--teardown 0:11 --keep-connection --collector "$tmp/c2.sock" \
	--ready-file "$tmp/ready3" >"$tmp/vmm3.log" 2>&1 &
v3pid=$!
check "third statsfd-vmm (add-vcpu, teardown keeping the connection) registers" \
	waitfor 200 test -s "$tmp/ready3"
kill -STOP "$v3pid"
timeout 180 statsfd watch --pid "$v3pid" --interval 0.5 --count 28 \
	>"$tmp/watch-ev.txt" 2>"$tmp/watch-ev.err" &
wpid=$!
waitfor 600 grep -q '^statsfd watch:' "$tmp/watch-ev.txt"
kill -CONT "$v3pid"
statsfd query --collector "$tmp/c2.sock" --sources >"$tmp/src2.json"
check "collector --stats: vCPUs read through kernel views, waited on for events" \
	sh -c "grep -q '\"view\": \"kernel\"' '$tmp/src2.json' && grep -q '\"events\": true' '$tmp/src2.json' && ! grep -q '\"events\": false' '$tmp/src2.json'"
check "collector --stats: the vCPU stats named are exported, the others not" \
	sh -c "wget -q -O - http://127.0.0.1:$port2/metrics | grep -q '^statsfd_io_exits_total{provider=\"statsfd_vm\",target=\"vcpu\",vm=\"h1\"' && ! wget -q -O - http://127.0.0.1:$port2/metrics | grep -q 'halt_wait_hist'"
check "vCPU 1 added to h1: registered with the collector, the VM's change of children seen" \
	waitfor 200 sh -c "statsfd query --collector '$tmp/c2.sock' --sources | grep -q '\"vcpu\": 1' && [ \$(wget -q -O - http://127.0.0.1:$port2/metrics | awk '/^statsfd_collector_children_changes_total / { print \$2 }') -ge 1 ]"
check "h0 torn down, connection kept: its 2 sources dropped on their hangup" \
	waitfor 200 sh -c "[ \$(wget -q -O - http://127.0.0.1:$port2/metrics | awk '/^statsfd_collector_sources_hung_up_total / { print \$2 }') -eq 2 ] && ! statsfd query --collector '$tmp/c2.sock' --sources | grep -q '\"vm\": \"h0\"'"
check "collector --stats: h1 and its 2 vCPUs stay" \
	test "$(metric_at "$port2" statsfd_collector_sources)" -eq 3
wait "$wpid"
check "statsfd watch --pid: the new vCPU appears (rescan on the VM's POLLPRI)" \
	sh -c "grep -q '^new: .*/vcpu-1' '$tmp/watch-ev.txt' && grep -q 'new source .*/vcpu-1' '$tmp/watch-ev.err'"
check "statsfd watch --pid: the torn-down VM and its vCPU go at once (POLLHUP)" \
	sh -c "grep '^gone (hung up): ' '$tmp/watch-ev.txt' | grep -q '/vcpu-0' && grep -q 'went away (hangup): dropped' '$tmp/watch-ev.err'"
check "statsfd watch --pid: the last refresh shows h1 and its 2 vCPUs only" \
	sh -c "grep '^statsfd watch:' '$tmp/watch-ev.txt' | tail -n 1 | grep -q '^statsfd watch: 3 sources'"
wpid=
kill "$v3pid" "$c2pid"
wait "$v3pid" "$c2pid" 2>/dev/null
v3pid= c2pid=

# The VMM exits: every one of its sources is dropped promptly.
kill "$vpid" "$v2pid"
wait "$vpid" "$v2pid" 2>/dev/null
vpid= v2pid=
check "VMMs gone: all sources dropped" \
	waitfor 30 sh -c "[ \"\$(wget -q -O - http://127.0.0.1:$port/metrics | grep '^statsfd_collector_sources ')\" = 'statsfd_collector_sources 0' ]"
kill "$cpid"
wait "$cpid"
check "collector exits cleanly on SIGTERM" test $? -eq 0
cpid=
finish
