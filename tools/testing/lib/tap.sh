# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh disable=SC3043 # local: busybox sh, dash and bash have it
# tap.sh - the TAP helpers every statsfd shell test sources, in POSIX sh
# (the guests' busybox sh and the host's bash alike):
#   tools/selftests/*.sh     in the test guests, from /usr/libexec/statsfd/lib/
#   tools/tests/*.sh         on the host from here; the KVM ones in the 6.1
#                            guest from /usr/libexec/statsfd-kvm/lib/
#   tools/demo/guest-demo.sh in the demo guest (its waits and clean-up)
#
# Results (numbered; the plan comes last, as the harness reads it):
#   ok DESC, nok DESC          one passed or failed result
#   check DESC CMD...          ok when CMD succeeds, else nok
#   check_quiet DESC CMD...    the same with CMD's standard output dropped
#   finish                     the plan; exit status 1 when anything failed
#   bail DESC                  one failed result and the plan, exit 1 (a
#                              test that cannot go on)
#   skip_all DESC WHY          one skipped result and the plan, exit 0
#   tap_merge PREFIX FILE      the results of the TAP stream in FILE as
#                              results of this one, each named "PREFIX:
#                              NAME", and its comments
# TAP_T0=$(date +%s) after sourcing: each ok also says the seconds since.
#
# Waits are bounded, never open-ended:
#   waitfor TENTHS CMD...      runs CMD until it succeeds, at most TENTHS
#                              times, 0.1 s apart; status 1 when it never did
#   waitfor_secs SECONDS CMD...  the same by the clock, 0.5 s apart (for
#                              slow commands, whose own time counts)
#   wait_started TENTHS FILE LOG DESC   a daemon's start: waits for FILE
#                              (its port or ready file) to be written; if
#                              it never is, bails out with DESC and LOG
#   collector_start DIR TENTHS DESC [ARG...]  statsfd-collector with ARGs as
#                              uid nobody on DIR/c.sock and 127.0.0.1:0, its
#                              port in DIR/port, its log DIR/collector.log;
#                              waits as wait_started does, then sets cpid
#                              and port
#
# Set-up:
#   require DESC NEED...       bails out with "DESC: missing ..." unless
#                              every NEED is there: /dev/NAME a character
#                              device (NAME.ko loaded), anything else a
#                              program in PATH
#   scratch_dir DIR            DIR empty, made anew, readable by all (the
#                              daemons drop to nobody)
#
# Clean-up:
#   on_exit FUNC               FUNC runs when the script exits, also when it
#                              is killed (the guest's TEST_TIMEOUT, ^C), so
#                              daemons stop and modules are not left busy
#   stop_pids PID...           kill and reap background processes (empty
#                              arguments are skipped)
n=0
failed=0
TAP_T0=

ok() {
	n=$((n + 1))
	if [ -n "$TAP_T0" ]; then
		echo "ok $n - $* ($(($(date +%s) - TAP_T0)) s)"
	else
		echo "ok $n - $*"
	fi
}

nok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $*"
}

check() {
	local tap_what="$1"
	shift
	if "$@"; then ok "$tap_what"; else nok "$tap_what"; fi
}

check_quiet() {
	local tap_what="$1"
	shift
	if "$@" >/dev/null; then ok "$tap_what"; else nok "$tap_what"; fi
}

finish() {
	echo "1..$n"
	[ "$failed" -eq 0 ] && exit 0
	exit 1
}

bail() {
	nok "$*"
	finish
}

skip_all() {
	echo "ok $((n + 1)) - $1 # SKIP $2"
	echo "1..$((n + 1))"
	exit 0
}

tap_merge() {
	local tap_line
	while IFS= read -r tap_line; do
		case "$tap_line" in
		"ok "*) ok "$1: ${tap_line#ok * - }" ;;
		"not ok "*) nok "$1: ${tap_line#not ok * - }" ;;
		"#"*) echo "$tap_line" ;;
		esac
	done <"$2"
}

waitfor() {
	local tap_left="$1"
	shift
	while [ "$tap_left" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		tap_left=$((tap_left - 1))
	done
	return 1
}

waitfor_secs() {
	local tap_end="$(($(date +%s) + $1))"
	shift
	while :; do
		"$@" && return 0
		[ "$(date +%s)" -lt "$tap_end" ] || return 1
		sleep 0.5
	done
}

wait_started() {
	waitfor "$1" test -s "$2" && return 0
	nok "$4"
	sed 's/^/# /' "$3"
	finish
}

# shellcheck disable=SC2034 # cpid and port are the caller's
collector_start() {
	local tap_dir="$1" tap_tenths="$2" tap_desc="$3"
	shift 3
	statsfd-collector "$@" --socket "$tap_dir/c.sock" --socket-mode 0600 \
		--listen 127.0.0.1:0 --port-file "$tap_dir/port" --user nobody \
		2>"$tap_dir/collector.log" &
	cpid=$!
	wait_started "$tap_tenths" "$tap_dir/port" "$tap_dir/collector.log" \
		"$tap_desc"
	port=$(cat "$tap_dir/port")
}

require() {
	local tap_what="$1" tap_missing="" tap_need
	shift
	for tap_need in "$@"; do
		case "$tap_need" in
		/dev/*)
			[ -c "$tap_need" ] ||
				tap_missing="$tap_missing $tap_need (${tap_need#/dev/}.ko not loaded)"
			;;
		*)
			command -v "$tap_need" >/dev/null ||
				tap_missing="$tap_missing $tap_need (not in PATH)"
			;;
		esac
	done
	[ -z "$tap_missing" ] || bail "$tap_what: missing$tap_missing"
}

scratch_dir() {
	rm -rf "$1"
	mkdir -p "$1"
	chmod 755 "$1"
}

on_exit() {
	# shellcheck disable=SC2064 # FUNC is expanded now, on purpose
	trap "$1" EXIT
	trap 'exit 1' INT TERM
}

stop_pids() {
	local tap_pid
	for tap_pid in "$@"; do
		[ -n "$tap_pid" ] || continue
		kill "$tap_pid" 2>/dev/null || :
		wait "$tap_pid" 2>/dev/null || :
	done
}
