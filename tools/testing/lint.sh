#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lint.sh - `make lint`: checkpatch.pl --strict, sparse (C=2) and the
# kernel's .clang-format, all taken from the linux-source package at build
# time (tools/testing/ksrc.sh), over every .c/.h in the given directories.
#
# Usage: lint.sh BUILD_DIR DIR...        check, exit 1 on any finding
#        lint.sh --fix BUILD_DIR PATH... apply clang-format in place
#
# sparse runs over the module build against the stock 6.1 headers (no
# kernel build needed) and, when it is built, the 6.12 test kernel.
set -uo pipefail

fix=0
if [ "${1:-}" = --fix ]; then
	fix=1
	shift
fi
build=$(realpath -m "${1:?usage: lint.sh [--fix] BUILD_DIR DIR...}")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
ksrc=$build/ksrc
logs=$build/logs
mkdir -p "$logs"
"$root/tools/testing/ksrc.sh" "$build" || exit 1

cd "$root" || exit 1
mapfile -t files < <(find "$@" -path ./build -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print 2>/dev/null | sort)
if [ ${#files[@]} -eq 0 ]; then
	echo "lint: no C sources under: $*" >&2
	exit 1
fi

if [ "$fix" = 1 ]; then
	exec clang-format --style="file:$ksrc/.clang-format" -i "${files[@]}"
fi

bad=0
echo "lint: checkpatch --strict (${#files[@]} files)"
if ! perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
	--no-summary -f "${files[@]}" >"$logs/lint-checkpatch.log" 2>&1 ||
	[ -s "$logs/lint-checkpatch.log" ]; then
	# Per file: how many findings of each type; the details are in the log.
	grep -E '^[^ :]+:[0-9]+: [A-Z]+:' "$logs/lint-checkpatch.log" |
		sed -E 's/^([^:]+):[0-9]+: ([A-Z]+:[A-Z_]+).*/\1 \2/' | sort | uniq -c |
		awk '{ printf "  checkpatch: %s: %d x %s\n", $2, $1, $3 }'
	echo "lint: checkpatch details: $logs/lint-checkpatch.log"
	bad=1
fi

echo "lint: clang-format (kernel .clang-format)"
if ! clang-format --style="file:$ksrc/.clang-format" --dry-run --Werror \
	"${files[@]}" >"$logs/lint-clang-format.log" 2>&1; then
	grep -E '^[^ ].*: (error|warning):' "$logs/lint-clang-format.log" |
		cut -d: -f1 | sort | uniq -c |
		awk '{ printf "  clang-format: %s: %d places differ\n", $2, $1 }'
	echo "lint: clang-format details: $logs/lint-clang-format.log; 'make format FILES=...' rewrites a file"
	bad=1
fi

sparse_kdirs=()
stock=${STOCK_KDIR:-$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
[ -n "$stock" ] && sparse_kdirs+=("$stock")
test_kdir=$build/kernel/linux-6.12
[ -f "$test_kdir/.statsfd-stamp" ] && sparse_kdirs+=("$test_kdir")
for kdir in "${sparse_kdirs[@]}"; do
	echo "lint: sparse C=2 against $kdir"
	# C=2 checks every source, whether or not it needs recompiling.
	if ! MODULES_LOG=$logs/lint-sparse-$(basename "$kdir").log \
		"$root/tools/testing/modules.sh" "$kdir" "$build" C=2 >/dev/null; then
		bad=1
	fi
done

if [ "$bad" -ne 0 ]; then
	echo "lint: FAILED (logs in $logs/lint-*.log)"
	exit 1
fi
echo "lint: clean"
