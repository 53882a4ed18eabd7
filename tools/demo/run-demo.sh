#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host side of `make demo`: boots the guest with tools/demo/guest-demo.sh
# through tools/testing/qemu/run-guest and streams the guest's output
# (its results channel) to the terminal while QEMU runs.
# Usage: run-demo.sh --kernel BZIMAGE --modules-dir DIR --tools DIR
#                    --out DIR [--timeout SECONDS] [--busybox PATH]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kernel= mods= tools= out= timeout=600 busybox=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--modules-dir) mods=$2; shift 2 ;;
	--tools) tools=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--busybox) busybox=$2; shift 2 ;;
	*) echo "run-demo: unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
results=$out/results.txt
: >"$results"
# Refresh `statsfd watch` in place only when a person is watching.
append=
[ -t 1 ] && append=statsfd_demo_ansi=1
echo "statsfd demo: booting $(basename "$kernel") under QEMU (TCG, no KVM needed);"
echo "  console log: $out/console.log"
"$root/tools/testing/qemu/run-guest" --kernel "$kernel" --modules-dir "$mods" \
	--tools "$tools" --script "$root/tools/demo/guest-demo.sh" \
	--file "$root/tools/testing/lib/tap.sh:/usr/libexec/statsfd/lib/tap.sh" \
	--results "$results" --log "$out/console.log" --timeout "$timeout" \
	--mem 1024 --smp 2 ${append:+--append "$append"} ${busybox:+--busybox "$busybox"} &
qemu=$!
tail -n +1 -f "$results" --pid "$qemu" 2>/dev/null
rc=0
wait "$qemu" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "statsfd demo: the guest did not finish cleanly (status $rc); see $out/console.log" >&2
	exit 1
fi
if ! grep -q '^demo: done' "$results"; then
	echo "statsfd demo: the demo script failed; see $results and $out/console.log" >&2
	exit 1
fi
