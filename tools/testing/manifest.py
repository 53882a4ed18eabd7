#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""manifest.py - the exact set of results one guest leg must report.

Usage:
  manifest.py --leg LEG [--load-modules] [--kunit-src DIR]... [--kunit-glob G]
              [--selftests-dir DIR]... [--selftests NAMES] [--selftest-args ARGS]
              [--kernel-proofs NAMES] [--kmemleak] [--expect NAME]...

Prints one expected result name per line (without the leg prefix, as
tools/testing/summarize.py names results).  A name ending in "/*" means
"at least one result under this prefix" (TAP scripts, whose test names are
their own business).

The set is derived from what will run, never kept by hand:
  - KUnit: every `struct kunit_suite` (.name, .test_cases) and every
    STATSFD_KUNIT_SUITE(name, init) (tests/kunit/statsfd_kunit.h: suite
    "name", cases name_cases), and every KUNIT_CASE*() of its case array in
    DIR/*.c, plus load/unload of each module DIR/Kbuild builds.
    Registration (kunit_test_suites()) and the Kbuild object list are
    deliberately not consulted: dropping either must turn into missing
    results, not into a smaller manifest (STATSFD_KUNIT_SUITE() is both the
    definition and the registration; without it the cases are unused and
    the -Werror build fails).
  - selftests: each kselftest_harness binary's own test list (`BIN -l`,
    which lists and exits without running anything) expanded to the
    fixture.variant.test names its TAP prints, filtered exactly as the
    harness filters (-t/-T/-f/-F/-v/-V/-r in SELFTEST_ARGS).
Filters that select nothing, or name a selftest that does not exist, are
errors (exit 1 with a message): a filtered run that ran nothing is never
green.
"""
import argparse
import fnmatch
import os
import re
import shlex
import subprocess
import sys

SUITE_RE = re.compile(r"struct\s+kunit_suite\s+(\w+)\s*=\s*\{(.*?)\};", re.S)
SUITE_MACRO_RE = re.compile(r"^STATSFD_KUNIT_SUITE\(\s*(\w+)\s*,\s*\w+\s*\)", re.M)
CASES_RE = re.compile(r"struct\s+kunit_case\s+(\w+)\s*\[\s*\]\s*=\s*\{(.*?)\};", re.S)
CASE_RE = re.compile(r"\bKUNIT_CASE\w*\s*\(\s*(\w+)")
OBJ_RE = re.compile(r"^obj-[^\s+:]*\s*\+?=\s*(.*)$", re.M)


class ManifestError(Exception):
    pass


def kunit_suites(src_dir):
    """Returns ({suite: [case, ...]}, [module.ko, ...]) for one KUnit dir."""
    suites = {}
    for fn in sorted(os.listdir(src_dir)):
        if not fn.endswith(".c"):
            continue
        with open(os.path.join(src_dir, fn)) as f:
            text = f.read()
        arrays = {m.group(1): CASE_RE.findall(m.group(2)) for m in CASES_RE.finditer(text)}
        for m in SUITE_RE.finditer(text):
            body = m.group(2)
            name = re.search(r"\.name\s*=\s*\"([^\"]+)\"", body)
            cases = re.search(r"\.test_cases\s*=\s*(\w+)", body)
            if not name or not cases or cases.group(1) not in arrays:
                raise ManifestError(f"{fn}: cannot read suite {m.group(1)} (name/test_cases)")
            if name.group(1) in suites:
                raise ManifestError(f"{fn}: duplicate suite name {name.group(1)}")
            suites[name.group(1)] = arrays[cases.group(1)]
        for m in SUITE_MACRO_RE.finditer(text):
            name, cases = m.group(1), m.group(1) + "_cases"
            if cases not in arrays:
                raise ManifestError(f"{fn}: suite {name} has no case array {cases}")
            if name in suites:
                raise ManifestError(f"{fn}: duplicate suite name {name}")
            suites[name] = arrays[cases]
    modules = []
    kbuild = os.path.join(src_dir, "Kbuild")
    if os.path.exists(kbuild):
        with open(kbuild) as f:
            for m in OBJ_RE.finditer(f.read()):
                modules += [o[:-2] + ".ko" for o in m.group(1).split() if o.endswith(".o")]
    return suites, modules


def kunit_selected(glob, suite, case):
    """KUnit's filter_glob: "suite_glob" or "suite_glob.case_glob"."""
    if not glob:
        return True
    sglob, _, cglob = glob.partition(".")
    if not fnmatch.fnmatchcase(suite, sglob):
        return False
    return not cglob or fnmatch.fnmatchcase(case, cglob)


def harness_list(binary):
    """[(fixture, variant or None, test)] from a kselftest_harness binary.

    `-l` prints, per fixture, its variants and its tests side by side in
    fixed columns ("%-20s %-25s %s"); every test runs once per variant.
    """
    p = subprocess.run([binary, "-l"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30)
    lines = p.stderr.splitlines()
    if not lines or not lines[0].startswith("# FIXTURE"):
        raise ManifestError(f"{binary} -l: not a kselftest_harness test list")
    fixtures = []
    for line in lines[1:]:
        if line.startswith("-----"):
            continue
        if line[:1] not in ("", " "):
            name = line.split()[0]
            fixtures.append((name, [], []))
            rest = line[max(21, len(name) + 1):]
        else:
            rest = line[21:]
        if not fixtures:
            raise ManifestError(f"{binary} -l: row before any fixture: {line!r}")
        variant, test = rest[:25].strip(), rest[26:].strip()
        if len(rest) > 25 and rest[25] != " ":
            raise ManifestError(f"{binary} -l: variant name longer than 25 characters in {line!r}")
        if variant:
            fixtures[-1][1].append(variant)
        if test:
            fixtures[-1][2].append(test)
    out = []
    for fixture, variants, tests in fixtures:
        for test in tests:
            for variant in variants or [None]:
                out.append((fixture, variant, test))
    return out


def harness_filter(args):
    """Parses kselftest filter options; returns [(opt, value)] in order."""
    opts = []
    words = shlex.split(args)
    i = 0
    while i < len(words):
        w = words[i]
        m = re.match(r"^-([tTfFvVr])(.*)$", w)
        if not m:
            raise ManifestError(f"SELFTEST_ARGS: '{w}' is not a kselftest filter (-t/-T/-f/-F/-v/-V/-r NAME)")
        val = m.group(2)
        if not val:
            i += 1
            if i >= len(words):
                raise ManifestError(f"SELFTEST_ARGS: {w} needs a name")
            val = words[i]
        opts.append((m.group(1), val))
        i += 1
    return opts


def harness_enabled(opts, fixture, variant, test):
    """kselftest_harness.h test_enabled(): the first matching filter wins."""
    has_positive = any(o.islower() for o, _ in opts)
    for o, val in opts:
        lo = o.lower()
        if lo == "t" and test == val:
            return o.islower()
        if lo == "f" and fixture == val:
            return o.islower()
        if lo == "v" and (variant or "") == val:
            return o.islower()
        if lo == "r":
            # "fixture:variant:test", or "fixture:test" without a variant
            parts = val.split(":")
            want = (parts[0], "", parts[1]) if len(parts) == 2 else tuple(parts)
            if want == (fixture, variant or "", test):
                return True
    return not has_positive


def shipped_modules():
    """The shipped modules' file names in load order, from modules.mk."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "modules.mk")) as f:
        for line in f:
            if line.startswith("STATSFD_MODULES :="):
                return [os.path.basename(m) + ".ko" for m in line.split(":=", 1)[1].split()]
    raise SystemExit("manifest.py: no STATSFD_MODULES in modules.mk")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--leg", required=True)
    ap.add_argument("--load-modules", action="store_true",
                    help="the shipped modules (modules.mk) are loaded and unloaded")
    ap.add_argument("--kunit-src", action="append", default=[])
    ap.add_argument("--kunit-glob", default="")
    ap.add_argument("--selftests-dir", action="append", default=[])
    ap.add_argument("--tap-dir", action="append", default=[],
                    help="every program here reports TAP of its own (DIR/NAME/*)")
    ap.add_argument("--selftests", default="", help="names to run (empty: all)")
    ap.add_argument("--selftest-args", default="")
    ap.add_argument("--kernel-proofs", default="")
    ap.add_argument("--kmemleak", action="store_true")
    ap.add_argument("--expect", action="append", default=[])
    a = ap.parse_args(argv)

    out = ["guest", "kernel-log"] + a.expect
    if a.kmemleak:
        out.append("kmemleak")
    out += [f"kernel/{p}" for p in a.kernel_proofs.split()]
    if a.load_modules:
        mods = shipped_modules()
        out += [f"load/{m}" for m in mods] + [f"unload/{m}" for m in reversed(mods)]

    ncases = 0
    all_suites = []
    for d in a.kunit_src:
        suites, modules = kunit_suites(d)
        all_suites += suites
        for ko in modules:
            out += [f"load/{ko}", f"unload/{ko}"]
        for suite, cases in suites.items():
            for case in cases:
                if kunit_selected(a.kunit_glob, suite, case):
                    out.append(f"kunit/{suite}/{case}")
                    ncases += 1
    if a.kunit_src and ncases == 0:
        raise ManifestError(f"KUNIT='{a.kunit_glob}' selects no KUnit case "
                            f"(suites: {', '.join(sorted(all_suites))})")

    if a.selftests_dir:
        found = {}
        for d in a.selftests_dir:
            for fn in sorted(os.listdir(d)):
                path = os.path.join(d, fn)
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    found[fn] = path
        names = a.selftests.replace(",", " ").split()
        chosen = []
        for n in names:
            hit = [k for k in (n, n + ".sh") if k in found]
            if not hit:
                raise ManifestError(f"SELFTESTS: no selftest named '{n}' (known: {' '.join(sorted(found))})")
            chosen.append(hit[0])
        if not names:
            chosen = sorted(found)
        opts = harness_filter(a.selftest_args) if a.selftest_args else []
        ntests = 0
        for fn in chosen:
            if fn.endswith(".sh"):
                out.append(f"selftest/{fn}/*")
                ntests += 1
                continue
            for fixture, variant, test in harness_list(found[fn]):
                if harness_enabled(opts, fixture, variant, test):
                    name = ".".join(x for x in (fixture, variant, test) if x)
                    out.append(f"selftest/{fn}/{name}")
                    ntests += 1
        if ntests == 0:
            raise ManifestError(f"SELFTESTS='{a.selftests}' SELFTEST_ARGS='{a.selftest_args}' "
                                "selects no selftest")

    for d in a.tap_dir:
        progs = [fn for fn in sorted(os.listdir(d))
                 if os.path.isfile(os.path.join(d, fn)) and os.access(os.path.join(d, fn), os.X_OK)]
        if not progs:
            raise ManifestError(f"{d}: no test programs")
        out += [f"selftest/{fn}/*" for fn in progs]

    dup = [n for n in set(out) if out.count(n) > 1]
    if dup:
        raise ManifestError(f"duplicate expected results: {' '.join(sorted(dup))}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (ManifestError, OSError, subprocess.SubprocessError) as e:
        print(f"manifest: {e}", file=sys.stderr)
        sys.exit(1)
