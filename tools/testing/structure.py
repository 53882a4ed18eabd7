#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""structure.py - two structural rules of the tree, checked by make lint.

1. No function in product code is longer than MAX_LINES lines, counted
   from the first line of its definition to its closing brace.  Kernel
   style makes definitions easy to find without a C parser: a definition
   starts at column 0 and its body opens with a "{" alone at column 0 and
   closes with a "}" at column 0.
2. No call circle between the files of one component (one folder): file A
   calls a function defined in file B and B, directly or through other
   files of the folder, calls one defined in A.  A circle means the files
   are one concern (merge them) or a function sits in the wrong file.
   Calls are found by name: every non-static function defined in a file of
   the folder, and every identifier the other files of that folder use.

Usage: structure.py [--max-lines N] [ROOT]
Exit status 1 when a rule is broken; each finding is one line on stdout.
"""
import argparse
import os
import re
import sys

MAX_LINES = 100
# Where rule 1 applies: the code we ship.
PRODUCT = ["src", "include", "samples", "tools/lib", "tools/statsfd",
           "tools/collector", "tools/vmm"]
# Where rule 2 applies: every folder of C sources with more than one file.
COMPONENTS = PRODUCT + ["tools/bench", "tools/selftests", "tools/tests",
                        "tests/kunit"]

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TAG = re.compile(r"\b(?:struct|union|enum)\s+[A-Za-z_][A-Za-z0-9_]*")
# The name of a function being defined: the identifier before the first
# "(" of the definition's head, at column 0 (not a macro, type or label).
HEAD_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def strip_comments(text):
    """Blank out comments and string/char literals, keeping line breaks."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i > 1 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """Yield (name, first_line, last_line, static) for each definition."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = strip_comments(f.read()).split("\n")
    head = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == "{" and head is not None:
            start = head
            j = i + 1
            while j < len(lines) and not lines[j].startswith("}"):
                j += 1
            text = " ".join(lines[start:i])
            m = HEAD_NAME.search(text)
            if m and "=" not in text.split("(")[0]:
                static = re.match(r"\s*static\b", text) is not None
                yield m.group(1), start + 1, j + 1, static
            head = None
            i = j + 1
            continue
        if line and line[0] in " \t" and head is not None:
            pass  # the head goes on (arguments on continuation lines)
        elif not line or line[0] in " \t#}" or line.rstrip().endswith(";"):
            head = None
        elif head is None:
            head = i
        i += 1


def sources(root, folder, exts=(".c", ".h")):
    top = os.path.join(root, folder)
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x != "build"]
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.join(d, f)


def long_functions(root, max_lines):
    for folder in PRODUCT:
        for path in sources(root, folder):
            for name, first, last, _ in functions(path):
                if last - first + 1 > max_lines:
                    rel = os.path.relpath(path, root)
                    yield "%s:%d: %s() is %d lines (at most %d)" % (
                        rel, first, name, last - first + 1, max_lines)


def circles(root):
    """Yield each set of files of one folder that call each other round."""
    folders = set()
    for comp in COMPONENTS:
        for path in sources(root, comp, (".c",)):
            folders.add(os.path.dirname(path))
    for folder in sorted(folders):
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                       if f.endswith(".c"))
        if len(files) < 2:
            continue
        defined = {}
        for path in files:
            for name, _, _, static in functions(path):
                if not static:
                    defined.setdefault(name, set()).add(path)
        edges = {p: set() for p in files}
        for path in files:
            with open(path, encoding="utf-8", errors="replace") as f:
                # struct/union/enum tags are types, not calls.
                text = TAG.sub(" ", strip_comments(f.read()))
                used = set(IDENT.findall(text))
            for name in used:
                for other in defined.get(name, ()):
                    if other != path and path not in defined[name]:
                        edges[path].add(other)
        for scc in strongly_connected(edges):
            if len(scc) > 1:
                yield sorted(os.path.relpath(p, root) for p in scc)


def strongly_connected(edges):
    """Tarjan's algorithm, iterative (a folder has few files)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    scc = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        scc.append(w)
                        if w == node:
                            break
                    out.append(scc)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-lines", type=int, default=MAX_LINES)
    ap.add_argument("root", nargs="?",
                    default=os.path.join(os.path.dirname(__file__), "../.."))
    args = ap.parse_args()
    root = os.path.realpath(args.root)
    bad = 0
    for finding in long_functions(root, args.max_lines):
        print("structure: " + finding)
        bad = 1
    for scc in circles(root):
        print("structure: call circle: " + " <-> ".join(scc))
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
