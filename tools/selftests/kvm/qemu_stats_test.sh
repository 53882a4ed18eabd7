# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh disable=SC3043 # local: busybox sh has it
# qemu_stats_test.sh - Debian's stock QEMU (7.2) on each KVM of make
# check-kvm, sourced by kvm-guest.sh, whose ok, nok and check it uses.
#
# qemu_stats KVM: while KVM (upstream or statsfd) is loaded, QEMU runs
# with -accel kvm, paused before its vCPUs ever ran (-S: every value is
# deterministic), a QMP monitor on its stdin and stdout (fifos; the guest
# has no socket client).  Saved in /tmp/KVM/: QMP's query-stats-schemas and
# query-stats (target vm; target vcpu, every vCPU).  While it runs:
#   - which KVM stats fds QEMU holds before and after query-stats (QEMU
#     before 8.1 holds none: it opens one per query and closes it);
#   - `statsfd show --json --pid` reads the VM and both vCPUs (QEMU is made
#     to ask KVM for their stats fds) and gives QMP's values, and QEMU is
#     left as it was (its fd table, its answers);
#   - statsfd-collector --discover-kvm, root dropping to nobody as
#     deployed, exports the VM and both vCPUs, labelled with QEMU's -name;
#   - QEMU then runs (cont: the vCPUs in KVM_RUN, in SeaBIOS) and
#     `statsfd --pid` and the collector still read both vCPUs, QEMU
#     still answering.
# qemu_stats_compare: the schemas and values of both KVMs are the same.
# Inputs: /usr/bin/qemu-system-x86_64 with /usr/share/seabios/bios-256k.bin
# and /usr/share/qemu/kvmvapic.bin (all that -machine pc opens), jq,
# statsfd, statsfd-collector.
QS_VM=stock-qemu

# qs_replies: QMP's answers so far (events are not counted).
qs_replies() {
	grep -cE '^[{]"(return|error)"' "$qs_dir/qmp.out"
}

# qs_qmp JSON OUT: one QMP command; its answer in OUT; status 0 on "return".
qs_qmp() {
	local i=0
	echo "$1" >&8 || return 1
	qs_nrep=$((qs_nrep + 1))
	while [ "$(qs_replies)" -lt "$qs_nrep" ]; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$qs_pid" 2>/dev/null; then
			echo "no answer to $1" >"$2"
			return 1
		fi
		sleep 0.1
	done
	grep -E '^[{]"(return|error)"' "$qs_dir/qmp.out" | sed -n "${qs_nrep}p" >"$2"
	grep -q '^{"return"' "$2"
}

# qs_fds PATTERN: how many of QEMU's fds name PATTERN (. for all).
qs_fds() {
	local f c=0
	for f in "/proc/$qs_pid/fd/"*; do
		readlink "$f" 2>/dev/null | grep -qE "$1" && c=$((c + 1))
	done
	echo "$c"
}

# qs_dump WHY: what QEMU's threads and ours are doing (state, wait
# channel, system call, kernel stack), as TAP comments.
qs_dump() {
	local p t c
	echo "# stuck: $1"
	for p in /proc/[0-9]*; do
		c=$(cat "$p/comm" 2>/dev/null) || continue
		case $c in qemu*|statsfd*|wget) ;; *) continue ;; esac
		for t in "$p"/task/*; do
			echo "# ${p#/proc/}/${t##*/} $(cat "$t/comm") $(cut -d' ' -f3 "$t/stat")" \
				"wchan $(cat "$t/wchan") syscall $(cat "$t/syscall")" \
				"$(grep TracerPid "$t/status")"
			sed 's/^/#     /' "$t/stack" 2>/dev/null
		done
	done
}

# qs_wait PID SECS WHAT: until PID exits (its status), at most SECS; past
# that its state and QEMU's are shown, PID is killed and 124 returned: a
# step that hangs fails in seconds, and says on what.
qs_wait() {
	local i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt $(($2 * 10)) ]; then
			qs_dump "$3: still running after $2 s"
			kill -9 "$1"
			wait "$1"
			return 124
		fi
		sleep 0.1
	done
	wait "$1"
}

# qs_show OUT: statsfd show --json --pid of QEMU into OUT (errors as
# comments), bounded.
qs_show() {
	statsfd show --json --pid "$qs_pid" >"$1" 2>"$1.err" &
	qs_wait $! 60 "statsfd show --pid"
	sed 's/^/# statsfd: /' "$1.err"
}

