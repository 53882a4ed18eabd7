# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# scratch.sh - the scratch folder and clean-up of the host tests that start
# daemons, sourced after tap.sh:
#   scratch_tmp NAME MODE   $tmp: a new folder /tmp/statsfd-NAME.XXXXXX with
#                           mode MODE (755: a daemon that drops to nobody
#                           reads it; 1777: it also creates its socket
#                           there).  On exit, also when killed, the
#                           processes in $daemon and in the array pids are
#                           stopped, then $tmp is removed.
daemon=
pids=()

scratch_cleanup() {
	stop_pids "$daemon" "${pids[@]}"
	rm -rf "$tmp"
}

scratch_tmp() {
	tmp=$(mktemp -d "/tmp/statsfd-$1.XXXXXX")
	chmod "$2" "$tmp"
	on_exit scratch_cleanup
}
