#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The shared libraries of tools/lib: libstatsfd.so.2 (the reader,
# statsfd.h), libstatsfd-expo.so.1 (the Prometheus exposition,
# statsfd_expo.h) and libstatsfd-client.so.1 (the collector's wire
# protocol, JSON and client, statsfd_client.h); the Debian packages
# libstatsfd2, libstatsfd-expo1, libstatsfd-client1.  For each: its
# soname, the libraries it needs (expo and client: libstatsfd.so.2); it
# exports exactly the functions its public header declares extern (gcc
# -aux-info), all in its version node, so a function added to a header and
# not to the library's .map, or a helper leaking out, fails here; and a
# program built with `pkg-config --cflags --libs statsfd-<lib>` against a
# `make install` into a scratch root links to it and reads a stats image
# through it.
# Usage: libso_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
out=${1:?usage: libso_test.sh BUILD_DIR}
tools=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$tools/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# NAME SONAME HEADER NODE NEEDS: one line per library.
libs="libstatsfd libstatsfd.so.2 statsfd.h STATSFD_2 -
libstatsfd-expo libstatsfd-expo.so.1 statsfd_expo.h STATSFD_EXPO_1 libstatsfd.so.2
libstatsfd-client libstatsfd-client.so.1 statsfd_client.h STATSFD_CLIENT_1 libstatsfd.so.2"

while read -r name soname header node needs; do
	so=$out/lib/$soname
	got=$(objdump -p "$so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
	check "$name: SONAME is $soname ($got)" test "$got" = "$soname"
	ours=$(objdump -p "$so" 2>/dev/null | awk '$1 == "NEEDED" && $2 ~ /^libstatsfd/ { print $2 }' | paste -sd' ')
	check "$name: needs of ours '${needs/-/}' ('$ours')" test "$ours" = "${needs/-/}"
	printf '#include "%s"\n' "$header" >"$tmp/h.c"
	# shellcheck disable=SC2046
	(cd "$tmp" && gcc -D_GNU_SOURCE -I"$root/include/uapi" -I"$tools/lib" \
		$(pkg-config --cflags json-c) -aux-info h.aux -fsyntax-only h.c)
	grep -E "$tools/lib/${header//./\\.}:" "$tmp/h.aux" | grep -v ' static ' |
		grep -oE '\bstatsfd_[a-z0-9_]+ \(' | tr -d ' (' | sort -u >"$tmp/declared"
	nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/exported"
	check "$name: $header declares functions ($(wc -l <"$tmp/declared"))" test -s "$tmp/declared"
	extra=$(comm -13 "$tmp/declared" "$tmp/exported" | paste -sd' ')
	missing=$(comm -23 "$tmp/declared" "$tmp/exported" | paste -sd' ')
	check "$name: exports nothing $header does not declare ('$extra')" test -z "$extra"
	check "$name: exports every function $header declares ('$missing')" test -z "$missing"
	other=$(nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | grep -v "@@$node\$" | paste -sd' ')
	check "$name: every export is in version node $node ('$other')" test -z "$other"
done <<<"$libs"

# No function is exported twice: each lives in one library.
for so in libstatsfd.so.2 libstatsfd-expo.so.1 libstatsfd-client.so.1; do
	nm -D --defined-only "$out/lib/$so" | awk '$2 == "T" { print $3 }' | sed 's/@.*//'
done | sort | uniq -d >"$tmp/twice"
check "no function exported by two libraries ('$(paste -sd' ' "$tmp/twice")')" test ! -s "$tmp/twice"

# The installed libraries, as a VMM author's build finds them.
dest=$tmp/root
make -s -C "$tools" O="$out" install DESTDIR="$dest" PREFIX=/usr >"$tmp/install.log" 2>&1
check "make install into a scratch root" test $? -eq 0
sed 's/^/# /' "$tmp/install.log" | tail -5
"$out/san/tests/mkimage" vm-1-0/vcpu-0 >"$tmp/v0.img"

# One program, built once per library with -DUSE_<LIB>: it opens the
# image with libstatsfd and prints its id and what the library under test
# makes of it (the number of stats, the bytes of its Prometheus text, the
# length of its JSON schema).
cat >"$tmp/app.c" <<'APP'
#include <stdio.h>
#include <stdlib.h>
#include <statsfd.h>
#ifdef USE_EXPO
#include <statsfd_expo.h>
#endif
#ifdef USE_CLIENT
#include <statsfd_client.h>
#endif

static size_t use(struct statsfd *sf)
{
#if defined(USE_EXPO)
	struct statsfd_error err;
	struct statsfd_buf out = { 0 };
	struct statsfd_prom_series s = { 0 };
	uint64_t *v = calloc(1, statsfd_data_size(sf) + 8);
	size_t len = 0;

	s.sf = sf;
	s.values = v;
	s.prefix = "kvm_vcpu";
	s.labels = "";
	if (v && !statsfd_read(sf, v, &err) && !statsfd_prom_write(&out, &s, 1, NULL))
		len = out.len;
	statsfd_buf_free(&out);
	free(v);
	return len;
#elif defined(USE_CLIENT)
	struct json_object *schema = statsfd_json_schema(sf);
	size_t len = schema ? json_object_array_length(schema) : 0;

	json_object_put(schema);
	return len;
#else
	return statsfd_num_stats(sf);
#endif
}

int main(int argc, char **argv)
{
	struct statsfd_error err;
	struct statsfd *sf = statsfd_open_path(argv[1], &err);

	if (!sf)
		return 1;
	printf("%s %zu\n", statsfd_id(sf), use(sf));
	statsfd_close(sf);
	return 0;
}
APP
while read -r name soname header node needs; do
	pc=${name#lib}
	check "$name: installed $name.so -> $soname -> the library" \
		test "$(readlink "$dest/usr/lib/$name.so")" = "$soname" -a \
		-f "$dest/usr/lib/$(readlink "$dest/usr/lib/$soname")" -a -f "$dest/usr/lib/$name.a" \
		-a -f "$dest/usr/include/statsfd/$header"
	# The scratch root's .pc files, their paths moved there (json-c.pc
	# gets the same includedir; <json-c/json.h> is still found in
	# /usr/include).
	flags=$(PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig pkg-config \
		--define-variable=libdir="$dest/usr/lib" --define-variable=includedir="$dest/usr/include" \
		--cflags --libs "$pc" 2>&1)
	check "pkg-config $pc: $flags" bash -c "grep -q -- '-I$dest/usr/include/statsfd' <<<'$flags' && grep -q -- '-l${name#lib}' <<<'$flags'"
	def=${pc#statsfd}
	def=${def#-}
	# shellcheck disable=SC2086
	gcc -Wall -Werror ${def:+-DUSE_${def^^}} -o "$tmp/$pc" "$tmp/app.c" $flags >"$tmp/cc.log" 2>&1
	check "$name: a program builds with pkg-config's flags" test $? -eq 0
	sed 's/^/# /' "$tmp/cc.log"
	check "it needs $soname" bash -c "objdump -p '$tmp/$pc' | grep -q 'NEEDED *$soname'"
	got=$(LD_LIBRARY_PATH=$dest/usr/lib "$tmp/$pc" "$tmp/v0.img" 2>&1)
	check "and reads a stats image through the shared libraries ('$got')" \
		bash -c "[[ '$got' =~ ^vm-1-0/vcpu-0\ [1-9][0-9]*$ ]]"
done <<<"$libs"
finish
