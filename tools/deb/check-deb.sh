#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-deb.sh - `make check-deb`: make deb's packages as an operator meets
# them, on a fresh Debian 12 with no build tree.
#
# Usage: check-deb.sh DEB_DIR KCACHE STOCK_KDIR     (TAP on stdout)
#
#  1. tools/deb/contents_test.sh on the .debs (files, maintainer scripts,
#     symbols, lintian's report);
#  2. a pristine debootstrap chroot (bookworm, minbase; cached as
#     KCACHE/chroot-bookworm-minbase.tar.zst, made once) unpacked into
#     DEB_DIR/check/root, with the stock kernel's headers
#     (linux-headers-RELEASE, the version of STOCK_KDIR's package) and what
#     the packages depend on installed from Debian's archive; a list of
#     its files is taken;
#  3. the eight .debs installed there with apt: statsfd-dkms' postinst has
#     DKMS build and install the three modules for those headers; the
#     units are installed and disabled, the user exists, a program builds
#     with `pkg-config statsfd statsfd-expo statsfd-client` and runs on
#     the three installed libraries;
#  4. a kernel upgrade as DKMS sees it: the module registered but built for
#     no kernel (dkms remove -k RELEASE, then dkms add: the state a kernel
#     new to DKMS is in), then the hook a linux-headers package runs on
#     install (/etc/kernel/header_postinst.d/dkms RELEASE) builds and
#     installs them;
#  5. the stock kernel of that release (tools/testing/stock.sh) booted
#     under QEMU with the modules DKMS built and the installed programs,
#     running the demo (tools/demo/run-demo.sh: collector, sample VMM,
#     watch, scrape, query, --host, rmmod);
#  5b. the same packages and modules in a guest that boots systemd as
#     PID 1 (tools/deb/check-systemd.sh: the units for real);
#  6. the packages purged: no package of ours is known to dpkg any more,
#     and the chroot holds exactly the files it held before step 3 (but
#     dpkg's, apt's and the logs' own).  The user "statsfd" stays, as
#     Debian's policy has it for system users.
#
# The one mount (proc) is made in a private mount namespace, so they end
# with this script whatever happens.  Logs: DEB_DIR/check/*.log.  The
# chroot is removed when every check passed and kept otherwise.
set -uo pipefail
usage="usage: check-deb.sh DEB_DIR KCACHE STOCK_KDIR"
debs=$(realpath -m "${1:?$usage}")
kcache=$(realpath -m "${2:?$usage}")
kdir=${3:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ -z "${STATSFD_CHECK_DEB_NS:-}" ]; then
	export STATSFD_CHECK_DEB_NS=1
	exec unshare --mount --propagation private "$0" "$@"
fi

out=$debs/check
ch=$out/root
mirror=${DEB_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
kver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms.conf")
krel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h")
hver=$(dpkg-query -W -f='${Version}' "linux-headers-$krel" 2>/dev/null)
ours=(statsfd-dkms statsfd-tools libstatsfd2 libstatsfd-expo1 libstatsfd-client1 libstatsfd-dev
	libstatsfd-expo-dev libstatsfd-client-dev)
. "$root/tools/testing/lib/tap.sh"
. "$here/lib.sh"
me=check-deb
logs_at="logs and the chroot in $out"
# snapshot FILE - the chroot's files and links, but those that change
# with any apt run (dpkg's and apt's state, caches, logs).
snapshot() {
	(cd "$ch" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./sys -o -path ./tmp \
		-o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache \
		-o -path ./var/log -o -path ./run \) -prune -o -printf '%p %y\n' | sort) >"$1"
}

[ -n "$krel" ] && [ -n "$hver" ] || fatal "stock headers: no release or package version for $kdir"
for p in "${ours[@]}"; do
	ls "$debs/${p}_${ver}_"*.deb >/dev/null 2>&1 || fatal "no ${p}_${ver} in $debs (make deb)"
done
mkdir -p "$out"

# 1. The packages' contents.
say "contents of the .debs"
"$here/contents_test.sh" "$debs" >"$out/contents.log" 2>&1
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok "contents: ${line#ok * - }" ;;
	"not ok "*) nok "contents: ${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$out/contents.log"

