#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lint.sh - `make lint`: checkpatch.pl --strict, sparse (C=2) and the
# kernel's .clang-format, all taken from the linux-source package at build
# time (tools/testing/ksrc.sh), over every .c/.h in the given directories.
#
# Usage: lint.sh BUILD_DIR DIR...        check, exit 1 on any checkpatch or
#                                        sparse finding (clang-format: advisory)
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
# Two deliberate, documented exceptions, each limited to one file:
# - src/compat.h is the one place in the modules that compares
#   LINUX_VERSION_CODE (that is its job), which checkpatch flags wherever it
#   appears; include/linux/statsfd.h, the header providers build against,
#   compares it once too, to spell the symbol namespace (STATSFD_NS) as the
#   kernel wants it, since it cannot include src/compat.h;
# - the descriptor macros in include/linux/statsfd.h reuse their arguments
#   inside offsetof()/typeof()/BUILD_BUG_ON_ZERO(), which never evaluate
#   them, exactly like KVM's STATS_DESC macros.
checkpatch_ignore() {
	case "$1" in
	src/compat.h) echo LINUX_VERSION_CODE,CONSTANT_COMPARISON ;;
	include/linux/statsfd.h) echo MACRO_ARG_REUSE,MACRO_ARG_PRECEDENCE,LINUX_VERSION_CODE,CONSTANT_COMPARISON ;;
	*) echo NONE ;;
	esac
}
echo "lint: checkpatch --strict (${#files[@]} files)"
: >"$logs/lint-checkpatch.log"
for f in "${files[@]}"; do
	perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
		--no-summary --ignore "$(checkpatch_ignore "$f")" -f "$f" \
		>>"$logs/lint-checkpatch.log" 2>&1
done
# The KVM series, as it would be posted: each patch as a patch.
for f in kvm/patches/*/*.patch; do
	[ -f "$f" ] || continue
	# The cover letter is prose: no diff to check.
	[ "${f##*/}" = 0000-cover-letter.patch ] && continue
	# On stdin: given a file name, this checkpatch misreads the blank
	# context lines of a git format-patch file as trailing whitespace.
	perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
		--no-summary - <"$f" 2>&1 | sed "s|^-:|$f:|" >>"$logs/lint-checkpatch.log"
done
if [ -s "$logs/lint-checkpatch.log" ]; then
	# Per file: how many findings of each type; the details are in the log.
	grep -E '^[^ :]+:[0-9]+: [A-Z]+:' "$logs/lint-checkpatch.log" |
		sed -E 's/^([^:]+):[0-9]+: ([A-Z]+:[A-Z_]+).*/\1 \2/' | sort | uniq -c |
		awk '{ printf "  checkpatch: %s: %d x %s\n", $2, $1, $3 }'
	echo "lint: checkpatch details: $logs/lint-checkpatch.log"
	bad=1
fi

# clang-format is advisory, as Documentation/dev-tools/clang-format.rst
# says of the kernel's own tree: its output for tables, macros and aligned
# initializers is often worse than the hand layout checkpatch accepts, so
# we report the differences and gate on checkpatch and sparse.
echo "lint: clang-format (kernel .clang-format, advisory)"
if ! clang-format --style="file:$ksrc/.clang-format" --dry-run --Werror \
	"${files[@]}" >"$logs/lint-clang-format.log" 2>&1; then
	n=$(grep -cE '^[^ ].*: (error|warning):' "$logs/lint-clang-format.log")
	echo "  clang-format: $n places differ (advisory; details: $logs/lint-clang-format.log;" \
		"'make format FILES=...' rewrites a file)"
fi

sparse_kdirs=()
stock=${STOCK_KDIR:-$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n 1)}
[ -n "$stock" ] && sparse_kdirs+=("$stock")
test_kdir=${TEST_KDIR:-${KCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statsfd}/linux-6.12-debug}
[ -f "$test_kdir/.statsfd-stamp" ] && sparse_kdirs+=("$test_kdir")
for kdir in "${sparse_kdirs[@]}"; do
	echo "lint: sparse C=2 against $kdir"
	# C=2 checks every source, whether or not it needs recompiling.
	if ! MODULES_LOG=$logs/lint-sparse-$(basename "$kdir").log \
		"$root/tools/testing/modules.sh" "$kdir" "$build" C=2 >/dev/null; then
		bad=1
	fi
done

# The uapi structs the docs show are the headers', through kernel-doc
# (tools/testing/uapi-doc.py; `make docs` rewrites them).  The check is
# shown to fail first: a page whose struct lost a member must be refused.
echo "lint: uapi structs in Documentation/ (kernel-doc)"
kdoc=$ksrc/scripts/kernel-doc
planted=$(mktemp -d)
sed '0,/^\t\t__u32 name_size;$/{/^\t\t__u32 name_size;$/d}' "$root/Documentation/statsfd-abi.rst" \
	>"$planted/statsfd-abi.rst"
if python3 "$root/tools/testing/uapi-doc.py" --kernel-doc "$kdoc" --check \
	"$planted/statsfd-abi.rst" >"$logs/lint-uapi-doc.log" 2>&1; then
	echo "  uapi-doc: a page with a member missing from struct statsfd_header passed the check"
	bad=1
fi
rm -rf "$planted"
if ! python3 "$root/tools/testing/uapi-doc.py" --kernel-doc "$kdoc" --check \
	>>"$logs/lint-uapi-doc.log" 2>&1; then
	sed 's/^/  /' "$logs/lint-uapi-doc.log"
	echo "  ('make docs' rewrites the blocks from the headers)"
	bad=1
fi

# Structure (tools/testing/structure.py): no product function over 100
# lines, no call circle between the files of one folder.  Shown to fail
# first on a planted tree with one of each.
echo "lint: structure (function length, call circles)"
planted=$(mktemp -d)
mkdir -p "$planted/src/x"
{
	printf 'int b(void);\n\nint a(void)\n{\n'
	for i in $(seq 101); do printf '\tb();\n'; done
	printf '\treturn 0;\n}\n'
} >"$planted/src/x/a.c"
printf 'int a(void);\n\nint b(void)\n{\n\treturn a();\n}\n' >"$planted/src/x/b.c"
python3 "$root/tools/testing/structure.py" "$planted" >"$logs/lint-structure.log" 2>&1
if ! grep -q 'a() is 105 lines' "$logs/lint-structure.log" ||
	! grep -q 'call circle: src/x/a.c <-> src/x/b.c' "$logs/lint-structure.log"; then
	echo "  structure: the planted long function and call circle were not both found:"
	sed 's/^/  /' "$logs/lint-structure.log"
	bad=1
fi
rm -rf "$planted"
if ! python3 "$root/tools/testing/structure.py" "$root" >"$logs/lint-structure.log" 2>&1; then
	sed 's/^/  /' "$logs/lint-structure.log"
	bad=1
fi

if [ "$bad" -ne 0 ]; then
	echo "lint: FAILED (logs in $logs/lint-*.log)"
	exit 1
fi
echo "lint: clean"
