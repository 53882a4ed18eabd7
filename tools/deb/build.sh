#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build.sh - `make deb`: statsfd's Debian packages (debian/) with
# `dpkg-buildpackage -us -uc -b`, then lintian.
#
# Usage: build.sh OUT      (default build/deb)
#
# dpkg-buildpackage writes into the tree it builds (debian/build,
# debian/tmp, debian/<package>/, debian/files) and its products into the
# parent directory; so it builds a copy of the checkout's files (tracked
# and untracked, .gitignore'd ones left out) in OUT/statsfd-VERSION/, and
# the .debs, .buildinfo and .changes land in OUT/.  Nothing generated
# touches the work tree.  lintian must report no error and no warning
# (debian/*.lintian-overrides say why for each override); its report is
# OUT/lintian.txt.  Prints the .changes file.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "${1:-$root/build/deb}")
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
src=$out/statsfd-$ver

rm -rf "$out"
mkdir -p "$src"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	# Files deleted but not yet committed are listed by git, not copied.
	git -C "$root" ls-files -co --exclude-standard -z |
		(cd "$root" && while IFS= read -r -d '' f; do
			[ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"
		done) | tar -C "$root" --null -T - -cf - | tar -C "$src" -xf -
else
	tar -C "$root" --exclude=./build --exclude=./.git -cf - . | tar -C "$src" -xf -
fi

echo "deb: dpkg-buildpackage -us -uc -b in $src (log: $out/build.log)" >&2
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed, see $out/build.log" >&2
	exit 1
fi
changes=$(ls "$out"/statsfd_"$ver"_*.changes)
echo "deb: lintian (report: $out/lintian.txt)" >&2
if ! lintian --fail-on error,warning --display-info --show-overrides "$changes" \
	>"$out/lintian.txt" 2>&1; then
	cat "$out/lintian.txt" >&2
	echo "deb: lintian reports errors or warnings" >&2
	exit 1
fi
grep -E '^[EW]: ' "$out/lintian.txt" >&2 && exit 1
ls "$out"/*.deb >&2
echo "$changes"