# 2. The pristine chroot, made once and cached.
pristine=$("$here/pristine.sh" "$kcache" "$suite" "$mirror" "$out/debootstrap.log") ||
	fatal "debootstrap $suite" "$out/debootstrap.log"
say "a fresh chroot from $pristine"
rm -rf --one-file-system "$ch"
mkdir -p "$ch"
zstd -dc "$pristine" | tar -C "$ch" --numeric-owner -xf - || fatal "unpack $pristine"
# /dev: the device nodes debootstrap made; nothing of the host's is bound
# in, so removing the chroot can never reach outside it.
mount -t proc proc "$ch/proc" || fatal "mount proc in the chroot"
cp /etc/resolv.conf "$ch/etc/resolv.conf"
cat >"$ch/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF
# The usual guard of chroots: maintainer scripts start no service.
printf '#!/bin/sh\nexit 101\n' >"$ch/usr/sbin/policy-rc.d"
chmod 0755 "$ch/usr/sbin/policy-rc.d"
test -e "$ch/usr/src/statsfd-$kver" -o -e "$ch/usr/bin/statsfd"
check "the fresh chroot has no statsfd and no build tree" test $? -ne 0

# What the packages need from the archive, installed before the snapshot,
# so that the purge can be compared file for file: their dependencies (but
# each other), the stock kernel's headers, gcc, libc6-dev and pkgconf to
# build against the -dev packages.
deps=$(for p in "${ours[@]}"; do dpkg-deb -f "$debs/${p}_${ver}_"*.deb Depends; echo; done |
	tr ',' '\n' | sed 's/^ *//; /^$/d' | grep -vE '^(statsfd-|libstatsfd)' | sort -u | paste -sd,)
say "apt: linux-headers-$krel=$hver, a C toolchain, pkgconf, and the packages' dependencies"
if ! in_ch apt-get update >"$out/apt.log" 2>&1 ||
	! in_ch apt-get install -y --no-install-recommends "linux-headers-$krel=$hver" gcc libc6-dev pkgconf \
		>>"$out/apt.log" 2>&1 ||
	! in_ch apt-get satisfy -y --no-install-recommends "$deps" >>"$out/apt.log" 2>&1; then
	fatal "apt-get installs linux-headers-$krel=$hver and $deps" "$out/apt.log"
fi
ok "linux-headers-$krel $hver and the dependencies installed ($deps)"
# The module index of $krel, as its image package would have made it (only
# the headers are installed here): DKMS's depmod then only updates it.
in_ch depmod "$krel" >>"$out/apt.log" 2>&1 || fatal "depmod $krel" "$out/apt.log"
snapshot "$out/before.list"

# 3. Our packages.
say "apt-get install ${ours[*]}"
rm -rf "$ch/tmp/debs"
mkdir -p "$ch/tmp/debs"
for p in "${ours[@]}"; do
	cp "$debs/${p}_${ver}_"*.deb "$ch/tmp/debs/"
done
in_ch sh -c 'apt-get install -y --no-install-recommends /tmp/debs/*.deb' >"$out/install.log" 2>&1 ||
	fatal "apt-get install the .debs" "$out/install.log"
ok "apt-get install ${ours[*]} (no recommends)"
rm -rf "$ch/tmp/debs"
sed -n '/Building module/,/^$/p; /DKMS: install completed/p; /[Ee]rror/p' "$out/install.log" | sed 's/^/#   /' | head -n 20

moddir=$ch/lib/modules/$krel/updates/dkms
# modules_ok - the three modules are installed for krel, with its vermagic.
modules_ok() {
	local m f v
	for m in statsfd statsfd_vm statsfd_host; do
		f=$(ls "$moddir/$m".ko* 2>/dev/null | head -n 1)
		[ -n "$f" ] || { echo "# no $m.ko* in ${moddir#"$ch"}"; return 1; }
		v=$(modinfo -F vermagic "$f" | cut -d' ' -f1)
		[ "$v" = "$krel" ] || { echo "# $m: vermagic $v"; return 1; }
	done
}
check "DKMS built and installed statsfd, statsfd_vm, statsfd_host for $krel at install" modules_ok
status=$(in_ch dkms status statsfd 2>&1)
echo "# dkms status: $status"
check "dkms status: statsfd/$kver, $krel: installed" \
	grep -q "^statsfd/$kver, $krel, [^:]*: installed" <<<"$status"
