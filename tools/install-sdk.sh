#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# install-sdk.sh - install what an out-of-tree provider builds against: the
# in-kernel API header, the format header it includes, and the
# Module.symvers of the statsfd.ko it will load (symbols, CRCs and the
# STATSFD namespace, for modpost).  `make install` runs it into
# /usr/src/statsfd/<release>; the test build runs it into its own tree and
# builds samples/statsfd against that, exactly as a user would.
#
# Usage: install-sdk.sh SRC_ROOT MODULES_BUILD_DIR DEST
set -euo pipefail
src=${1:?usage: install-sdk.sh SRC_ROOT MODULES_BUILD_DIR DEST}
mods=${2:?usage: install-sdk.sh SRC_ROOT MODULES_BUILD_DIR DEST}
dest=${3:?usage: install-sdk.sh SRC_ROOT MODULES_BUILD_DIR DEST}

if [ ! -s "$mods/Module.symvers" ] || ! grep -q 'statsfd_source_init' "$mods/Module.symvers"; then
	echo "install-sdk.sh: no statsfd exports in $mods/Module.symvers: build the modules first" >&2
	exit 1
fi
install -D -m 0644 "$src/include/linux/statsfd.h" "$dest/include/linux/statsfd.h"
install -D -m 0644 "$src/include/uapi/linux/statsfd.h" "$dest/include/uapi/linux/statsfd.h"
# Only the API, the STATSFD namespace (not what a KUnit build exports for
# its tests, nor statsfd_vm.ko's symbols).
awk -F'\t' '$5 == "STATSFD"' "$mods/Module.symvers" >"$dest/Module.symvers.tmp"
if [ ! -s "$dest/Module.symvers.tmp" ]; then
	rm -f "$dest/Module.symvers.tmp"
	echo "install-sdk.sh: no export in namespace STATSFD in $mods/Module.symvers" >&2
	exit 1
fi
mv "$dest/Module.symvers.tmp" "$dest/Module.symvers"
chmod 0644 "$dest/Module.symvers"
