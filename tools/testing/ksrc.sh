#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ksrc.sh - the few kernel source files the build needs without a kernel
# build: kselftest_harness.h (selftests), checkpatch.pl, .clang-format and
# kernel-doc (lint, make docs).  They come from the linux-source-6.12 package at build time and
# land in BUILD_DIR/ksrc/ with their source-tree paths; never copy them into
# git.
#
# Usage: ksrc.sh BUILD_DIR
set -euo pipefail

build=$(realpath -m "${1:?usage: ksrc.sh BUILD_DIR}")
tarball=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
pkg=${KERNEL_PACKAGE:-linux-source-6.12}
kdir=${TEST_KDIR:-${KCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statsfd}/linux-6.12-debug}
out=$build/ksrc
files=(
	.clang-format
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	scripts/kernel-doc
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
)

pkgver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || stat -c %Y "$tarball")
# A new file in the list extracts again.
stamp="$pkgver ${files[*]}"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
	exit 0
fi

rm -rf "$out"
mkdir -p "$out"
# The test kernel tree, when already extracted from the same package, saves
# decompressing the tarball again.
if [ -f "$kdir/.statsfd-source" ] && [ "$(cat "$kdir/.statsfd-source")" = "$pkgver" ]; then
	(cd "$kdir" && cp --parents "${files[@]}" "$out/")
else
	top=$(basename "$tarball" .tar.xz)
	tar -xf "$tarball" -C "$out" --strip-components=1 "${files[@]/#/$top/}"
fi
echo "$stamp" >"$out/.stamp"