check "depmod knows them (modules.dep names updates/dkms/statsfd.ko)" \
	grep -q "^updates/dkms/statsfd.ko" "$ch/lib/modules/$krel/modules.dep"
for u in statsfd-collector.service statsfd-collector.socket statsfd-collector-http.socket; do
	s=$(in_ch systemctl is-enabled "$u" 2>&1)
	check "$u installed, not enabled ($s)" test "$s" = disabled
done
check "no unit of ours enabled: nothing of statsfd under /etc/systemd" \
	bash -c "! find '$ch/etc/systemd' -name 'statsfd*' | grep -q ."
pw=$(in_ch getent passwd statsfd)
check "user statsfd exists ($pw)" test -n "$pw"
v=$(in_ch statsfd-collector --version 2>&1)
check "installed statsfd-collector runs ($v)" test "$v" = "statsfd-collector $kver"
h=$(in_ch statsfd --help 2>&1)
check "installed statsfd runs (statsfd --help)" grep -q '^usage: statsfd ' <<<"$h"
cat >"$ch/root/app.c" <<'EOF'
#include <stdio.h>
#include <statsfd.h>
#include <statsfd_expo.h>
#include <statsfd_client.h>

int main(void)
{
	struct statsfd_buf b = { 0 };
	const char *why = NULL;
	char pkt[STATSFD_MSG_HDR_SIZE] = { 0 };

	/* STATSFD_TYPE_CUMULATIVE from <linux/statsfd.h>, installed beside */
	statsfd_prom_escape(&b, statsfd_type_name(STATSFD_TYPE_CUMULATIVE));
	if (!statsfd_msg_check(pkt, sizeof(pkt), 0, &why))
		return 1;
	printf("%s %s\n", b.data, why ? "refused" : "?");
	statsfd_buf_free(&b);
	return 0;
}
EOF
in_ch sh -c 'cd /root && gcc -Wall -Werror -o app app.c $(pkg-config --cflags --libs statsfd statsfd-expo statsfd-client)' \
	>"$out/app.log" 2>&1
check "a program builds with pkg-config statsfd statsfd-expo statsfd-client in the chroot" test $? -eq 0
sed 's/^/#   /' "$out/app.log"
got=$(in_ch sh -c '/root/app && ldd /root/app | grep -oE "libstatsfd(-expo|-client)?\.so\.[0-9]+ => [^ ]*"' 2>&1)
check "and runs on the three installed libraries ($(paste -sd' ' <<<"$got"))" \
	bash -c 'm=$2; grep -qx "$1" <<<"$3" &&
		grep -qE "^libstatsfd.so.2 => /(usr/)?lib/$m/libstatsfd.so.2\$" <<<"$3" &&
		grep -qE "^libstatsfd-expo.so.1 => /(usr/)?lib/$m/libstatsfd-expo.so.1\$" <<<"$3" &&
		grep -qE "^libstatsfd-client.so.1 => /(usr/)?lib/$m/libstatsfd-client.so.1\$" <<<"$3"' \
	_ "cumulative refused" "$(dpkg-architecture -qDEB_HOST_MULTIARCH)" "$got"
rm -f "$ch/root/app" "$ch/root/app.c"

# 4. A kernel (headers) installed later: the hook linux-headers-* runs.
say "kernel upgrade: built for no kernel, then /etc/kernel/header_postinst.d/dkms $krel"
in_ch dkms remove "statsfd/$kver" -k "$krel" >"$out/upgrade.log" 2>&1
in_ch dkms add "statsfd/$kver" >>"$out/upgrade.log" 2>&1
status=$(in_ch dkms status statsfd 2>&1)
check "statsfd/$kver registered, built for no kernel, modules gone ($status)" \
	bash -c "[ '$status' = 'statsfd/$kver: added' ] && ! ls '$moddir'/statsfd*.ko* 2>/dev/null | grep -q ."
