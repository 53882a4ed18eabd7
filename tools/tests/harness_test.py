#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""harness_test.py - host tests of the verdict logic of make check.

tools/testing/summarize.py and tools/testing/manifest.py decide whether a
run is green; make check-harness proves them end to end in a guest, these
prove each rule alone and fast: a skip without an allow-list entry, a
missing result, an unexpected result, a wildcard entry, KCSAN report
classification, KUnit globs and kselftest filters, and filters that select
nothing.  TAP on stdout.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTING = os.path.join(HERE, "..", "testing")
sys.dont_write_bytecode = True
sys.path.insert(0, TESTING)
import manifest  # noqa: E402
import summarize  # noqa: E402

n = 0
failed = 0


def ok(cond, desc):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print(f"{'ok' if cond else 'not ok'} {n} - {desc}")


def verdict(results, expected=None, allow=(), console=("[ 0.0] booted",), rc=0):
    """Runs summarize.py's leg logic on a fake results channel."""
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, "results.txt")
        con = os.path.join(d, "console.log")
        with open(res, "w") as f:
            f.write("\n".join(results + ["# statsfd-check-complete"]) + "\n")
        with open(con, "w") as f:
            f.write("\n".join(console) + "\n")
        v = summarize.Verdict()
        v.allow = list(allow)
        if expected is not None:
            v.expected["L"] = set(expected)
        start = len(v.results)
        v.leg("L", res, con, rc)
        v.apply_manifest("L", start)
        return {name: (status, reason) for status, name, reason in v.results}, v


R = "# statsfd-result "
base = ["guest", "kernel-log"]

got, _ = verdict([R + "PASS load/a.ko"], expected=base + ["load/a.ko"])
ok(all(s == "PASS" for s, _ in got.values()), "every expected result present: all PASS")

got, _ = verdict([R + "PASS load/a.ko"], expected=base + ["load/a.ko", "load/b.ko"])
ok(got.get("L/load/b.ko", ("",))[0] == "FAIL" and "missing" in got["L/load/b.ko"][1],
   "an expected result that never came is a FAIL naming it missing")

got, _ = verdict([R + "PASS load/a.ko", R + "PASS load/extra.ko"], expected=base + ["load/a.ko"])
ok(got["L/load/extra.ko"][0] == "FAIL" and "unexpected" in got["L/load/extra.ko"][1],
   "a result the manifest does not name is a FAIL")

got, _ = verdict([R + "SKIP load/a.ko no feature"], expected=base + ["load/a.ko"])
ok(got["L/load/a.ko"][0] == "FAIL" and "allow-list" in got["L/load/a.ko"][1],
   "a SKIP without an allow-list entry is a FAIL")

got, _ = verdict([R + "SKIP load/a.ko no feature"], expected=base + ["load/a.ko"],
                 allow=[("L", "load/a.*", "reason")])
ok(got["L/load/a.ko"][0] == "SKIP" and "allowed: reason" in got["L/load/a.ko"][1],
   "a SKIP the allow-list names for this leg stays a SKIP, with the reason")

got, _ = verdict([R + "SKIP load/a.ko no feature"], expected=base + ["load/a.ko"],
                 allow=[("OTHER", "load/a.ko", "reason")])
ok(got["L/load/a.ko"][0] == "FAIL", "an allow-list entry for another leg does not apply")

tap = ["# statsfd-selftest-begin s.sh", "ok 1 - first", "ok 2 - second", "1..2",
       "# statsfd-selftest-end s.sh rc=0 secs=1"]
got, _ = verdict(tap, expected=base + ["selftest/s.sh/*"])
ok(all(s == "PASS" for s, _ in got.values()) and "L/selftest/s.sh/first" in got,
   "a NAME/* entry accepts the script's own result names")

got, _ = verdict([], expected=base + ["selftest/s.sh/*"])
ok(got.get("L/selftest/s.sh/*", ("",))[0] == "FAIL", "a NAME/* entry with no result under it is a FAIL")

plan0 = ["# statsfd-selftest-begin t", "TAP version 13", "1..0", "# Totals: pass:0 fail:0",
         "# statsfd-selftest-end t rc=0 secs=0"]
got, _ = verdict(plan0, expected=base + ["selftest/t/global.x"])
ok(got["L/selftest/t/global.x"][0] == "FAIL", "a selftest whose filter ran nothing (1..0) leaves its cases missing")

race = ["[ 1.0] " + "=" * 60, "[ 1.0] BUG: KCSAN: data-race in statsfd_copy / vcpu_run",
        "[ 1.0] read to 0x1 of 8 bytes by task 9 on cpu 0:", "[ 1.0]  statsfd_copy+0x1/0x2 [statsfd]",
        "[ 1.0] " + "=" * 60]
other = ["[ 2.0] BUG: KCSAN: data-race in foo / bar", "[ 2.0]  foo+0x1/0x2",
         "[ 2.0] CPU: 0 PID: 9 Comm: statsfd-vmm", "[ 2.0] " + "=" * 60]
got, v = verdict([], expected=base, console=["[ 0.0] booted"] + race + other)
ok(got.get("L/kcsan", ("",))[0] == "FAIL" and "statsfd_copy" in got["L/kcsan"][1],
   "a KCSAN report with a statsfd frame fails the leg")
ok(got["L/kernel-log"][0] == "PASS" and any("foo / bar" in x for x in v.notes),
   "a KCSAN report elsewhere (even from a statsfd-named task) is a NOTE, not a failure")

cut = ["[ 3.0] BUG: KCSAN: data-race in foo / bar", "[ 3.0]  foo+0x1/0x2", "[ 3.0] WARNING: CPU: 1 at y"]
got, _ = verdict([], expected=base, console=["[ 0.0] booted"] + cut)
ok(got["L/kernel-log"][0] == "FAIL", "a KCSAN report cut short does not hide the WARNING after it")

