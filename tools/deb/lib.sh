# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# lib.sh - what check-deb.sh and check-systemd.sh share.  They source it
# after tools/testing/lib/tap.sh (ok, nok, check, tap_merge) and set $me
# (their name), $logs_at (where a failure leaves its logs) and $ch (the
# root in_ch runs in):
#   say MSG...         a TAP comment with the seconds since this was sourced
#   fatal WHAT [LOG]   a step the rest depends on failed: nok WHAT, LOG's
#                      last 30 lines, the plan and how many failed, exit 1
#   in_ch CMD...       CMD in the root $ch, a clean environment, no service
#                      start
start=$SECONDS

say() { printf '# [%4ss] %s\n' "$((SECONDS - start))" "$*"; }

fatal() {
	nok "$1"
	[ -f "${2:-}" ] && tail -n 30 "$2" | sed 's/^/#   /'
	echo "1..$n"
	echo "# $me: $failed failed; $logs_at"
	exit 1
}

in_ch() {
	chroot "$ch" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
