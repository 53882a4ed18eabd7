#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The man pages statsfd(1), statsfd-collector(8) and statsfd-vmm(1): they render without a
# single warning from man/groff, and every long option the programs' own
# --help lists is documented in them, so that pages and programs cannot
# drift apart.  Usage: man_test.sh BUILD_DIR   (TAP on stdout)
set -u
. "$(dirname "$0")/../testing/lib/tap.sh"
out=${1:?usage: man_test.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)

for page in statsfd.1:statsfd statsfd-collector.8:statsfd-collector statsfd-vmm.1:statsfd-vmm; do
	file=$root/Documentation/man/${page%%:*}
	bin=$out/bin/${page##*:}
	warn=$(MANWIDTH=80 man --warnings -l "$file" 2>&1 >/dev/null)
	check "${page%%:*} renders without warnings${warn:+: $warn}" test -z "$warn"
	text=$(MANWIDTH=80 man -l "$file" 2>/dev/null)
	check "${page%%:*} renders (NAME, SYNOPSIS, OPTIONS)" \
		bash -c 'grep -q "^NAME" <<<"$1" && grep -q "^SYNOPSIS" <<<"$1" && grep -q "^OPTIONS" <<<"$1"' _ "$text"
	# Long options of --help (the usage text), each as --name in the page.
	mapfile -t opts < <("$bin" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
	missing=()
	for o in "${opts[@]}" --help; do
		grep -q -- "$o\b" <<<"$text" || missing+=("$o")
	done
	check "${page%%:*}: all ${#opts[@]} long options of ${page##*:} --help documented${missing:+ (missing: ${missing[*]})}" \
		test ${#missing[@]} -eq 0 -a ${#opts[@]} -gt 5
done
# libstatsfd(3), the libraries' page: renders, names the three.
file=$root/Documentation/man/libstatsfd.3
warn=$(MANWIDTH=80 man --warnings -l "$file" 2>&1 >/dev/null)
check "libstatsfd.3 renders without warnings${warn:+: $warn}" test -z "$warn"
text=$(MANWIDTH=80 man -l "$file" 2>/dev/null)
check "libstatsfd.3 names libstatsfd, libstatsfd-expo and libstatsfd-client with their headers" \
	bash -c 'for w in libstatsfd.so.2 libstatsfd-expo.so.1 libstatsfd-client.so.1 \
		"<statsfd.h>" "<statsfd_expo.h>" "<statsfd_client.h>"; do grep -qF -- "$w" <<<"$1" || exit 1; done' _ "$text"
# The check itself must be able to fail: an option the page lacks.
text=$(MANWIDTH=80 man -l "$root/Documentation/man/statsfd.1" 2>/dev/null)
check "an undocumented option is noticed (--no-such-option)" \
	bash -c '! grep -q -- "--no-such-option\b" <<<"$1"' _ "$text"
finish