in_ch /etc/kernel/header_postinst.d/dkms "$krel" >>"$out/upgrade.log" 2>&1
check "the headers' install hook builds and installs them for $krel" modules_ok

# 5. Boot the stock kernel with what DKMS built, run the demo with the
# installed programs.
say "boot $krel with the DKMS modules; the demo with the installed tools"
stock=$("$root/tools/testing/stock.sh" "$kcache" "$kdir") || fatal "tools/testing/stock.sh"
rm -rf "$out/modules" "$out/tools" "$out/demo"
mkdir -p "$out/modules" "$out/tools"
for f in "$moddir"/statsfd*.ko*; do
	case "$f" in
	*.ko.xz) xz -dc "$f" >"$out/modules/$(basename "${f%.xz}")" ;;
	*.ko.zst) zstd -qdc "$f" >"$out/modules/$(basename "${f%.zst}")" ;;
	*.ko.gz) gzip -dc "$f" >"$out/modules/$(basename "${f%.gz}")" ;;
	*) cp "$f" "$out/modules/" ;;
	esac
done
cp "$ch/usr/bin/statsfd" "$ch/usr/bin/statsfd-vmm" "$ch/usr/sbin/statsfd-collector" "$out/tools/"
"$root/tools/demo/run-demo.sh" --kernel "$stock/boot/vmlinuz-$krel" --busybox "$stock/bin/busybox" \
	--modules-dir "$out/modules" --tools "$out/tools" --out "$out/demo" \
	--timeout "${GUEST_TIMEOUT:-900}" >"$out/demo.log" 2>&1
rc=$?
check "the demo ran to its end on $krel with the packaged modules and tools (rc $rc)" \
	bash -c "[ $rc -eq 0 ] && grep -q '^demo: done' '$out/demo/results.txt'"
[ $rc -eq 0 ] || tail -n 30 "$out/demo.log" | sed 's/^/#   /'

# 5b. The same packages and modules under a real systemd
# (tools/deb/check-systemd.sh: socket activation, Type=notify, the
# watchdog, the fd store, MemoryMax= under attack, systemd-analyze).
say "boot $krel with systemd as PID 1: the units for real"
"$here/check-systemd.sh" "$debs" "$kcache" "$stock" "$out/modules" "$out/systemd" \
	>"$out/systemd.log" 2>&1
rc=$?
tap_merge systemd "$out/systemd.log"
check "check-systemd.sh ran to its end (rc $rc)" \
	bash -c "[ $rc -eq 0 ] && grep -q '^1\.\.' '$out/systemd.log'"

# 6. Purge: nothing of ours is left.
say "apt-get purge ${ours[*]}"
in_ch apt-get purge -y "${ours[@]}" >"$out/purge.log" 2>&1
check "apt-get purge ${ours[*]}" test $? -eq 0
left=$(in_ch dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${ours[@]}" 2>/dev/null |
	grep -v ' un *$' | paste -sd' ')
check "dpkg knows none of them any more, not even as config-files ('$left')" test -z "$left"
snapshot "$out/after.list"
diff "$out/before.list" "$out/after.list" | grep '^[<>]' >"$out/purge.diff"
check "the chroot holds exactly the files it held before the install ($(wc -l <"$out/purge.diff") differences)" \
	test ! -s "$out/purge.diff"
head -n 20 "$out/purge.diff" | sed 's/^/#   /'
check "no module of ours is left under /lib/modules" \
	bash -c "! find '$ch/lib/modules' -name 'statsfd*.ko*' | grep -q ."
echo "# kept, as Debian's policy has it for system users: $(in_ch getent passwd statsfd)"

echo "1..$n"
say "check-deb: $((n - failed)) passed, $failed failed"
if [ "$failed" -eq 0 ]; then
	umount "$ch/proc" && rm -rf --one-file-system "$ch"
	exit 0
fi
echo "# check-deb: logs and the chroot in $out"
exit 1
