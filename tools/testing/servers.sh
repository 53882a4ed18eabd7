#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# servers.sh - the servers the tests run (Debian's Prometheus with promtool,
# and node_exporter), unpacked into the per-user cache and never installed
# on the host.
#
# Usage: servers.sh KCACHE       prints the bin directory to put first in
#                                PATH: prometheus, promtool and
#                                prometheus-node-exporter
#        servers.sh --packages   prints the packages it unpacks, one a line
#
# Why not apt-get install prometheus prometheus-node-exporter: their
# packages enable (and, where systemd runs, start) a Prometheus server on
# :9090 and node_exporter on :9100 for good, and create their users; a
# developer's machine running our tests must not start listening on two
# ports.  The tests only need the binaries (Go programs needing nothing but
# libc), so `apt-get download` + `dpkg-deb -x` gives them, as stock.sh does
# for the stock kernel.  Nothing of these packages' maintainer scripts
# runs, so no unit, user or /etc file appears.  tools/tests/host_state_test.sh
# proves the host keeps no enabled unit of these packages and no listener
# of ours (make check runs it last).
#
# The directory is named after both package versions, so an archive update
# unpacks the new ones beside the old (a test still running the old binary
# keeps it); a warm run whose archive candidates did not change, or with no
# package lists at all, is a no-op.
set -euo pipefail

PACKAGES=(prometheus prometheus-node-exporter)
BINS=(prometheus promtool prometheus-node-exporter)

if [ "${1:-}" = "--packages" ]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi
usage="usage: servers.sh KCACHE | servers.sh --packages"
kcache=$(realpath -m "${1:?$usage}")
[ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }

# candidates - the versions apt would fetch, one a line in PACKAGES' order
# ("" without package lists); one apt-cache run, it costs about a second.
candidates() {
	local out p
	out=$(apt-cache policy "${PACKAGES[@]}" 2>/dev/null || true)
	for p in "${PACKAGES[@]}"; do
		awk -v p="$p:" '$0 == p { in_p = 1; next }
			/^[^ ]/ { in_p = 0 }
			in_p && $1 == "Candidate:" && $2 != "(none)" { print $2 }' <<<"$out" |
			head -n 1 | grep . || echo
	done
}

# complete DIR - every binary is there and runs.
complete() {
	local b
	for b in "${BINS[@]}"; do
		[ -x "$1/usr/bin/$b" ] || return 1
	done
}

mkdir -p "$kcache"
exec 9>"$kcache/servers.lock"
flock 9

mapfile -t vers < <(candidates)
name=servers-$(IFS=_; echo "${vers[*]}" | tr ':+~' '...')
root=$kcache/$name
if [ -z "${vers[0]}" ] || [ -z "${vers[1]}" ]; then
	# No package lists (yet): the newest complete unpack, if any.
	root=$(ls -d "$kcache"/servers-*_* 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$root" ] && complete "$root"; then
		echo "$root/usr/bin"
		exit 0
	fi
	root=$kcache/servers-new
fi
if complete "$root" && [ -f "$root/.stamp" ]; then
	echo "$root/usr/bin"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download runs as _apt where it can: the directory must be its too.
chmod 0755 "$tmp"
fetch() {
	local spec=() i
	for i in "${!PACKAGES[@]}"; do
		spec+=("${PACKAGES[$i]}${vers[$i]:+=${vers[$i]}}")
	done
	(cd "$tmp" && apt-get download -q "${spec[@]}") >"$tmp/apt.log" 2>&1
}
if ! fetch; then
	# No package lists yet (a fresh machine), or stale ones: refresh once.
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq >/dev/null 2>&1 || true
	fetch || { sed 's/^/servers.sh: /' "$tmp/apt.log" >&2
		echo "servers.sh: cannot download ${PACKAGES[*]}" >&2; exit 1; }
fi
if [ "$root" = "$kcache/servers-new" ]; then
	# Named after what was fetched, now that it is known.
	for i in "${!PACKAGES[@]}"; do
		vers[$i]=$(dpkg-deb -f "$tmp/${PACKAGES[$i]}"_*.deb Version)
	done
	root=$kcache/servers-$(IFS=_; echo "${vers[*]}" | tr ':+~' '...')
fi
rm -rf "$root.new"
mkdir -p "$root.new"
for p in "${PACKAGES[@]}"; do
	dpkg-deb -x "$tmp/$p"_*.deb "$root.new"
	echo "$p $(dpkg-deb -f "$tmp/$p"_*.deb Version)" >>"$root.new/.stamp"
done
complete "$root.new" || { echo "servers.sh: $root.new lacks one of: ${BINS[*]}" >&2; exit 1; }
rm -rf "$root"
mv "$root.new" "$root"
echo "$root/usr/bin"