got, _ = verdict([], expected=base, console=["[ 0.0] booted", "[ 1.0] WARNING: CPU: 0 at x"])
ok(got["L/kernel-log"][0] == "FAIL", "a WARNING in the console fails kernel-log")

hang = ["# statsfd-selftest-begin h", "TAP version 13", "1..1", "#  RUN global.hang_forever ...",
        "# statsfd-selftest-end h rc=143 secs=20"]
got, _ = verdict(hang, expected=base + ["selftest/h/global.hang_forever"])
ok(got.get("L/selftest/h", ("",))[0] == "FAIL" and "timed out" in got["L/selftest/h"][1]
   and got["L/selftest/h/global.hang_forever"][0] == "FAIL",
   "a program killed by its timeout fails as timed out, and its unfinished case as missing")

# promtool on the host, for a guest test's exposition (host_tools_test.sh)
def prom(text):
    return (["# statsfd-selftest-begin p.sh", "# statsfd-promtool-begin scrape passes promtool"]
            + ["#| " + x for x in text] + ["# statsfd-promtool-end", "ok 1 - other", "1..1",
                                           "# statsfd-selftest-end p.sh rc=0 secs=1"])


good = ["# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.",
        "# TYPE node_memory_MemTotal_bytes gauge", "node_memory_MemTotal_bytes 1.0e+09",
        "# HELP node_load1 1m load average.", "# TYPE node_load1 gauge", "node_load1 0.5"]
got, _ = verdict(prom(good), expected=base + ["selftest/p.sh/*"])
ok(got.get("L/selftest/p.sh/scrape passes promtool", ("",))[0] == "PASS"
   and got["L/selftest/p.sh/other"][0] == "PASS",
   "a guest's exposition that promtool accepts (but for node_exporter's camelCase meminfo) passes")
bad = ["# HELP x_requests Requests.", "# TYPE x_requests counter", "x_requests 1"]
got, _ = verdict(prom(bad), expected=base + ["selftest/p.sh/*"])
ok(got.get("L/selftest/p.sh/scrape passes promtool", ("",))[0] == "FAIL"
   and "_total" in got["L/selftest/p.sh/scrape passes promtool"][1],
   "a guest's exposition promtool complains about (a counter without _total) fails, saying why")
got, _ = verdict(prom(["x{ 1"]), expected=base + ["selftest/p.sh/*"])
ok(got.get("L/selftest/p.sh/scrape passes promtool", ("",))[0] == "FAIL",
   "a guest's exposition promtool cannot parse fails")

# manifest.py
ok(manifest.kunit_selected("statsfd_agg.*empt*", "statsfd_agg", "x_emptied_set"),
   "KUnit glob suite.case matches like filter_glob")
ok(not manifest.kunit_selected("statsfd_agg.*empty*", "statsfd_agg", "x_emptied_set"),
   "KUnit glob that matches no case selects nothing")
ok(manifest.kunit_selected("statsfd_*", "statsfd_read", "anything"), "a suite-only glob selects every case")
f = manifest.harness_filter("-t a -T b")
ok(manifest.harness_enabled(f, "g", None, "a") and not manifest.harness_enabled(f, "g", None, "c"),
   "-t includes only the named test")
f = manifest.harness_filter("-T b")
ok(manifest.harness_enabled(f, "g", None, "a") and not manifest.harness_enabled(f, "g", None, "b"),
   "-T alone excludes the named test and keeps the rest")
f = manifest.harness_filter("-r fx:v1:t")
ok(manifest.harness_enabled(f, "fx", "v1", "t") and not manifest.harness_enabled(f, "fx", "v2", "t"),
   "-r selects one fixture:variant:test")
f = manifest.harness_filter("-r global:t")
ok(manifest.harness_enabled(f, "global", None, "t") and not manifest.harness_enabled(f, "global", None, "u"),
   "-r fixture:test selects a test of a fixture without variants")
try:
    manifest.harness_filter("--bogus")
    ok(False, "SELFTEST_ARGS that are not kselftest filters are refused")
except manifest.ManifestError:
    ok(True, "SELFTEST_ARGS that are not kselftest filters are refused")

kunit_dir = os.path.join(HERE, "..", "..", "tests", "kunit")
p = subprocess.run([sys.executable, os.path.join(TESTING, "manifest.py"), "--leg", "L",
                    "--kunit-src", kunit_dir, "--kunit-glob", "no_such_suite"],
                   capture_output=True, text=True)
ok(p.returncode == 1 and "selects no KUnit case" in p.stderr, "a KUNIT glob that selects nothing is an error")
p = subprocess.run([sys.executable, os.path.join(TESTING, "manifest.py"), "--leg", "L",
                    "--kunit-src", kunit_dir], capture_output=True, text=True)
lines = p.stdout.split()
ok(p.returncode == 0 and "load/statsfd_kunit.ko" in lines
   and any(x.startswith("kunit/statsfd_read/") for x in lines),
   "the KUnit manifest comes from the sources: module and suites")

with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "x_test.c")
    with open(src, "w") as fh:
        fh.write("static struct kunit_case c[] = { KUNIT_CASE(one), KUNIT_CASE_PARAM(two, g), {} };\n"
                 "static struct kunit_suite s = { .name = \"sx\", .test_cases = c, };\n")
    with open(os.path.join(d, "Kbuild"), "w") as fh:
        fh.write("obj-m += mod_x.o\n")
    suites, mods = manifest.kunit_suites(d)
    ok(suites == {"sx": ["one", "two"]} and mods == ["mod_x.ko"],
       "a suite whose kunit_test_suites() line is gone is still expected")

print(f"1..{n}")
sys.exit(1 if failed else 0)
