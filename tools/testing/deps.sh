#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps.sh - install the Debian packages statsfd's build and tests need.
#
# Usage: deps.sh [--demo]    install whatever is missing (apt-get), else no-op;
#                            --demo: only what `make demo` needs
#        deps.sh --list          print the full list, one a line
#        deps.sh --missing [PKG...]
#                            print the missing ones of PKG... (default: the
#                            full list below), one per line; install nothing
#
# Idempotent: asks dpkg first and runs apt-get (update + install) only when a
# package is missing, so a warm run costs one dpkg-query.  A package dpkg has
# never heard of (every package on a fresh machine) makes dpkg-query exit 1;
# that is the normal case here, never a reason to stop before apt-get runs.
# apt-get's own exit status decides whether the install worked.
# tools/tests/deps_test.sh drives --missing with such a package.
set -euo pipefail

# What `make demo` needs: the stock kernel's headers, QEMU, a compiler and
# the tools' libraries.  The stock kernel image and the guest's busybox are
# not installed: tools/testing/stock.sh unpacks them into the cache (an
# installed kernel package rebuilds the host's initrd for minutes).  No kernel source:
# a newcomer's first command must not wait for a kernel build or for the
# test-only packages.
DEMO_PACKAGES=(
	build-essential gcc make rsync kmod file binutils xz-utils zstd
	linux-headers-amd64
	qemu-system-x86 cpio
	pkg-config libmicrohttpd-dev libjson-c-dev libsystemd-dev util-linux
	# the collector's HTTP side: TLS checks, gzip, --web.config.file, bcrypt
	libgnutls28-dev zlib1g-dev libyaml-dev libcrypt-dev
	# the collector's protobuf exposition (native histograms): the
	# library, and protoc-c to generate its encoder at build time
	libprotobuf-c-dev protobuf-c-compiler
)
# Everything else make check, make lint and make bench need.  Servers are
# never installed: Debian's packages of Prometheus (with promtool) and
# node_exporter enable and start their services on :9090 and :9100 for
# good.  tools/testing/servers.sh unpacks them into the cache instead
# (`apt-get download` + `dpkg-deb -x`, as stock.sh does for the stock
# kernel), and every test runs those copies; tools/tests/host_state_test.sh
# proves no unit of theirs is enabled after make check.
PACKAGES=(
	"${DEMO_PACKAGES[@]}"
	# kernel builds
	flex bison bc libelf-dev libssl-dev dwarves python3 perl
	# the 6.12 test kernel source
	linux-source-6.12
	# lint
	sparse clang-format
	# tests and packaging (systemd-analyze rates and verifies the units,
	# man renders the man pages)
	dkms jq curl python3-matplotlib systemd man-db
	# make deb (debian/, dpkg-buildpackage), its lint, and make check-deb's
	# fresh chroot
	debhelper dh-dkms lintian debootstrap
	# http_test.sh: certificates, and ss for the connection counts
	openssl iproute2
)

# DEPS_PACKAGES replaces the list (tools/tests/deps_test.sh drives the
# install path with it, against a fake apt-get).
if [ -n "${DEPS_PACKAGES:-}" ]; then
	read -ra PACKAGES <<<"$DEPS_PACKAGES"
fi

# missing PKG... - print the packages of PKG... that are not installed.
missing() {
	local installed
	# dpkg-query exits 1 when any name is unknown to it; its output for the
	# known ones is still complete, so its status is deliberately ignored.
	installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true)
	installed=$(awk '$2 == "installed" { print $1 }' <<<"$installed")
	local p
	for p in "$@"; do
		grep -qxF "$p" <<<"$installed" || echo "$p"
	done
}

if [ "${1:-}" = "--list" ]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi
if [ "${1:-}" = "--missing" ]; then
	shift
	if [ $# -eq 0 ]; then
		set -- "${PACKAGES[@]}"
	fi
	missing "$@"
	exit 0
fi
if [ "${1:-}" = "--demo" ]; then
	shift
	PACKAGES=("${DEMO_PACKAGES[@]}")
fi
if [ $# -ne 0 ]; then
	echo "usage: deps.sh [--demo] | deps.sh --list | deps.sh --missing [PKG...]" >&2
	exit 2
fi

mapfile -t need < <(missing "${PACKAGES[@]}")
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi

echo "deps.sh: installing: ${need[*]}"
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"


# apt-get's exit status is the verdict (a failed install stops here, set
# -e).  What dpkg still does not list as installed afterwards is named, not
# fatal: apt-get may satisfy a name another way (a virtual or renamed
# package), and the step that needs a missing tool fails with its own
# message.
mapfile -t still < <(missing "${PACKAGES[@]}")
if [ ${#still[@]} -ne 0 ]; then
	echo "deps.sh: warning: dpkg does not list as installed after apt-get: ${still[*]}" >&2
fi
