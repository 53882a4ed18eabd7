#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps.sh - install the Debian packages statsfd's build and tests need.
#
# Idempotent: asks dpkg first and runs apt-get (update + install) only when a
# package is missing, so a warm run costs one dpkg-query.  Other helpers append
# their packages to the PACKAGES list below.
set -euo pipefail

PACKAGES=(
	# kernel and module builds
	build-essential gcc make flex bison bc libelf-dev libssl-dev dwarves
	rsync xz-utils zstd file binutils kmod python3 perl
	# the 6.12 test kernel source and the stock 6.1 kernel leg
	linux-source-6.12 linux-image-amd64 linux-headers-amd64
	# guest
	qemu-system-x86 busybox-static cpio
	# lint
	sparse clang-format
	# userspace (tools/)
	pkg-config libmicrohttpd-dev libjson-c-dev dkms prometheus jq curl util-linux
	python3-matplotlib
)

# One dpkg-query for the whole list: a package it does not know at all is
# reported on stderr and simply absent from the installed set.
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null |
	awk '$2 == "installed" { print $1 }')
missing=()
for p in "${PACKAGES[@]}"; do
	grep -qxF "$p" <<<"$installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "deps.sh: installing: ${missing[*]}"
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
