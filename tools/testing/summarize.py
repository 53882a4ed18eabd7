#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""summarize.py - turn guest results and host TAP into one verdict.

Usage:
  summarize.py [--allow FILE] [--expected LEG FILE]...
               [--leg NAME RESULTS CONSOLE RUNRC]... [--tap NAME FILE RC]...
               [--fail NAME REASON]... [--summary FILE] [--logs DIR]

A leg is one guest boot: RESULTS is what tools/testing/qemu/check-guest.sh
wrote on the results channel (ttyS1), CONSOLE the kernel console (ttyS0),
RUNRC run-guest's exit status (124: timeout).  A --tap source is the output
of a host-side test command and its exit status.

--expected gives a leg's manifest (tools/testing/manifest.py): every name in
it must be reported (a name ending in "/*": at least one result under that
prefix), and a result it does not name is a failure too.  --allow is the
skip allow-list (tools/testing/skips.txt): "LEG NAME-GLOB REASON" per line;
a SKIP that no line names is a failure.  Options are read in order, so
--allow and --expected come before the --leg they apply to.

Prints "PASS|FAIL|SKIP name [reason]" per test and ends with exactly one
line "N passed, N failed, N skipped".  Exits 1 when anything failed.
The console is only ever used to find failures (kernel reports), never to
find a pass, so console noise cannot fake a green run.
"""
import fnmatch
import os
import re
import subprocess
import sys

# Kernel log lines that mean a bug was found.  Each is anchored on the
# wording the kernel prints so ordinary messages ("report a bug") do not
# match.
REPORT_RE = re.compile(
    r"(WARNING:|BUG:|kernel BUG at|Oops|Call Trace|"
    r"KASAN:|UBSAN:|BUG: KASAN|"
    r"possible circular locking|possible recursive locking|"
    r"inconsistent lock state|suspicious RCU usage|"
    r"turning off the locking correctness validator|"
    r"unreferenced object 0x|general protection fault|"
    r"Kernel panic|soft lockup|hard LOCKUP|rcu_sched self-detected stall|"
    r"blocked for more than \d+ seconds|sleeping function called from invalid context)"
)

KCSAN_RE = re.compile(r"BUG: KCSAN: ")
KCSAN_END_RE = re.compile(r"^(\[\s*[\d.]+\]\s*)?={20,}")
# A stack frame in one of our modules ("func+0x1c/0x30 [statsfd_vm]") or a
# race named after one of our functions; task names (statsfd-vmm) don't count.
STATSFD_FRAME_RE = re.compile(r"\[statsfd\w*\]|\bstatsfd_\w+\+0x|data-race in .*\bstatsfd_")

TAP_RE = re.compile(r"^(ok|not ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$")
CASE_RE = re.compile(r"^    (ok|not ok)\s+(\d+)\s+([^#]*?)\s*(?:#\s*(.*))?$")
PLAN_RE = re.compile(r"^1\.\.(\d+)")
# What promtool says of node_exporter's own meminfo names, which the
# collector's --host exposition keeps as node_exporter spells them.
CAMEL_MEMINFO_RE = re.compile(r"^node_memory_[A-Za-z_]* metric names should be written in "
                              r"'snake_case' not 'camelCase'$")
CASE_PLAN_RE = re.compile(r"^    1\.\.(\d+)")


class Verdict:
    def __init__(self):
        self.results = []
        self.times = []
        self.expected = {}
        self.allow = []
        self.notes = []
        self.kcsan_seen = set()

    def add(self, status, name, reason=""):
        self.results.append((status, name, reason))

    def tap(self, prefix, lines, rc=None, what="exit status"):
        """Adds the top-level TAP results in lines; returns how many."""
        plan = None
        seen = 0
        failed = 0
        for line in lines:
            if line.startswith("# statsfd-time "):
                # tools/tests/run.sh times each host test this way
                parts = line.split()
                if len(parts) >= 4 and parts[3].isdigit():
                    self.times.append((int(parts[3]), f"{prefix}/{parts[2]}"))
                continue
            m = PLAN_RE.match(line)
            if m and plan is None:
                plan = int(m.group(1))
                continue
            m = TAP_RE.match(line)
            if not m:
                continue
            ok, _, name, directive = m.groups()
            name = name.strip() or m.group(2)
            seen += 1
            failed += self.result(f"{prefix}/{name}", ok, directive, xfail=True)
        timed_out = rc in (124, 137, 143)
        if plan is not None and seen < plan:
            self.add("FAIL", prefix, f"missing results: {seen} of {plan} reported"
                     + (f", {what} {rc}" if rc else "")
                     + (" (timed out)" if timed_out else ""))
            failed += 1
        # Exit 4 is kselftest's "skipped"; any other non-zero status with no
        # failing TAP line is a crash, a timeout (124) or a broken test.
        if rc not in (None, 0, 4) and failed == 0:
            self.add("FAIL", prefix, f"{what} {rc}"
                     + (" (timed out)" if timed_out else ""))
        elif seen == 0 and plan is None and rc == 4:
            self.add("SKIP", prefix, "skipped (exit status 4)")
        elif seen == 0 and plan is None and rc == 0:
            self.add("PASS", prefix)
        return seen

    def result(self, name, ok, directive, xfail=False):
        """One TAP result: SKIP, PASS or FAIL (with @xfail, a failure
        marked XFAIL passes).  Returns 1 when it failed, else 0."""
        directive = directive or ""
        if directive.upper().startswith("SKIP"):
            self.add("SKIP", name, directive[4:].strip())
        elif ok == "ok":
            self.add("PASS", name)
        elif xfail and directive.upper().startswith("XFAIL"):
            self.add("PASS", name, "expected failure")
        else:
            self.add("FAIL", name)
            return 1
        return 0

    def promtool(self, name, lines):
        """`promtool check metrics` of a guest's exposition, here.

        A guest test sends its text between '# statsfd-promtool-begin
        NAME' and '# statsfd-promtool-end', each line after '#| ': under
        TCG with KASAN one promtool run took a minute of the debug guest.
        Passes with nothing but node_exporter's own camelCase meminfo
        names to say (status 3 is promtool's "lint problems").
        """
        text = "".join(f"{x}\n" for x in lines)
        try:
            p = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.add("FAIL", name, f"promtool could not run here: {e}")
            return
        rest = [x for x in (p.stdout + p.stderr).splitlines()
                if x.strip() and not CAMEL_MEMINFO_RE.match(x)]
        if not lines:
            self.add("FAIL", name, "no exposition text came from the guest")
        elif p.returncode in (0, 3) and not rest:
            self.add("PASS", name)
        else:
            self.add("FAIL", name, f"promtool exit {p.returncode}: " + "; ".join(rest[:5]))

    def ktap_suite(self, prefix, suite, lines):
        plan = None
        seen = 0
        failed = 0
        suite_ok = None
        for line in lines:
            m = CASE_PLAN_RE.match(line)
            if m and plan is None:
                plan = int(m.group(1))
                continue
            m = CASE_RE.match(line)
            if m:
                ok, _, name, directive = m.groups()
                seen += 1
                failed += self.result(f"{prefix}/{suite}/{name}", ok, directive)
                continue
            m = TAP_RE.match(line)
            if m:
                suite_ok = m.group(1) == "ok"
        if plan is not None and seen < plan:
            self.add("FAIL", f"{prefix}/{suite}", f"missing results: {seen} of {plan} cases reported")
        elif suite_ok is None:
            self.add("FAIL", f"{prefix}/{suite}", "no suite result line")
        elif not suite_ok and failed == 0:
            self.add("FAIL", f"{prefix}/{suite}", "suite failed outside its cases (init/exit?)")

    def leg(self, leg, results_path, console_path, runrc):
        results = read_lines(results_path)
        console = read_lines(console_path)
        complete = False
        section = None
        promtool = None
        body = []
        dmesg = []
        for line in results:
            if line.startswith("# statsfd-result "):
                parts = line.split(None, 4)
                status, name = parts[2], parts[3]
                reason = parts[4] if len(parts) > 4 else ""
                if status not in ("PASS", "FAIL", "SKIP"):
                    status, reason = "FAIL", f"bad status {status!r} {reason}"
                self.add(status, f"{leg}/{name}", reason)
            elif line.startswith("# statsfd-time "):
                parts = line.split()
                if len(parts) >= 4 and parts[3].isdigit():
                    self.times.append((int(parts[3]), f"{leg}/{parts[2]}"))
            elif line.startswith("# statsfd-kunit-begin "):
                section, body = ("kunit", line.split()[2]), []
            elif line.startswith("# statsfd-kunit-end ") and section:
                self.ktap_suite(f"{leg}/kunit", section[1], body)
                section = None
            elif line.startswith("# statsfd-promtool-begin ") and section:
                promtool = (line[len("# statsfd-promtool-begin "):].strip(), [])
            elif line.startswith("#| ") and promtool:
                promtool[1].append(line[3:])
            elif line == "# statsfd-promtool-end" and promtool and section:
                self.promtool(f"{leg}/{section[0]}/{section[1]}/{promtool[0]}", promtool[1])
                promtool = None
            elif line.startswith("# statsfd-selftest-begin "):
                section, body = ("selftest", line.split()[2]), []
            elif line.startswith("# statsfd-selftest-end ") and section:
                m = re.search(r"secs=(\d+)", line)
                if m:
                    self.times.append((int(m.group(1)), f"{leg}/selftest/{section[1]}"))
                m = re.search(r"rc=(\d+)", line)
                self.tap(f"{leg}/selftest/{section[1]}", body, int(m.group(1)) if m else 1)
                section = None
            elif line == "# statsfd-dmesg-begin":
                section, body = ("dmesg",), []
            elif line == "# statsfd-dmesg-end" and section:
                dmesg = body
                section = None
            elif line == "# statsfd-check-complete":
                complete = True
            elif section:
                body.append(line)
        if section and section[0] != "dmesg":
            self.add("FAIL", f"{leg}/{section[0]}/{section[1]}",
                     "output ends inside this test: guest died while it ran")

        if runrc == 124:
            self.add("FAIL", f"{leg}/guest", "TIMEOUT: guest killed by the host timeout")
        elif not complete:
            self.add("FAIL", f"{leg}/guest",
                     "end-of-run marker missing: guest crashed, panicked or rebooted early"
                     + (f" (qemu exit {runrc})" if runrc else ""))
        else:
            self.add("PASS", f"{leg}/guest")

        # KCSAN (the check-kcsan leg) reports races anywhere in the kernel;
        # ours fail the run, the rest are listed but are not our bugs.
        console, dmesg = self.kcsan(leg, console), self.kcsan(leg, dmesg)
        reports = [line for line in console + dmesg if REPORT_RE.search(line)]
        if reports:
            uniq = list(dict.fromkeys(re.sub(r"^\[\s*[\d.]+\]\s*", "", r) for r in reports))
            self.add("FAIL", f"{leg}/kernel-log", "kernel report: " + " | ".join(uniq[:4]))
        elif not console:
            self.add("FAIL", f"{leg}/kernel-log", "console log is empty")
        else:
            self.add("PASS", f"{leg}/kernel-log")

    def kcsan(self, leg, lines):
        """Drops KCSAN report blocks from lines; fails those on statsfd code."""
        out = []
        block = None
        for line in lines:
            if block is None and KCSAN_RE.search(line):
                block = [line]
                continue
            if block is not None:
                # A report ends at its ===== line; a truncated one at the
                # next report or after a bound, so the rest of the log is
                # still scanned.
                if REPORT_RE.search(line) or KCSAN_RE.search(line) or len(block) > 100:
                    self.kcsan_block(leg, block)
                    block = [line] if KCSAN_RE.search(line) else None
                    if block is None:
                        out.append(line)
                    continue
                block.append(line)
                if KCSAN_END_RE.search(line):
                    self.kcsan_block(leg, block)
                    block = None
                continue
            out.append(line)
        if block is not None:
            self.kcsan_block(leg, block)
        return out

    def kcsan_block(self, leg, block):
        title = re.sub(r"^\[\s*[\d.]+\]\s*", "", block[0]).strip()
        if (leg, title) in self.kcsan_seen:
            return
        self.kcsan_seen.add((leg, title))
        if any(STATSFD_FRAME_RE.search(line) for line in block):
            self.add("FAIL", f"{leg}/kcsan", f"data race in statsfd code: {title}")
        else:
            self.notes.append(f"NOTE {leg}/kcsan: not statsfd code, not counted: {title}")

    def apply_manifest(self, leg, start):
        """Checks results[start:] of leg against its manifest and allow-list."""
        expected = self.expected.get(leg)
        got = self.results[start:]
        fixed = []
        for status, name, reason in got:
            short = name[len(leg) + 1:]
            if status == "SKIP":
                why = self.allowed(leg, short)
                if why is None:
                    status, reason = "FAIL", f"skipped ({reason or 'no reason'}) and no allow-list entry names it"
                else:
                    reason = f"{reason}; allowed: {why}" if reason else f"allowed: {why}"
            elif expected is not None and status == "PASS" and not self.named(expected, short):
                status, reason = "FAIL", "unexpected result: not in the expected-results manifest"
            fixed.append((status, name, reason))
        if expected is not None:
            names = {n[len(leg) + 1:] for _, n, _ in got}
            for e in expected:
                if e.endswith("/*"):
                    hit = any(n.startswith(e[:-1]) for n in names)
                else:
                    hit = e in names
                if not hit:
                    fixed.append(("FAIL", f"{leg}/{e}", "expected result missing: it never ran or never reported"))
        self.results[start:] = fixed

    @staticmethod
    def named(expected, short):
        if short in expected:
            return True
        return any(e.endswith("/*") and short.startswith(e[:-1]) for e in expected)

    def allowed(self, leg, short):
        for aleg, glob, reason in self.allow:
            if aleg == leg and fnmatch.fnmatchcase(short, glob):
                return reason
        return None

    def print(self, out):
        counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        for status, name, reason in self.results:
            counts[status] += 1
            print(f"{status} {name}" + (f"  ({reason})" if reason else ""), file=out)
        return counts


def read_lines(path):
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line.rstrip("\r") for line in data.split("\n")]


def main(argv):
    v = Verdict()
    summary = None
    logs = "build/logs"
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--leg":
            name, res, con, rc = argv[i + 1:i + 5]
            start = len(v.results)
            v.leg(name, res, con, int(rc))
            v.apply_manifest(name, start)
            i += 5
        elif a == "--expected":
            v.expected[argv[i + 1]] = set(read_lines(argv[i + 2])) - {""}
            i += 3
        elif a == "--allow":
            for line in read_lines(argv[i + 1]):
                if line.strip() and not line.startswith("#"):
                    parts = line.split(None, 2)
                    if len(parts) < 3:
                        print(f"summarize.py: bad allow-list line {line!r}", file=sys.stderr)
                        return 2
                    v.allow.append(tuple(parts))
            i += 2
        elif a == "--tap":
            name, path, rc = argv[i + 1:i + 4]
            start = len(v.results)
            v.tap(name, read_lines(path), int(rc), "host test command exit status")
            v.apply_manifest(name, start)
            i += 4
        elif a == "--fail":
            # A step that failed before producing results (build, ...).
            v.add("FAIL", argv[i + 1], argv[i + 2])
            i += 3
        elif a == "--logs":
            logs = argv[i + 1]
            i += 2
        elif a == "--summary":
            summary = argv[i + 1]
            i += 2
        else:
            print(f"summarize.py: unknown argument {a}", file=sys.stderr)
            return 2
    for secs, name in sorted(v.times, reverse=True):
        if secs >= 10:
            print(f"==> time {secs:4d}s {name}", file=sys.stderr)
    if summary:
        # Every time measured, slowest first: what to look at when the
        # run gets slow (tools/testing/README.md, "Logs").
        with open(os.path.join(os.path.dirname(summary), "times.txt"), "w") as f:
            for secs, name in sorted(v.times, reverse=True):
                f.write(f"{secs:5d} {name}\n")
    for note in v.notes:
        print(note, file=sys.stderr)
    counts = v.print(sys.stdout)
    if summary:
        with open(summary, "w") as f:
            v.print(f)
    line = f"{counts['PASS']} passed, {counts['FAIL']} failed"
    if counts["SKIP"]:
        line += f", {counts['SKIP']} skipped"
    if counts["FAIL"] or not v.results:
        print(f"FAILED: logs and raw results are in {logs}/", file=sys.stdout)
    print(line)
    return 1 if counts["FAIL"] or not v.results else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
