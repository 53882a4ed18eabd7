#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-systemd.sh - the packaged collector under a real systemd: Debian's
# stock kernel boots a small Debian 12 root with systemd as PID 1, the
# packages installed, and tools/deb/systemd-guest/check.sh runs the units
# for real (socket activation, Type=notify, the watchdog, the fd store
# across a restart and a SIGKILL, MemoryMax= under the siege of issue 18,
# systemd-analyze security).  make check-deb runs it with the modules DKMS
# built; make check-systemd with those of make modules-6.1.
#
# Usage: check-systemd.sh DEB_DIR KCACHE STOCK_ROOT MODULES_DIR OUT
#                                                       (TAP on stdout)
#
#  DEB_DIR      make deb's output (statsfd-tools and libstatsfd2 are used)
#  KCACHE       the cache: the pristine debootstrap (chroot-bookworm-
#               minbase.tar.zst, made by tools/deb/pristine.sh when absent)
#               and, made once from it, the root with systemd and the
#               packages' dependencies, systemd-root-bookworm-KEY.tar.zst
#               (KEY: a hash of what is installed in it)
#  STOCK_ROOT   tools/testing/stock.sh's root (kernel, its modules, busybox)
#  MODULES_DIR  the shipped modules (modules.mk) built for that kernel
#               (anywhere below it)
#  OUT          work directory: root/, root.ext4, console.log, results.txt
#
# The root is a raw ext4 image (mkfs.ext4 -d: no loop mount) on a virtio
# disk; the stock kernel has virtio_blk and ext4 as modules, so a small
# busybox initramfs loads them, mounts /dev/vda and switch_roots to
# systemd.  The guest's TAP comes back on its second serial port; a kernel
# warning on the console fails the run like in make check.
set -uo pipefail
usage="usage: check-systemd.sh DEB_DIR KCACHE STOCK_ROOT MODULES_DIR OUT"
debs=$(realpath -m "${1:?$usage}")
kcache=$(realpath -m "${2:?$usage}")
stock=$(realpath -m "${3:?$usage}")
mods=$(realpath -m "${4:?$usage}")
out=$(realpath -m "${5:?$usage}")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ -z "${STATSFD_CHECK_SYSTEMD_NS:-}" ]; then
	export STATSFD_CHECK_SYSTEMD_NS=1
	exec unshare --mount --propagation private "$0" "$@"
fi