# qs_start: QEMU, paused, its QMP ready (capabilities negotiated).
qs_start() {
	local i=0
	rm -f "$qs_dir/qmp.in"
	mkfifo "$qs_dir/qmp.in" || return 1
	/usr/bin/qemu-system-x86_64 -name "guest=$QS_VM" -machine pc -accel kvm \
		-smp 2 -m 64 -nodefaults -display none -S -qmp stdio \
		<"$qs_dir/qmp.in" >"$qs_dir/qmp.out" 2>"$qs_dir/qemu.err" &
	qs_pid=$!
	exec 8>"$qs_dir/qmp.in"
	qs_nrep=0
	until grep -q '^{"QMP"' "$qs_dir/qmp.out"; do
		i=$((i + 1))
		if [ $i -gt 1200 ] || ! kill -0 "$qs_pid" 2>/dev/null; then
			sed 's/^/# qemu: /' "$qs_dir/qemu.err"
			return 1
		fi
		sleep 0.1
	done
	qs_qmp '{"execute":"qmp_capabilities"}' "$qs_dir/caps.json"
}

qs_stop() {
	qs_qmp '{"execute":"quit"}' "$qs_dir/quit.json"
	exec 8>&-
	qs_wait "$qs_pid" 60 "QEMU after quit"
}

# qs_values FILE JQFILTER: {name: value} of each stats list FILTER picks,
# as one JSON array (QMP's and statsfd's alike).  QMP gives a stat of unit
# boolean (blocking, guest_mode) as false or true, statsfd as 0 or 1.
# Without sample_ns (kvm.stats_snapshot=1): the time the values were
# current, which for a paused vCPU is the time of the read.
qs_values() {
	jq -cS "[$2 | .stats | map(select(.name != \"sample_ns\") | {(.name): (.value |
		if type == \"boolean\" then (if . then 1 else 0 end) else . end)}) | add]" "$1"
}

# qs_same_answer A B: two query-stats vcpu answers alike (but sample_ns).
qs_same_answer() {
	[ "$(qs_qmp_vcpus "$1")" = "$(qs_qmp_vcpus "$2")" ]
}

# qs_qmp_vcpus FILE: the vCPU answers of query-stats, by QOM path (QEMU
# creates the vCPUs first: device[N] is vCPU N).
qs_qmp_vcpus() {
	qs_values "$1" '.return | sort_by(."qom-path" | ltrimstr("/machine/unattached/device[") | rtrimstr("]") | tonumber) | .[]'
}

# qs_cli_same DIR: statsfd --pid read the VM and 2 vCPUs, with QMP's
# values (all in DIR).
qs_cli_same() {
	local vm vcpus
	vm=$(qs_values "$1/cli.json" '.[] | select(.provider == "kvm" and .target == "vm")')
	vcpus=$(qs_values "$1/cli.json" 'sort_by(.vcpu) | .[] | select(.provider == "kvm" and .target == "vcpu")')
	echo "vm: statsfd $(echo "$vm" | head -c 300)"
	echo "vm: qmp     $(qs_values "$1/qmp-vm.json" '.return[]' | head -c 300)"
	echo "vcpus: statsfd $(echo "$vcpus" | head -c 300)"
	echo "vcpus: qmp     $(qs_qmp_vcpus "$1/qmp-vcpu.json" | head -c 300)"
	[ "$(echo "$vcpus" | jq length)" = 2 ] &&
		[ "$vm" = "$(qs_values "$1/qmp-vm.json" '.return[]')" ] &&
		[ "$vcpus" = "$(qs_qmp_vcpus "$1/qmp-vcpu.json")" ]
}

# qs_scrape PORT FILE: the collector's exposition, bounded (not with
# wget -T: Debian's busybox 1.35 wget crashes with it).
qs_scrape() {
	wget -q -O "$2" "http://127.0.0.1:$1/metrics" &
	qs_wait $! 20 "wget of the collector's /metrics"
}

# qs_exported FILE: a VM series and series of vCPUs 0 and 1, labelled
# vm=$QS_VM (the -name), from KVM's stats.
qs_exported() {
	local k
	k=$(grep -E '^kvm_[a-z0-9_]+[{]' "$1" | grep "vm=\"$QS_VM\"")
	echo "$k" | grep -vq 'vcpu="' &&
		echo "$k" | grep -q 'vcpu="0"' && echo "$k" | grep -q 'vcpu="1"'
}

