#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The host as the tests found it: make check runs this last, once its host
# tests and guests have ended (tools/testing/check.sh).
#
#  - tools/testing/deps.sh installs none of the servers the tests run
#    (tools/testing/servers.sh unpacks them into the cache instead);
#  - no unit or init script of those packages (Debian's prometheus and
#    prometheus-node-exporter) is enabled, nor active where systemd runs:
#    if a package is installed anyway, its services must be disabled;
#  - nothing of ours listens: no listening socket belongs to a process
#    started by this make check (RUN_ID, the STATSFD_CHECK_RUN mark check.sh
#    puts in every environment it starts), nor to the packages' own
#    binaries (a service they started).
#
# Each detector is first shown to fire on a planted case (a unit enabled in
# a scratch root, a marked listener), so a check that cannot fail does not
# pass.
# Usage: host_state_test.sh [RUN_ID]   (TAP on stdout; without RUN_ID, no
# listener can be told to be this run's and only the other checks run)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
T=$root/tools/testing
run_id=${1:-${STATSFD_CHECK_RUN:-}}
kcache=${KCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statsfd}
tmp=$(mktemp -d)
planted=
cleanup() {
	stop_pids "$planted"
	rm -rf "$tmp"
}
on_exit cleanup

mapfile -t servers < <("$T/servers.sh" --packages)
mapfile -t deps < <("$T/deps.sh" --list)
both=$(printf '%s\n' "${deps[@]}" | grep -xF -f <(printf '%s\n' "${servers[@]}") | paste -sd' ')
check "deps.sh installs no server package (${servers[*]}): '${both}'" test -z "$both"

# The packages' units and init scripts, as their .debs ship them.
bin=$("$T/servers.sh" "$kcache") || bail "servers.sh unpacks ${servers[*]}"
tree=${bin%/usr/bin}
mapfile -t units < <(find "$tree/lib/systemd/system" "$tree/usr/lib/systemd/system" \
	-maxdepth 1 -type f \( -name '*.service' -o -name '*.socket' -o -name '*.timer' \) \
	-printf '%f\n' 2>/dev/null | sort -u)
mapfile -t inits < <(find "$tree/etc/init.d" -maxdepth 1 -type f -printf '%f\n' 2>/dev/null | sort)
check "the server packages ship units to check (${units[*]}; init.d: ${inits[*]})" \
	test ${#units[@]} -gt 0

# enabled ROOT - print each unit or init script of the server packages that
# is enabled under ROOT (/ for the host), with its state.
enabled() {
	local r=$1 u s
	for u in "${units[@]}"; do
		s=$(systemctl --root="$r" is-enabled "$u" 2>/dev/null)
		case "$s" in
		enabled | enabled-runtime | linked | linked-runtime | alias | indirect)
			echo "$u:$s" ;;
		esac
	done
	for u in "${inits[@]}"; do
		ls "$r"/etc/rc[2-5].d/S[0-9][0-9]"$u" >/dev/null 2>&1 && echo "init.d/$u:rc-linked"
	done
	return 0
}

# The detector on a scratch root: the package's units installed and
# enabled as its postinst does, then masked.
fake=$tmp/root
mkdir -p "$fake/lib/systemd/system" "$fake/etc/systemd/system/multi-user.target.wants" "$fake/etc/rc2.d"
for u in "${units[@]}"; do
	cp "$tree/lib/systemd/system/$u" "$fake/lib/systemd/system/" 2>/dev/null ||
		cp "$tree/usr/lib/systemd/system/$u" "$fake/lib/systemd/system/"
	ln -s "/lib/systemd/system/$u" "$fake/etc/systemd/system/multi-user.target.wants/$u"
done
for u in "${inits[@]}"; do
	ln -s "../init.d/$u" "$fake/etc/rc2.d/S01$u"
done
got=$(enabled "$fake" | paste -sd' ')
check "detector: the units enabled in a scratch root are found ($got)" \
	test "$(enabled "$fake" | wc -l)" -eq $((${#units[@]} + ${#inits[@]}))
for u in "${units[@]}"; do
	rm "$fake/etc/systemd/system/multi-user.target.wants/$u"
	ln -s /dev/null "$fake/etc/systemd/system/$u"
done
rm -f "$fake"/etc/rc2.d/S01*
got=$(enabled "$fake" | paste -sd' ')
check "detector: masked and unlinked, nothing is found ('$got')" test -z "$got"

for p in "${servers[@]}"; do
	echo "# $p on this host: $(dpkg-query -W -f='${db:Status-Status} ${Version}' "$p" 2>/dev/null || echo not known to dpkg)"
done
got=$(enabled / | paste -sd' ')
check "no unit of ${servers[*]} is enabled on this host ('$got')" test -z "$got"
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
	active=$(for u in "${units[@]}"; do
		s=$(systemctl is-active "$u" 2>/dev/null)
		[ "$s" = inactive ] || [ "$s" = unknown ] || [ "$s" = failed ] || echo "$u:$s"
	done | paste -sd' ')
	check "no unit of ${servers[*]} is active ('$active')" test -z "$active"
fi

# listeners ID - print "pid exe address" for each listening TCP/UDP socket of
# a process marked STATSFD_CHECK_RUN=ID, or running one of the packages'
# own binaries (the services their postinst starts).
listeners() {
	local id=$1 line pid exe addr
	ss -Hlntup 2>/dev/null | while read -r line; do
		addr=$(awk '{ print $5 }' <<<"$line")
		for pid in $(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2 | sort -u); do
			exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
			case "$exe" in
			/usr/bin/prometheus | /usr/bin/prometheus-node-exporter | \
			/usr/bin/prometheus" (deleted)" | /usr/bin/prometheus-node-exporter" (deleted)")
				echo "$pid $exe $addr"; continue ;;
			esac
			[ -n "$id" ] && tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
				grep -qxF "STATSFD_CHECK_RUN=$id" && echo "$pid $exe $addr"
		done
	done
	return 0
}

# wait_none ID SECONDS - wait until no such listener is left (a daemon a
# test just killed may still be closing); print what is left at the end.
wait_none() {
	local left i
	for ((i = 0; i < $2 * 2; i++)); do
		left=$(listeners "$1")
		[ -z "$left" ] && return 0
		sleep 0.5
	done
	echo "$left"
}

# The detector on a planted listener marked with a probe id of its own.
probe=probe-$$-$RANDOM
STATSFD_CHECK_RUN=$probe python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(600)' >"$tmp/port" &
planted=$!
for ((i = 0; i < 120; i++)); do
	[ -s "$tmp/port" ] && break
	sleep 0.5
done
got=$(listeners "$probe")
check "detector: a marked listener (pid $planted, port $(cat "$tmp/port")) is found ('$got')" \
	bash -c "grep -q '^$planted .*:$(cat "$tmp/port")\$' <<<'$got'"
kill "$planted"
wait "$planted" 2>/dev/null
planted=
left=$(wait_none "$probe" 60)
check "detector: once it has exited, nothing is found ('$left')" test -z "$left"

if [ -n "$run_id" ]; then
	left=$(wait_none "$run_id" 60)
	check "nothing this make check started listens, nor the packages' servers ('$left')" \
		test -z "$left"
else
	echo "# no RUN_ID: only the packages' own servers are looked for"
	left=$(wait_none "" 60)
	check "the packages' servers do not listen ('$left')" test -z "$left"
fi
finish
