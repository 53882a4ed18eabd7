#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# abi_doc_test.sh - the complete example program of
# Documentation/statsfd-abi.rst ("Reading the mapping consistently"),
# built from the document by the selftests' Makefile, runs and prints what
# the document says: a vCPU's values through its mapping, one snapshot.
# TAP on stdout.
here=$(dirname "$0")
. "$here/lib/tap.sh"
out=$("$here/examples/abi_doc_example" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	ok "the ABI document's example program runs"
else
	nok "the ABI document's example program runs (rc $rc: $out)"
fi
want="mapped: exits 1010 io_exits 1000 mmio_exits 10 generation 5"
if [ "$out" = "$want" ]; then
	ok "it prints the mapped snapshot the document promises"
else
	nok "it prints '$out', not '$want'"
fi
finish