# qs_collector KVM STATE: --discover-kvm against QEMU (STATE: paused or
# running, naming its files in $qs_dir).
qs_collector() {
	local col port i=0 c="$qs_dir/col-$2"
	chmod 1777 "$qs_dir"
	statsfd-collector --socket "$c.sock" --listen 127.0.0.1:0 \
		--port-file "$c.port" --interval 200 --discover-kvm \
		--discover-interval 200 --user nobody --verbose 2>"$c.log" &
	col=$!
	while ! [ -s "$c.port" ] && [ $i -lt 300 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	port=$(cat "$c.port" 2>/dev/null)
	i=0
	until qs_scrape "$port" "$c.prom" && qs_exported "$c.prom"; do
		i=$((i + 1))
		[ $i -gt 60 ] && break
		sleep 0.5
	done
	if qs_exported "$c.prom"; then
		ok "$1: qemu $2: statsfd-collector --discover-kvm (as nobody, CAP_SYS_PTRACE) exports its VM and vCPUs 0 and 1, vm=\"$QS_VM\""
	else
		nok "$1: qemu $2: statsfd-collector --discover-kvm exports its VM and vCPUs"
		sed 's/^/# collector: /' "$c.log" | tail -n 20
	fi
	grep 'discover:' "$c.log" | head -n 8 | sed 's/^/# collector: /'
	echo "# $1: exported: $(grep -cE "^kvm_[a-z0-9_]+[{].*vm=\"$QS_VM\"" "$c.prom") kvm series"
	kill "$col"
	qs_wait "$col" 30 "statsfd-collector after SIGTERM"
}

qs_stats_fds='anon_inode:kvm-v[a-z]*-stats'

qs_query_stats() {
	qs_qmp '{"execute":"query-stats-schemas"}' "$qs_dir/qmp-schemas.json" &&
		qs_qmp '{"execute":"query-stats","arguments":{"target":"vm"}}' "$qs_dir/qmp-vm.json" &&
		qs_qmp '{"execute":"query-stats","arguments":{"target":"vcpu"}}' "$qs_dir/qmp-vcpu.json" &&
		jq -e '(.return | length) == 2 and all(.return[]; (.stats | length) > 10)' \
			"$qs_dir/qmp-vcpu.json" >/dev/null &&
		jq -e '(.return | length) == 1 and (.return[0].stats | length) > 10' \
			"$qs_dir/qmp-vm.json" >/dev/null
}

qemu_stats() {
	local kvm="$1" before after nfds ver want
	qs_dir=/tmp/$kvm
	mkdir -p "$qs_dir"
	if ! qs_start; then
		nok "$kvm: qemu: Debian's QEMU with -accel kvm, paused, answers QMP"
		kill "$qs_pid" 2>/dev/null
		return
	fi
	ok "$kvm: qemu: Debian's QEMU with -accel kvm, paused, answers QMP"
	grep '^{"QMP"' "$qs_dir/qmp.out" | sed 's/^/# /'
	qs_qmp '{"execute":"query-kvm"}' "$qs_dir/kvm.json"
	check "$kvm: qemu: query-kvm: enabled, present" \
		jq -e '.return == {"enabled": true, "present": true}' "$qs_dir/kvm.json"
	before=$(qs_fds "$qs_stats_fds")
	echo "# $kvm: qemu pid $qs_pid: $(qs_fds 'anon_inode:kvm-vm$') VM fd, $(qs_fds 'anon_inode:kvm-vcpu:') vCPU fds"
	# Not through check: its subshell would lose the count of answers.
	if qs_query_stats; then
		ok "$kvm: qemu: query-stats-schemas, query-stats vm and vcpu (2 vCPUs) answered"
	else
		nok "$kvm: qemu: query-stats-schemas, query-stats vm and vcpu (2 vCPUs) answered"
	fi
	after=$(qs_fds "$qs_stats_fds")
	# QEMU 8.1 opens a stats fd per vCPU when it creates it and keeps it.
	ver=$(grep '^{"QMP"' "$qs_dir/qmp.out" | jq -r '.QMP.version.qemu | .major * 100 + .minor')
	want=0
	[ "${ver:-0}" -ge 801 ] && want=2
	echo "# $kvm: qemu $ver: KVM stats fds held: $before before query-stats, $after after"
	check "$kvm: qemu: holds $want KVM stats fds before and after query-stats (QEMU before 8.1 opens one per query and closes it)" \
		test "$before $after" = "$want $want"

	nfds=$(qs_fds .)
	qs_show "$qs_dir/cli.json"
	check "$kvm: qemu: statsfd --pid reads its VM and 2 vCPUs with QMP's values (stats fds made by QEMU)" \
		qs_cli_same "$qs_dir"
	check "$kvm: qemu: statsfd --pid leaves QEMU's fd table as it was ($nfds fds)" \
		test "$(qs_fds .)" = "$nfds"
	qs_qmp '{"execute":"query-stats","arguments":{"target":"vcpu"}}' "$qs_dir/qmp-vcpu-again.json"
	check "$kvm: qemu: query-stats vcpu again after statsfd --pid: the same answer" \
		qs_same_answer "$qs_dir/qmp-vcpu.json" "$qs_dir/qmp-vcpu-again.json"

	qs_collector "$kvm" paused
	qs_qmp '{"execute":"query-status"}' "$qs_dir/status.json"
	check "$kvm: qemu: still paused and answering after the collector" \
		jq -e '.return.status == "prelaunch"' "$qs_dir/status.json"

	# Running: each vCPU thread in KVM_RUN (SeaBIOS, then no boot disk).
	qs_qmp '{"execute":"cont"}' "$qs_dir/cont.json" ||
		echo "# $kvm: qemu: cont: $(cat "$qs_dir/cont.json")"
	sleep 2
	qs_show "$qs_dir/cli-run.json"
	check "$kvm: qemu: running (vCPU threads in KVM_RUN), statsfd --pid reads its 2 vCPUs" \
		jq -e '[.[] | select(.provider == "kvm" and .target == "vcpu")] | length == 2' \
		"$qs_dir/cli-run.json"
	# As nobody: the vCPU threads found by their registers, stopped a moment.
	qs_collector "$kvm" running
	qs_qmp '{"execute":"query-status"}' "$qs_dir/status-run.json"
	check "$kvm: qemu: still running and answering" \
		jq -e '.return.status == "running"' "$qs_dir/status-run.json"
	qs_stop
}

# What differs between two runs of the same paused QEMU without a fault of
# KVM's: what the host did to the vCPU threads during their ioctls
# (kvm_stats_compare.c's volatile_stats[]), and times (unit seconds).
QS_VOLATILE='["exits", "irq_exits", "preemption_reported", "preemption_other", "host_state_reload", "fpu_reload"]'

# qs_strip KVM TARGET: its query-stats answer for TARGET (vm, vcpu) as
# [{name: value}] by vCPU, but the volatile stats and the times.
qs_strip() {
	local times
	times=$(jq -c '[.return[].stats[] | select(.unit == "seconds") | .name] | unique' \
		"/tmp/$1/qmp-schemas.json")
	jq -cS --argjson vol "$QS_VOLATILE" --argjson times "$times" '
		[.return | sort_by(."qom-path" // "") | .[] | .stats |
		 map(select(.name as $n | ($vol + $times) | index($n) | not) |
		     {(.name): .value}) | add]' "/tmp/$1/qmp-$2.json"
}

# qs_same TARGET: both KVMs' answers for TARGET alike but for what may
# differ; every stat that differs is named (volatile ones as comments).
qs_same() {
	qs_strip upstream "$1" >"/tmp/qmp-$1.upstream"
	qs_strip statsfd "$1" >"/tmp/qmp-$1.statsfd"
	jq -rn --slurpfile a "/tmp/upstream/qmp-$1.json" --slurpfile b "/tmp/statsfd/qmp-$1.json" '
		[$a[0].return, $b[0].return] | map(sort_by(."qom-path" // "")) as [$x, $y] |
		range(0; $x | length) as $i | $x[$i].stats[] | . as $s |
		($y[$i].stats[] | select(.name == $s.name) | .value) as $v |
		select($v != $s.value) |
		"\($x[$i]."qom-path" // "vm") \($s.name): \($s.value) upstream, \($v) statsfd"'
	cmp -s "/tmp/qmp-$1.upstream" "/tmp/qmp-$1.statsfd"
}

# The QMP answers of both KVMs: the same schemas, the same values.
qemu_stats_compare() {
	check "qemu: query-stats-schemas: statsfd's KVM answers as upstream's" \
		cmp /tmp/upstream/qmp-schemas.json /tmp/statsfd/qmp-schemas.json
	check "qemu: query-stats vm: statsfd's KVM gives upstream's values (but host-driven counts and times)" \
		qs_same vm
	check "qemu: query-stats vcpu: statsfd's KVM gives upstream's values (but host-driven counts and times)" \
		qs_same vcpu
	echo "# qemu: $(jq '[.return[].stats | length] | add' /tmp/statsfd/qmp-vm.json) VM stats, $(jq '[.return[].stats | length] | add' /tmp/statsfd/qmp-vcpu.json) vCPU stats (2 vCPUs) compared"
}
