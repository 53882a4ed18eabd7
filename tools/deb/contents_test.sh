#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What `make deb`'s packages hold, read from the .debs alone (dpkg-deb):
# each package's files, that nothing of the tests or the build tree got
# in, that the units are installed but no maintainer script enables or
# starts them, that statsfd-dkms' scripts hand the source to DKMS, and
# each library's soname, shlibs, symbols and -dev package.  make check-deb runs it before
# installing them in a chroot.
# Usage: contents_test.sh DEB_DIR   (TAP on stdout)
set -u
dir=${1:?usage: contents_test.sh DEB_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
kver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms.conf")
arch=$(dpkg --print-architecture)
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
n=0
check() { local d=$1; shift; n=$((n + 1)); if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# deb PKG ARCH - the .deb's path; its file list in $tmp/PKG.list (paths
# without the leading ".", symlinks as "path -> target") and its control
# area in $tmp/PKG/.
deb() {
	local f=$dir/${1}_${ver}_$2.deb
	[ -f "$f" ] || return 1
	dpkg-deb -c "$f" | awk '{ p = $6; sub(/^\./, "", p); for (i = 7; i <= NF; i++) p = p " " $i; print p }' >"$tmp/$1.list"
	mkdir -p "$tmp/$1"
	dpkg-deb -e "$f" "$tmp/$1"
}
# has PKG PATH... - every PATH is in PKG's file list.
has() {
	local p=$1 f
	shift
	for f in "$@"; do
		grep -qxF -- "$f" "$tmp/$p.list" || { echo "# $p lacks $f"; return 1; }
	done
}

# One version: the changelog's (the packages') is dkms.conf's (the DKMS
# module's, --version's, statsfd.pc's).
check "debian/changelog's version $ver is dkms.conf's PACKAGE_VERSION ($kver)" test "${ver%%-*}" = "$kver"

libpkgs=(libstatsfd2 libstatsfd-expo1 libstatsfd-client1 libstatsfd-dev libstatsfd-expo-dev
	libstatsfd-client-dev)
for p in statsfd-dkms:all statsfd-tools:$arch "${libpkgs[@]/%/:$arch}"; do
	check "${p%%:*}_${ver}_${p##*:}.deb exists and reads" deb "${p%%:*}" "${p##*:}"
done

# statsfd-dkms: the Kbuild tree, modules.mk and dkms.conf, nothing else.
s=/usr/src/statsfd-$kver
check "statsfd-dkms: $s holds dkms.conf, Kbuild, modules.mk, the three modules' sources" \
	has statsfd-dkms "$s/dkms.conf" "$s/Kbuild" "$s/modules.mk" "$s/src/core/Kbuild" "$s/src/vm/Kbuild" \
	"$s/src/host/Kbuild" "$s/src/compat.h" "$s/include/linux/statsfd.h" \
	"$s/include/uapi/linux/statsfd.h"
check "statsfd-dkms: its dkms.conf is the repository's" \
	bash -c "dpkg-deb --fsys-tarfile '$dir/statsfd-dkms_${ver}_all.deb' |
		tar -xOf - '.$s/dkms.conf' | cmp -s - '$root/dkms.conf'"
stray=$(grep -E '\.(o|ko|cmd|mod|a)$|/tests/|/build/|Module\.symvers|modules\.order' \
	"$tmp/statsfd-dkms.list" | paste -sd' ')
check "statsfd-dkms: no test, object or build file ('$stray')" test -z "$stray"
outside=$(grep -vE "^/(\$|usr/\$|usr/src/|usr/share/\$|usr/share/doc/)" "$tmp/statsfd-dkms.list" | paste -sd' ')
check "statsfd-dkms: nothing outside $s and its docs ('$outside')" test -z "$outside"
check "statsfd-dkms: postinst hands it to DKMS (common.postinst statsfd $kver), prerm removes it" \
	bash -c "grep -q 'DKMS_NAME=statsfd' '$tmp/statsfd-dkms/postinst' &&
		grep -q 'common.postinst' '$tmp/statsfd-dkms/postinst' &&
		grep -q 'dkms remove' '$tmp/statsfd-dkms/prerm'"
check "statsfd-dkms depends on dkms ($(dpkg-deb -f "$dir/statsfd-dkms_${ver}_all.deb" Depends))" \
	bash -c "dpkg-deb -f '$dir/statsfd-dkms_${ver}_all.deb' Depends | grep -q '^dkms\b'"

# statsfd-tools.
check "statsfd-tools: the programs, units, man pages, drop-ins, sysusers, defaults" \
	has statsfd-tools /usr/bin/statsfd /usr/bin/statsfd-vmm /usr/sbin/statsfd-collector \
	/lib/systemd/system/statsfd-collector.service /lib/systemd/system/statsfd-collector.socket \
	/lib/systemd/system/statsfd-collector-http.socket \
	/usr/share/man/man1/statsfd.1.gz /usr/share/man/man1/statsfd-vmm.1.gz \
	/usr/share/man/man8/statsfd-collector.8.gz \
	/usr/share/doc/statsfd-tools/discover-kvm.conf /usr/share/doc/statsfd-tools/host.conf \
	/usr/share/doc/statsfd-tools/statsfd-tools.rst.gz /usr/share/doc/statsfd-tools/statsfd-lib.rst.gz \
	/usr/share/doc/statsfd-tools/statsfd-cli.rst.gz /usr/share/doc/statsfd-tools/statsfd-collector.rst.gz \
	/usr/share/doc/statsfd-tools/statsfd-dashboards.rst.gz /usr/share/doc/statsfd-tools/statsfd-vmm.rst.gz \
	/usr/lib/sysusers.d/statsfd.conf \
	/etc/default/statsfd-collector
check "statsfd-tools: the Grafana dashboards and their provisioning file" \
	has statsfd-tools /usr/share/statsfd/dashboards/statsfd-fleet.json \
	/usr/share/statsfd/dashboards/statsfd-vm.json /usr/share/statsfd/dashboards/statsfd-host.json \
	/usr/share/doc/statsfd-tools/grafana-dashboards.yaml
check "statsfd-tools: /etc/default/statsfd-collector is a conffile" \
	grep -qx /etc/default/statsfd-collector "$tmp/statsfd-tools/conffiles"
units=$(grep -c '^/etc/systemd' "$tmp/statsfd-tools.list")
check "statsfd-tools: ships no enablement symlink under /etc/systemd ($units)" test "$units" -eq 0
# With --no-enable debhelper still writes one enable per unit, under "if
# ... was-enabled" (re-creating what the administrator had enabled, on an
# upgrade); any other enable, or any start, is a unit turned on by the
# package.
unguarded=$(awk '/was-enabled/ { guard = NR }
	/deb-systemd-helper (--quiet )?enable|deb-systemd-invoke|systemctl .*(enable|start)/ &&
	!(guard && NR - guard <= 2 && /deb-systemd-helper enable/) { print NR ": " $0 }' \
	"$tmp/statsfd-tools/postinst" | sed 's/[[:space:]]\+/ /g' | paste -sd'|')
check "statsfd-tools: postinst enables and starts nothing ('$unguarded')" test -z "$unguarded"
check "statsfd-tools: postinst creates the user statsfd (systemd-sysusers statsfd.conf)" \
	grep -q 'systemd-sysusers .*statsfd.conf' "$tmp/statsfd-tools/postinst"
check "statsfd-tools: postrm purges the units' state" \
	grep -q "deb-systemd-helper purge .*statsfd-collector.service" "$tmp/statsfd-tools/postrm"
check "statsfd-tools: its service runs the installed collector" \
	bash -c "dpkg-deb --fsys-tarfile '$dir/statsfd-tools_${ver}_$arch.deb' |
		tar -xOf - ./lib/systemd/system/statsfd-collector.service |
		grep -q '^ExecStart=/usr/sbin/statsfd-collector '"

# The libraries: per library NAME SONAME PACKAGE HEADER PC NODE MAP; each
# package holds its soname's link and the library, nothing else, with
# shlibs and a symbols file listing every export of its map; each -dev
# package its header, the .so link, the archive and the .pc.
l=/usr/lib/$multi
while read -r name soname pkg header pc node map; do
	file=$soname.0.0
	check "$pkg: $l/$soname -> $file, nothing else" \
		bash -c "grep -qxF '$l/$soname -> $file' '$tmp/$pkg.list' &&
			grep -qxF '$l/$file' '$tmp/$pkg.list' &&
			! grep -E '^/usr/(include|bin|sbin)|\.a\$|pkgconfig' '$tmp/$pkg.list'"
	check "$pkg: shlibs names $pkg" \
		grep -q "^$name ${soname##*.so.} $pkg " "$tmp/$pkg/shlibs"
	nsym=$(grep -c "@$node " "$tmp/$pkg/symbols")
	check "$pkg: symbols file with every export of $map ($nsym)" \
		test "$nsym" -eq $(($(grep -cE '^\s+statsfd_[a-z0-9_]+;' "$root/tools/lib/$map") + 1))
	dev=$name-dev
	check "$dev: $header, $name.so, $name.a, $pc.pc" \
		has "$dev" "/usr/include/statsfd/$header" "$l/$name.so -> $soname" "$l/$name.a" \
		"$l/pkgconfig/$pc.pc"
	check "$dev: $pc.pc names the installed paths" \
		bash -c "dpkg-deb --fsys-tarfile '$dir/${dev}_${ver}_$arch.deb' |
			tar -xOf - '.$l/pkgconfig/$pc.pc' >'$tmp/pc' &&
			grep -qx 'libdir=$l' '$tmp/pc' && grep -qx 'includedir=/usr/include' '$tmp/pc' &&
			grep -qx 'Version: $kver' '$tmp/pc'"
	check "$dev depends on $pkg (= $ver)" \
		bash -c "dpkg-deb -f '$dir/${dev}_${ver}_$arch.deb' Depends | grep -q '$pkg (= $ver)'"
done <<EOF
libstatsfd libstatsfd.so.2 libstatsfd2 statsfd.h statsfd STATSFD_2 core/libstatsfd.map
libstatsfd-expo libstatsfd-expo.so.1 libstatsfd-expo1 statsfd_expo.h statsfd-expo STATSFD_EXPO_1 expo/libstatsfd-expo.map
libstatsfd-client libstatsfd-client.so.1 libstatsfd-client1 statsfd_client.h statsfd-client STATSFD_CLIENT_1 client/libstatsfd-client.map
EOF
check "libstatsfd-dev: the format headers statsfd.h includes, libstatsfd(3)" \
	has libstatsfd-dev /usr/include/statsfd/linux/statsfd.h /usr/include/statsfd/linux/statsfd_vm.h \
	/usr/include/statsfd/linux/statsfd_host.h /usr/share/man/man3/libstatsfd.3.gz
check "libstatsfd-expo-dev and libstatsfd-client-dev depend on libstatsfd-dev (= $ver)" \
	bash -c "dpkg-deb -f '$dir/libstatsfd-expo-dev_${ver}_$arch.deb' Depends | grep -q 'libstatsfd-dev (= $ver)' &&
		dpkg-deb -f '$dir/libstatsfd-client-dev_${ver}_$arch.deb' Depends | grep -q 'libstatsfd-dev (= $ver)'"
check "libstatsfd-client-dev depends on libjson-c-dev (statsfd_client.h includes json-c)" \
	bash -c "dpkg-deb -f '$dir/libstatsfd-client-dev_${ver}_$arch.deb' Depends | grep -q libjson-c-dev"

# lintian, as make deb ran it: no error, no warning.
if [ -f "$dir/lintian.txt" ]; then
	lw=$(grep -E '^[EW]: ' "$dir/lintian.txt" | paste -sd'|')
	check "lintian: no error or warning ('$lw')" test -z "$lw"
else
	check "lintian: report $dir/lintian.txt exists" false
fi
echo "1..$n"
