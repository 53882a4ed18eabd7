#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""uapi-doc.py - the uapi structs in Documentation/, pulled from the headers.

The ABI is include/uapi/linux/*.h; the .rst pages show its structs in
literal blocks (a tab-indented "struct NAME {" ... "};" after a "::") so
that they read well as plain text.  Those blocks are not written by hand:
this script takes each struct's definition from the header with the
kernel's scripts/kernel-doc (its -rst "Definition" block, what the kernel's
Sphinx build would show) and writes it into every block that shows it.

kernel-doc prints a preprocessor line inside a struct with a ';' appended
(statsfd_desc keeps its flexible array apart for C++, with the same member
in both branches): those lines are dropped and a member repeated by the
branches is kept once, so the block is the declaration a reader compiles.

Usage: uapi-doc.py --kernel-doc PATH [--check] [RST...]
  --check  change nothing; exit 1 and say which block differs when a page
           is not what the headers make it (make lint runs this)
  without: rewrite the blocks in place (make docs)
Default pages: every Documentation/*.rst.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADERS = sorted(glob.glob(os.path.join(ROOT, "include", "uapi", "linux", "*.h")))
START = re.compile(r"^\tstruct (\w+) \{$")


def declared_in(name):
    """The uapi header that defines struct @name, or None."""
    pat = re.compile(r"^struct %s \{" % re.escape(name), re.M)
    for h in HEADERS:
        with open(h) as f:
            if pat.search(f.read()):
                return h
    return None


def definition(kdoc, name, header):
    """struct @name as kernel-doc prints its definition, tab-indented."""
    out = subprocess.run(["perl", kdoc, "-rst", "-function", name, header],
                         capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")
    try:
        i = next(k for k, l in enumerate(lines) if l.strip() == "**Definition**::")
    except StopIteration:
        sys.exit(f"uapi-doc.py: kernel-doc has no definition of struct {name} in {header}")
    body = []
    for l in lines[i + 2:]:
        if not l.strip():
            break
        body.append(l)
    # kernel-doc indents the block by 4 spaces and members by 4 more.
    res = []
    for l in body:
        l = l[4:] if l.startswith("    ") else l.lstrip()
        if l.lstrip().startswith("#"):
            continue
        depth = (len(l) - len(l.lstrip(" "))) // 4
        l = "\t" * (depth + 1) + l.lstrip(" ")
        if res and l == res[-1] and depth:
            continue
        res.append(l)
    if not res or not START.match(res[0]) or res[-1] != "\t};":
        sys.exit(f"uapi-doc.py: unexpected kernel-doc output for struct {name}:\n" + out)
    return res


def process(path, kdoc, check):
    with open(path) as f:
        lines = f.read().split("\n")
    out, i, bad, n = [], 0, [], 0
    while i < len(lines):
        m = START.match(lines[i])
        # A literal block: the previous non-blank line ends in "::".
        prev = next((l for l in reversed(out) if l.strip()), "")
        header = m and prev.rstrip().endswith("::") and declared_in(m.group(1))
        if not header:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j] != "\t};":
            j += 1
        if j == len(lines):
            sys.exit(f"uapi-doc.py: {path}:{i + 1}: struct {m.group(1)} has no closing '\t}};'")
        want = definition(kdoc, m.group(1), header)
        if lines[i:j + 1] != want:
            bad.append(f"{os.path.relpath(path, ROOT)}:{i + 1}: struct {m.group(1)} "
                       f"differs from {os.path.relpath(header, ROOT)}")
        out.extend(want)
        n += 1
        i = j + 1
    if not check and bad:
        with open(path, "w") as f:
            f.write("\n".join(out))
    return n, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel-doc", required=True)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("rst", nargs="*")
    a = ap.parse_args()
    pages = a.rst or sorted(glob.glob(os.path.join(ROOT, "Documentation", "*.rst")))
    total, bad = 0, []
    for p in pages:
        n, b = process(p, a.kernel_doc, a.check)
        total += n
        bad += b
    if total == 0:
        sys.exit("uapi-doc.py: no uapi struct block found: nothing was checked")
    for b in bad:
        print(("uapi-doc: " if a.check else "uapi-doc: rewrote ") + b)
    print(f"uapi-doc: {total} uapi struct blocks, {len(bad)} "
          + ("out of date" if a.check else "rewritten"))
    return 1 if a.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