suite=bookworm
mirror=${DEB_MIRROR:-http://deb.debian.org/debian}
timeout=${GUEST_TIMEOUT:-900}
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
kernel=$(ls "$stock"/boot/vmlinuz-* 2>/dev/null | head -n 1)
krel=${kernel##*/vmlinuz-}
kmods=$stock/lib/modules/$krel
ours=(libstatsfd2 statsfd-tools)
. "$root/tools/testing/lib/tap.sh"
. "$here/lib.sh"
me=check-systemd
logs_at="logs in $out"

[ -n "$kernel" ] && [ -d "$kmods/kernel" ] || fatal "no stock kernel in $stock (tools/testing/stock.sh)"
# ours MODULE: its file under MODULES_DIR (flat, or make modules' tree).
ours_ko() { find "$mods" -name "$1.ko" | sort | head -n 1; }
# The shipped modules, in load order: modules.mk's list.
shipped=()
for m in $(sed -n 's/^STATSFD_MODULES := //p' "$root/modules.mk"); do
	shipped+=("${m##*/}")
done
for m in "${shipped[@]}"; do
	[ -n "$(ours_ko $m)" ] || fatal "no $m.ko in $mods"
done
for p in "${ours[@]}"; do
	ls "$debs/${p}_${ver}_"*.deb >/dev/null 2>&1 || fatal "no ${p}_${ver} in $debs (make deb)"
done
mkdir -p "$out" "$kcache"

# 1. The root with systemd, cached: the pristine debootstrap, systemd-sysv,
# and what the packages depend on from the archive.
pristine=$("$here/pristine.sh" "$kcache" "$suite" "$mirror" "$out/debootstrap.log") ||
	fatal "the pristine $suite chroot (tools/deb/pristine.sh)" "$out/debootstrap.log"
deps=$(for p in "${ours[@]}"; do dpkg-deb -f "$debs/${p}_${ver}_"*.deb Depends; echo; done |
	tr ',' '\n' | sed 's/^ *//; /^$/d' | grep -vE '^(statsfd-|libstatsfd)' | sort -u | paste -sd,)
pkgs="systemd-sysv kmod"
key=$(printf '%s\n' "$(basename "$pristine") $(stat -c %s "$pristine")" "$pkgs" "$deps" |
	sha256sum | cut -c1-12)
base=$kcache/systemd-root-$suite-$key.tar.zst
exec 9>"$kcache/systemd-root-$suite.lock"
flock 9
if [ ! -s "$base" ]; then
	say "the root with systemd, once: $base"
	tmp=$(mktemp -d "$kcache/systemd-root.XXXXXX")
	zstd -dc "$pristine" | tar -C "$tmp" --numeric-owner -xf - || fatal "unpack $pristine"
	mount -t proc proc "$tmp/proc" || fatal "mount proc"
	cp /etc/resolv.conf "$tmp/etc/resolv.conf"
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" "$suite" >"$tmp/etc/apt/sources.list"
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 0755 "$tmp/usr/sbin/policy-rc.d"
	ch() { chroot "$tmp" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
	if ! ch apt-get update >"$out/base.log" 2>&1 ||
		! ch apt-get install -y --no-install-recommends $pkgs >>"$out/base.log" 2>&1 ||
		! ch apt-get satisfy -y --no-install-recommends "$deps" >>"$out/base.log" 2>&1; then
		umount "$tmp/proc"
		rm -rf --one-file-system "$tmp"
		fatal "apt-get install $pkgs $deps" "$out/base.log"
	fi
	ch apt-get clean >>"$out/base.log" 2>&1
	umount "$tmp/proc"
	rm -rf "$tmp"/var/lib/apt/lists/* "$tmp/usr/sbin/policy-rc.d"
	tar -C "$tmp" --numeric-owner -cf - . | zstd -q -T0 >"$base.new" && mv "$base.new" "$base"
	rm -rf --one-file-system "$tmp"
fi
flock -u 9
ok "root with systemd and the packages' dependencies ($(basename "$base"))"

# 2. This run's root: the packages installed, the modules, the test.
say "the guest's root: ${ours[*]} installed"
ch=$out/root
rm -rf --one-file-system "$ch"
mkdir -p "$ch"
zstd -dc "$base" | tar -C "$ch" --numeric-owner -xf - || fatal "unpack $base"
mount -t proc proc "$ch/proc" || fatal "mount proc in the root"
printf '#!/bin/sh\nexit 101\n' >"$ch/usr/sbin/policy-rc.d"
chmod 0755 "$ch/usr/sbin/policy-rc.d"
mkdir -p "$ch/tmp/debs"
for p in "${ours[@]}"; do
	cp "$debs/${p}_${ver}_"*.deb "$ch/tmp/debs/"
done
in_ch sh -c 'dpkg -i /tmp/debs/*.deb' >"$out/install.log" 2>&1 ||
	{ umount "$ch/proc"; fatal "dpkg -i ${ours[*]}" "$out/install.log"; }
rm -rf "$ch/tmp/debs" "$ch/usr/sbin/policy-rc.d"

# The stock modules the boot needs (the initramfs loads them) and what
# systemd may ask for, with ours in updates/ as DKMS installs them.
modpath() { # NAME: its file under kmods/kernel
	find "$kmods/kernel" -name "$1.ko" -o -name "${1//_/-}.ko" | head -n 1
}
# modorder NAME...: the module files, each after those it depends on.
declare -A seen=()
order=()
modorder() {
	local m f d
	for m; do
		[ -n "${seen[$m]:-}" ] && continue
		seen[$m]=1
		f=$(modpath "$m")
		[ -n "$f" ] || continue
		for d in $(modinfo -F depends "$f" | tr ',' ' '); do
			modorder "$d"
		done
		order+=("$f")
	done
}
modorder virtio_pci virtio_blk crc32c_generic ext4
for f in "${order[@]}"; do
	install -D -m 0644 "$f" "$ch/lib/modules/$krel/${f#"$kmods/"}"
done
ko=$(modpath autofs4)
[ -n "$ko" ] && install -D -m 0644 "$ko" "$ch/lib/modules/$krel/${ko#"$kmods/"}"
cp "$kmods"/modules.order "$kmods"/modules.builtin* "$ch/lib/modules/$krel/" 2>/dev/null
for m in "${shipped[@]}"; do
	install -D -m 0644 "$(ours_ko $m)" "$ch/lib/modules/$krel/updates/dkms/$m.ko"
done
in_ch depmod "$krel" >>"$out/install.log" 2>&1 || { umount "$ch/proc"; fatal "depmod $krel" "$out/install.log"; }
printf 'statsfd\nstatsfd_vm\n' >"$ch/etc/modules-load.d/statsfd.conf"

# The guest: no login, no timers, nothing that waits for hardware; the
# collector's two sockets enabled (the service is not: socket activation);
# the check run once the system is up, powering off when it ends.
echo statsfd-systemd >"$ch/etc/hostname"
: >"$ch/etc/fstab"
for u in getty.target systemd-logind.service apt-daily.timer apt-daily-upgrade.timer \
	 e2scrub_all.timer e2scrub_reap.service fstrim.timer dpkg-db-backup.timer \
	 systemd-timesyncd.service; do
	ln -sf /dev/null "$ch/etc/systemd/system/$u"
done
in_ch systemctl enable statsfd-collector.socket statsfd-collector-http.socket \
	>>"$out/install.log" 2>&1 || { umount "$ch/proc"; fatal "systemctl enable the sockets" "$out/install.log"; }
mkdir -p "$ch/usr/libexec/statsfd-check"
install -m 0755 "$here/systemd-guest/check.sh" "$ch/usr/libexec/statsfd-check/check.sh"
# Its attacks and clients are collector_siege_test's (tools/tests/siege.c).
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
	-I"$root/tools/lib" -I"$root/tools/tests" -I"$root/include/uapi" \
	$(pkg-config --cflags json-c) -o "$ch/usr/libexec/statsfd-check/siege" \
	"$here/systemd-guest/siege.c" "$root/tools/tests/siege.c" "$root/tools/tests/spawn.c" \
	"$root/tools/lib/client/msg.c" >"$out/siege-build.log" 2>&1 ||
	{ umount "$ch/proc"; fatal "build the guest's siege client" "$out/siege-build.log"; }
cat >"$ch/etc/systemd/system/statsfd-check.service" <<'EOF'
[Unit]
Description=statsfd: the collector's units under this systemd (check-systemd)
After=sockets.target basic.target systemd-modules-load.service
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/usr/libexec/statsfd-check/check.sh
StandardOutput=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
in_ch systemctl enable statsfd-check.service >>"$out/install.log" 2>&1
umount "$ch/proc"
v=$(in_ch dpkg-query -W -f='${Version}' statsfd-tools 2>/dev/null)
check_installed=$([ "$v" = "$ver" ] && echo yes)
if [ "$check_installed" = yes ]; then ok "statsfd-tools $v installed in the guest's root"; else nok "statsfd-tools installed ($v)"; fi

# 3. The disk image and the initramfs that mounts it.
say "root.ext4 (mkfs.ext4 -d) and the initramfs"
kb=$(du -sk --apparent-size "$ch" | cut -f1)
rm -f "$out/root.ext4"
mkfs.ext4 -q -F -L statsfd-root -d "$ch" "$out/root.ext4" "$((kb * 13 / 10 / 1024 + 256))M" \
	>"$out/mkfs.log" 2>&1 || fatal "mkfs.ext4 -d" "$out/mkfs.log"
ird=$out/initramfs.d
rm -rf "$ird"
mkdir -p "$ird"/{bin,dev,proc,sys,newroot,lib/boot}
cp "$stock/bin/busybox" "$ird/bin/busybox"
for a in sh mount umount insmod switch_root sleep cat echo; do ln -s busybox "$ird/bin/$a"; done
i=0
for f in "${order[@]}"; do
	i=$((i + 1))
	cp "$f" "$ird/lib/boot/$(printf %02d $i)-$(basename "$f")"
done
cat >"$ird/init" <<'EOF'
#!/bin/sh
# Load virtio_blk and ext4, mount /dev/vda, hand over to systemd.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in /lib/boot/*.ko; do insmod "$m"; done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 -o rw /dev/vda /newroot || { echo "initramfs: cannot mount /dev/vda"; exec sh; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /lib/systemd/systemd
EOF
chmod 0755 "$ird/init"
(cd "$ird" && find . | sort | cpio -o -H newc -R 0:0 --quiet) >"$out/initramfs.cpio"

# 4. Boot.  Memory: MemoryMax=1G of the unit must fit beside the rest.
say "boot $krel with systemd as PID 1 (TCG)"
cmdline="console=ttyS0 root=/dev/vda rw panic=-1 oops=panic panic_on_warn=1"
cmdline+=" hung_task_panic=1 softlockup_panic=1 watchdog_thresh=55"
cmdline+=" rcupdate.rcu_cpu_stall_timeout=100 printk.time=1"
cmdline+=" systemd.show_status=auto"
: >"$out/results.txt"
: >"$out/console.log"
t0=$SECONDS
timeout --foreground -s KILL "$timeout" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 2048 \
	-nodefaults -display none -no-reboot \
	-kernel "$kernel" -initrd "$out/initramfs.cpio" -append "$cmdline" \
	-drive "file=$out/root.ext4,if=virtio,format=raw,cache=unsafe" \
	-serial "file:$out/console.log" -serial "file:$out/results.txt" \
	</dev/null >"$out/qemu.log" 2>&1
rc=$?
say "guest ended after $((SECONDS - t0)) s (qemu status $rc)"
[ $rc -eq 0 ] || nok "the guest powered off (qemu status $rc${rc/137/: timed out after ${timeout}s})"
[ $rc -eq 0 ] && ok "the guest powered off"

# 5. The guest's TAP, renumbered into ours; its plan must match.
tr -d '\r' <"$out/results.txt" >"$out/results.tap"
gn=0 plan=
while IFS= read -r line; do
	case "$line" in
	"ok "*) gn=$((gn + 1)); ok "guest: ${line#ok * - }" ;;
	"not ok "*) gn=$((gn + 1)); nok "guest: ${line#not ok * - }" ;;
	1..*) plan=${line#1..} ;;
	"#"*) echo "$line" ;;
	esac
done <"$out/results.tap"
if [ -n "$plan" ] && [ "$plan" = "$gn" ] && grep -q '^# statsfd-check-done' "$out/results.tap"; then
	ok "the guest's check ran to its end ($gn results, plan 1..$plan)"
else
	nok "the guest's check ran to its end ($gn results, plan ${plan:-none})"
	tail -n 40 "$out/console.log" | sed 's/^/#   /'
fi
bad=$(grep -E 'WARNING:|BUG:|kernel BUG at|Oops|Call Trace|general protection|Kernel panic' \
	"$out/console.log" | head -n 5)
if [ -z "$bad" ]; then
	ok "no kernel warning on the console"
else
	nok "no kernel warning on the console"
	sed 's/^/#   /' <<<"$bad"
fi
echo "1..$n"
say "check-systemd: $((n - failed)) passed, $failed failed"
if [ "$failed" -eq 0 ]; then
	rm -rf --one-file-system "$ch" "$ird" "$out/root.ext4"
	exit 0
fi
echo "# check-systemd: logs, the root and its image in $out"
exit 1
