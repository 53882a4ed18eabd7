#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The shared libstatsfd (libstatsfd.so.1, the Debian package libstatsfd1):
# its soname; it exports exactly the functions the public headers declare
# extern (gcc -aux-info over statsfd.h, statsfd_msg.h, statsfd_json.h,
# statsfd_client.h), so a function added to a header and not to
# lib/libstatsfd.map, or a helper leaking out, fails here; and a program
# built with `pkg-config --cflags --libs statsfd` against a `make install`
# into a scratch root links to it and reads a stats image through it.
# Usage: libso_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
out=${1:?usage: libso_test.sh BUILD_DIR}
tools=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$tools/.." && pwd)
so=$out/lib/libstatsfd.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

soname=$(objdump -p "$so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
check "SONAME is libstatsfd.so.1 ($soname)" test "$soname" = libstatsfd.so.1

printf '#include "statsfd.h"\n#include "statsfd_msg.h"\n#include "statsfd_json.h"\n#include "statsfd_client.h"\n' >"$tmp/h.c"
# shellcheck disable=SC2046
(cd "$tmp" && gcc -D_GNU_SOURCE -I"$root/include/uapi" -I"$tools/lib" \
	$(pkg-config --cflags json-c) -aux-info h.aux -fsyntax-only h.c)
grep -E "$tools/lib/statsfd[a-z_]*\.h:" "$tmp/h.aux" | grep -v ' static ' |
	grep -oE '\bstatsfd_[a-z0-9_]+ \(' | tr -d ' (' | sort -u >"$tmp/declared"
nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/exported"
check "the public headers declare functions ($(wc -l <"$tmp/declared"))" test -s "$tmp/declared"
extra=$(comm -13 "$tmp/declared" "$tmp/exported" | paste -sd' ')
missing=$(comm -23 "$tmp/declared" "$tmp/exported" | paste -sd' ')
check "exports nothing the public headers do not declare ('$extra')" test -z "$extra"
check "exports every function the public headers declare ('$missing')" test -z "$missing"
other=$(nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | grep -v '@@STATSFD_1$' | paste -sd' ')
check "every export is in version node STATSFD_1 ('$other')" test -z "$other"

# The installed library, as a VMM author's build finds it.
dest=$tmp/root
make -s -C "$tools" O="$out" install DESTDIR="$dest" PREFIX=/usr >"$tmp/install.log" 2>&1
check "make install into a scratch root" test $? -eq 0 -a -f "$dest/usr/lib/pkgconfig/statsfd.pc"
check "installed: libstatsfd.so -> libstatsfd.so.1 -> the library" \
	test "$(readlink "$dest/usr/lib/libstatsfd.so")" = libstatsfd.so.1 -a \
	-f "$dest/usr/lib/$(readlink "$dest/usr/lib/libstatsfd.so.1")"
cat >"$tmp/app.c" <<'EOF'
#include <stdio.h>
#include <statsfd.h>
#include <statsfd_client.h>

int main(int argc, char **argv)
{
	struct statsfd_error err;
	struct statsfd *sf = statsfd_open_path(argv[1], &err);

	if (!sf)
		return 1;
	printf("%s %u\n", statsfd_id(sf), statsfd_num_stats(sf));
	statsfd_close(sf);
	return 0;
}
EOF
# The scratch root's statsfd.pc, its paths moved there (json-c.pc gets the
# same includedir; <json-c/json.h> is still found in /usr/include).
flags=$(PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig pkg-config \
	--define-variable=libdir="$dest/usr/lib" --define-variable=includedir="$dest/usr/include" \
	--cflags --libs statsfd 2>&1)
check "pkg-config statsfd: $flags" bash -c "grep -q -- '-I$dest/usr/include/statsfd' <<<'$flags' && grep -q -- '-lstatsfd' <<<'$flags'"
# shellcheck disable=SC2086
gcc -Wall -Werror -o "$tmp/app" "$tmp/app.c" $flags >"$tmp/cc.log" 2>&1
check "a program builds with pkg-config's flags" test $? -eq 0
sed 's/^/# /' "$tmp/cc.log"
check "it needs libstatsfd.so.1" bash -c "objdump -p '$tmp/app' | grep -q 'NEEDED *libstatsfd.so.1'"
"$out/san/tests/mkimage" vm-1-0/vcpu-0 >"$tmp/v0.img"
got=$(LD_LIBRARY_PATH=$dest/usr/lib "$tmp/app" "$tmp/v0.img" 2>&1)
check "and reads a stats image through the shared library ('$got')" \
	bash -c "[[ '$got' =~ ^vm-1-0/vcpu-0\ [1-9][0-9]*$ ]]"
finish
