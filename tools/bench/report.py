#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""report.py - turn the bench guest's BENCH-JSON lines into results.

Reads the results channel of the `make bench` guest (one "BENCH-JSON {...}"
line per phase), computes every ratio, judges each against the targets of
issues 4 and 11 (and B14's: readers under a stalled writer; B15's: an
honest scrape under siege) and writes,
under --out: results.json (every figure), results.md (the table `make
bench` prints) and the plots b3.png, b6.png and b10.png.

Nothing here fails on a missed target: the table says so instead.
"""

import argparse
import datetime
import json
import os
import statistics
import sys


def load(path):
    """Phase objects by name; repeated phases (b4) become lists."""
    phases = {}
    notes = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if line.startswith("BENCH-JSON "):
                obj = json.loads(line[len("BENCH-JSON "):])
                phases.setdefault(obj["phase"], []).append(obj)
            elif line.startswith("# bench: FAILED") or "dmesg:" in line:
                notes.append(line[2:])
    return phases, notes


# Per-instance memory of the last run before update windows and mmap,
# Documentation/bench/results.md at commit 999ba92: the
# baseline that a mappable source may exceed by at most one page.
PREVIOUS = {
    "commit": "999ba92",
    "fleet_slab_per_instance": 2096.89,   # statsfd_vm VM/vCPU objects + fds
    "fleet_slab_per_stats_fd": 473.78,
    "bench_vcpu_shape_slab_per_instance": 1432.0,  # bench_23x147
}
PAGE = 4096

def ratio(a, b):
    if a is None or b is None or not b:
        return None
    return a / b


class Judge:
    """Collects (measure, value, target, verdict) rows for the table."""

    def __init__(self):
        self.rows = []

    def add(self, bench, measure, value, target, ok, detail="", unit="x"):
        self.rows.append({
            "bench": bench, "measure": measure, "value": value,
            "unit": unit, "target": target,
            "result": "n/a" if ok is None else ("PASS" if ok else "MISS"),
            "detail": detail,
        })

    def at_most(self, bench, measure, value, limit, detail=""):
        """A ratio whose target is <= @limit: PASS or MISS, n/a without it."""
        self.add(bench, measure, value, f"<= {limit}x",
                 None if value is None else value <= limit, detail)


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}{unit}"
    if abs(v) >= 100:
        s = f"{v:,.0f}"
    elif abs(v) >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.2f}"
    return s + unit


def b1(p, j, res):
    x = p["b1"][0]
    w = x["whole"]
    ns = {k: v["ns"] for k, v in w.items()}
    out = {"raw": x, "ratios": {}}
    r = out["ratios"]
    r["kvm_shape_vs_kvm"] = ratio(ns.get("ours_kvm_shape"), ns.get("kvm_vcpu"))
    r["kvm_shape_vs_zero"] = ratio(ns.get("ours_kvm_shape"), ns.get("zero_kvm_size"))
    # At the smaller of the two vCPU data sizes, the larger cut to it.
    kvm_bytes = x.get("kvm_vcpu_layout", {}).get("data_size")
    ours_bytes = x["ours_vcpu_layout"]["data_size"]
    matched = x.get("matched_bytes")
    ours_m = ns.get("ours_vcpu_matched", ns.get("ours_vcpu"))
    kvm_m = ns.get("kvm_vcpu_matched", ns.get("kvm_vcpu"))
    zero_m = ns.get("zero_kvm_size") if matched == kvm_bytes else ns.get("zero_ours_size")
    r["vcpu_matched_vs_kvm"] = ratio(ours_m, kvm_m)
    r["vcpu_matched_vs_zero"] = ratio(ours_m, zero_m)
    r["kvm_vs_zero"] = ratio(ns.get("kvm_vcpu"), ns.get("zero_kvm_size"))
    r["vcpu_whole_vs_zero"] = ratio(ns.get("ours_vcpu"), ns.get("zero_ours_size"))
    r["per_byte_vcpu_vs_kvm"] = ratio(
        ratio(ns.get("ours_vcpu"), ours_bytes), ratio(ns.get("kvm_vcpu"), kvm_bytes))
    # Snapshots on: the same shape with update windows, sample_ns and
    # generation (16 more bytes in its data block).
    snap_bytes = x.get("ours_kvm_shape_snap_layout", {}).get("data_size")
    r["snap_whole_vs_kvm"] = ratio(ns.get("ours_kvm_shape_snap"), ns.get("kvm_vcpu"))
    r["snap_values_vs_kvm"] = ratio(ns.get("ours_kvm_shape_snap_values"), ns.get("kvm_vcpu"))
    r["snap_whole_vs_zero"] = ratio(ns.get("ours_kvm_shape_snap"), ns.get("zero_kvm_snap_size"))
    r["snap_vs_nosnap"] = ratio(ns.get("ours_kvm_shape_snap_values"), ns.get("ours_kvm_shape"))

    j.at_most("B1", f"snapshots off: pread {kvm_bytes} B data, ours (KVM's exact shape) / KVM vCPU",
              r["kvm_shape_vs_kvm"], 1.0,
              f'{fmt(ns.get("ours_kvm_shape"))} ns vs {fmt(ns.get("kvm_vcpu"))} ns')
    j.at_most("B1", f"snapshots off: pread {kvm_bytes} B data, ours (KVM's exact shape) / /dev/zero",
              r["kvm_shape_vs_zero"], 1.3,
              f'{fmt(ns.get("ours_kvm_shape"))} ns vs {fmt(ns.get("zero_kvm_size"))} ns')
    j.at_most("B1", f"pread {matched} B of a vCPU's data, statsfd_vm / KVM vCPU",
              r["vcpu_matched_vs_kvm"], 1.0,
              f'{fmt(ours_m)} ns vs {fmt(kvm_m)} ns')
    j.at_most("B1", f"pread {matched} B of a vCPU's data, statsfd_vm / /dev/zero",
              r["vcpu_matched_vs_zero"], 1.3,
              f'{fmt(ours_m)} ns vs {fmt(zero_m)} ns')
    j.at_most("B1", f"ns per byte, whole vCPU data blocks: statsfd_vm ({ours_bytes} B) / KVM ({kvm_bytes} B)",
              r["per_byte_vcpu_vs_kvm"], 1.0,
              f'{fmt(ratio(ns.get("ours_vcpu"), ours_bytes))} vs '
              f'{fmt(ratio(ns.get("kvm_vcpu"), kvm_bytes))} ns/B')
    j.add("B1", f"pread {kvm_bytes} B data, upstream KVM vCPU / /dev/zero (reference)",
          r["kvm_vs_zero"], "(host: ~1.35x)", None,
          f'{fmt(ns.get("kvm_vcpu"))} ns vs {fmt(ns.get("zero_kvm_size"))} ns')
    j.at_most("B1", f"pread whole statsfd_vm vCPU data ({ours_bytes} B) / /dev/zero",
              r["vcpu_whole_vs_zero"], 1.3,
              f'{fmt(ns.get("ours_vcpu"))} ns vs {fmt(ns.get("zero_ours_size"))} ns')
    if snap_bytes:
        j.at_most("B1", f"snapshots on: pread of the whole data block, ours (KVM's shape + "
                  f"sample_ns, generation: {snap_bytes} B) / KVM vCPU ({kvm_bytes} B)",
                  r["snap_whole_vs_kvm"], 1.0,
                  f'{fmt(ns.get("ours_kvm_shape_snap"))} ns vs {fmt(ns.get("kvm_vcpu"))} ns')
        j.at_most("B1", f"snapshots on: pread {kvm_bytes} B (the values, one snapshot), "
                  "ours (KVM's shape) / KVM vCPU",
                  r["snap_values_vs_kvm"], 1.0,
                  f'{fmt(ns.get("ours_kvm_shape_snap_values"))} ns vs {fmt(ns.get("kvm_vcpu"))} ns')
        j.at_most("B1", f"snapshots on: pread of the whole data block ({snap_bytes} B) / "
                  "/dev/zero of as many bytes",
                  r["snap_whole_vs_zero"], 1.3,
                  f'{fmt(ns.get("ours_kvm_shape_snap"))} ns vs {fmt(ns.get("zero_kvm_snap_size"))} ns')
        j.add("B1", f"pread {kvm_bytes} B of KVM's shape: snapshots on / off (same values)",
              r["snap_vs_nosnap"], "(report)", None,
              f'{fmt(ns.get("ours_kvm_shape_snap_values"))} ns vs {fmt(ns.get("ours_kvm_shape"))} ns')

    sizes = []
    for s in x["sizes"]:
        row = {"bytes": s["bytes"]}
        for k in ("zero", "ours_vcpu", "ours_big", "kvm_vcpu"):
            if k in s:
                row[k + "_ns"] = s[k]["ns"]
                row[k + "_ns_per_byte"] = s[k]["ns_per_byte"]
        row["ours_vcpu_vs_kvm"] = ratio(row.get("ours_vcpu_ns"), row.get("kvm_vcpu_ns"))
        row["ours_vcpu_vs_zero"] = ratio(row.get("ours_vcpu_ns"), row.get("zero_ns"))
        row["ours_big_vs_kvm"] = ratio(row.get("ours_big_ns"), row.get("kvm_vcpu_ns"))
        row["ours_big_vs_zero"] = ratio(row.get("ours_big_ns"), row.get("zero_ns"))
        row["kvm_vs_zero"] = ratio(row.get("kvm_vcpu_ns"), row.get("zero_ns"))
        sizes.append(row)
    out["sizes"] = sizes
    # What one more byte of a read costs (8 B -> 1024 B): the copy-out.
    by = {r["bytes"]: r for r in sizes}
    if 8 in by and 1024 in by:
        for k in ("ours_vcpu", "kvm_vcpu", "zero"):
            a, b = by[8].get(k + "_ns"), by[1024].get(k + "_ns")
            if a is not None and b is not None:
                r[k + "_ns_per_extra_byte"] = (b - a) / (1024 - 8)
        j.add("B1", "ns per extra byte of a read (8 B -> 1024 B): statsfd_vm vCPU / KVM vCPU",
              ratio(r.get("ours_vcpu_ns_per_extra_byte"), r.get("kvm_vcpu_ns_per_extra_byte")),
              "(context)", None,
              f'{fmt(r.get("ours_vcpu_ns_per_extra_byte"))} vs '
              f'{fmt(r.get("kvm_vcpu_ns_per_extra_byte"))} ns/B; /dev/zero '
              f'{fmt(r.get("zero_ns_per_extra_byte"))} ns/B')
    res["b1"] = out


def b2(p, j, res):
    x = p["b2"][0]
    out = {"raw": x}
    if "error" in x:
        j.add("B2", "one pread / per-file debugfs text", None, ">= 30x", None, x["error"])
        res["b2"] = out
        return
    pr, pf, st = x["pread"]["ns"], x["per_file_text"]["ns"], x["single_text"]["ns"]
    out["per_file_vs_pread"] = ratio(pf, pr)
    out["single_text_vs_pread"] = ratio(st, pr)
    j.add("B2", f'per-file debugfs text ({x["text_files"]} files: open/read/parse/close) / one pread',
          out["per_file_vs_pread"], ">= 30x", out["per_file_vs_pread"] >= 30,
          f"{fmt(pf)} ns vs {fmt(pr)} ns; views agree: {x['views_agree']}")
    j.add("B2", "one equivalent text file (open/read/parse/close) / one pread",
          out["single_text_vs_pread"], "(report)", None, f"{fmt(st)} ns vs {fmt(pr)} ns")
    res["b2"] = out


def b3_kind(sch):
    """Rows and spread of one kind of B3 schemas (snapshots off or on)."""
    data = [r["data_ns"] for r in sch]
    rows = []
    for r in sch:
        rows.append({
            "num_desc": r["num_desc"], "data_bytes": r["layout"]["data_size"],
            "file_bytes": r["layout"]["file_size"], "data_ns": r["data_ns"],
            "whole_ns": r["whole_ns"],
            "whole_vs_data": ratio(r["whole_ns"], r.get("data_beside_whole_ns", r["data_ns"])),
        })
    low = [r.get("data_p25_ns") for r in sch]
    return {
        "schemas": rows,
        "data_spread": max(data) / min(data) - 1,
        "data_spread_p25": max(low) / min(low) - 1 if all(low) else None,
    }


def b3(p, j, res):
    x = p["b3"][0]
    out = {"raw": x}
    kinds = [("off", x["schemas"])]
    if x.get("snap_schemas"):
        kinds.append(("on", x["snap_schemas"]))
    for kind, sch in kinds:
        k = b3_kind(sch)
        out["snapshots_" + kind] = k
        data = [r["data_ns"] for r in sch]
        low = [r.get("data_p25_ns") for r in sch]
        extra = " + sample_ns, generation" if kind == "on" else ""
        j.add("B3", f'snapshots {kind}: data-only pread ({sch[0]["layout"]["data_size"]} B), '
              f'{sch[0]["num_desc"]} -> {sch[-1]["num_desc"]} descriptors{extra}: max/min - 1',
              k["data_spread"] * 100, "<= 10%", k["data_spread"] <= 0.10,
              f"{fmt(min(data))}..{fmt(max(data))} ns", unit="%")
        if k["data_spread_p25"] is not None:
            j.add("B3", f"snapshots {kind}: the same on lower quartiles (less host noise)",
                  k["data_spread_p25"] * 100, "(context)", None,
                  f"{fmt(min(low))}..{fmt(max(low))} ns", unit="%")
    # Old keys, for readers of results.json: the snapshots-off figures.
    out["schemas"] = out["snapshots_off"]["schemas"]
    out["data_spread"] = out["snapshots_off"]["data_spread"]
    out["data_spread_p25"] = out["snapshots_off"]["data_spread_p25"]
    if "snapshots_on" in out:
        on_off = [ratio(b["data_ns"], a["data_ns"]) for a, b in
                  zip(out["snapshots_off"]["schemas"], out["snapshots_on"]["schemas"])]
        out["data_on_vs_off"] = on_off
        j.add("B3", "data-only pread, snapshots on / off, same schema (measured side by side)",
              statistics.median(on_off), "(report)", None,
              f"{fmt(min(on_off))}..{fmt(max(on_off))}x over the "
              f"{len(on_off)} schema sizes (median shown)")
    for r in out["schemas"]:
        if r["num_desc"] in (10, 100, 1000):
            j.add("B3", f'whole-file read / data-only, {r["num_desc"]} descriptors '
                  f'({r["file_bytes"]} B vs {r["data_bytes"]} B), snapshots off',
                  r["whole_vs_data"], "(report)", None,
                  f'{fmt(r["whole_ns"])} ns vs {fmt(r["whole_ns"] / r["whole_vs_data"])} ns, '
                  'measured side by side')
    res["b3"] = out


def b4(p, j, res):
    runs = p.get("b4", [])
    out = {"raw": runs}
    by = {}
    for r in runs:
        by.setdefault(r["label"], []).append(r)
    if "stats" not in by or "nostats" not in by:
        j.add("B4", "run loop with stats / compiled out", None, "<= 3%", None,
              "missing a provider build")
        res["b4"] = out
        return
    for label, rs in by.items():
        samples = [s for r in rs for s in r["samples"]]
        out[label] = {
            "ns_per_exit": statistics.median(samples),
            "per_load_ns_per_exit": [r["ns_per_exit"] for r in rs],
            "per_load_ns_per_exit_with_run_overhead":
                [r.get("ns_per_exit_with_run_overhead") for r in rs],
            "nonzero_values": [r["nonzero_values"] for r in rs],
        }
    ov = out["stats"]["ns_per_exit"] / out["nostats"]["ns_per_exit"] - 1
    out["overhead"] = ov
    valid = all(v == 0 for v in out["nostats"]["nonzero_values"]) and \
        all(v > 0 for v in out["stats"]["nonzero_values"])
    out["builds_valid"] = valid
    j.add("B4", f'run loop, marginal cost of an exit (runs of {runs[0]["exits_per_run"]} minus '
          f'runs of {runs[0].get("exits_per_short_run", 0)} exits, no halts): with stats '
          f'(update windows on, the default) vs compiled out, the bench\'s two copies of the '
          f'provider with every function on a page of its own, {len(by["stats"])} module loads each',
          ov * 100, "<= 3%", ov <= 0.03,
          f'{fmt(out["stats"]["ns_per_exit"])} vs {fmt(out["nostats"]["ns_per_exit"])} ns/exit '
          f'(per load: {fmt(min(out["stats"]["per_load_ns_per_exit"]))}..'
          f'{fmt(max(out["stats"]["per_load_ns_per_exit"]))} vs '
          f'{fmt(min(out["nostats"]["per_load_ns_per_exit"]))}..'
          f'{fmt(max(out["nostats"]["per_load_ns_per_exit"]))})'
          + ("" if valid else "; WARNING: nostats build still counts"), unit="%")
    delta = out["stats"]["ns_per_exit"] - out["nostats"]["ns_per_exit"]
    out["update_ns_per_exit"] = delta
    kx = p.get("b4kvm", [{}])[0]
    out["kvm_exit"] = kx
    if "ns_per_exit" in kx:
        rel = delta / kx["ns_per_exit"]
        out["update_vs_kvm_exit"] = rel
        j.add("B4", "the same stats updates (ns per exit) / one real upstream KVM exit "
              "(CPUID, handled in the kernel) in this guest",
              rel * 100, "(context)", None,
              f'{fmt(delta)} ns vs {fmt(kx["ns_per_exit"])} ns; KVM counted '
              f'{kx["kvm_exits_counted"]} exits, {kx["kvm_exits_expected"]} expected; '
              "nested SVM under TCG inflates the exit", unit="%")
    res["b4"] = out


def b5(p, j, res):
    x = p["b5"][0]
    out = {"raw": x}
    nvm, nvc = x["vms"], x["vcpus_per_vm"]
    inst = nvm + nvm * nvc
    vm_d, vc_d = x["vm_layout"]["data_size"], x["vcpu_layout"]["data_size"]
    avg_data = (nvm * vm_d + nvm * nvc * vc_d) / inst
    obj = x["vms_and_vcpus"]["Slab_per_instance"]
    fd = x["stats_fds"]["Slab_per_instance"]
    out["avg_data_bytes"] = avg_data
    out["slab_per_instance_objects"] = obj
    out["slab_per_stats_fd"] = fd
    shape = [k for k in x if k.startswith("bench_")]
    core = {}
    for k in shape:
        b = x[k]
        core[k] = {
            "num_desc": b["num_desc"], "data_size": b["data_size"],
            "flags": b.get("flags", 0), "mappable": b.get("mappable", False),
            "desc_block_size": b["desc_block_size"],
            "slab_per_instance": b["slab_per_instance"],
            "pages_per_instance": b.get("pages_per_instance"),
            "slab_per_stats_fd": b["stats_fds"]["Slab_per_instance"],
            "slab_schema_and_cache": b["slab_schema_and_cache"],
            "memcg": b["set_of_n"].get("memcg"),
        }
    out["core"] = core
    # The vCPU-shaped bench sources: plain, with snapshots, mappable.
    mm = [k for k in shape if k.endswith("_mmap")]
    base = mm[-1][:-len("_mmap")] if mm else None
    c = core.get(base)
    if c:
        over = c["slab_per_instance"] - c["data_size"]
        prev = PREVIOUS["bench_vcpu_shape_slab_per_instance"]
        j.add("B5", f'non-mappable statsfd instance (source + id + {c["data_size"]} B data, '
              'plain bench source), vCPU-shaped, bytes per instance', c["slab_per_instance"],
              f'<= data + 512 = {c["data_size"] + 512}',
              c["slab_per_instance"] <= c["data_size"] + 512,
              f"data + {fmt(over)} B; 8192 instances, Slab delta; was {fmt(prev)} B "
              f"({PREVIOUS['commit']})", unit=" B")
        j.add("B5", "... plus its stats fd (struct file + dentry, as KVM's, + the per-file read buffer)",
              c["slab_per_instance"] + c["slab_per_stats_fd"],
              f'<= data + 512 = {c["data_size"] + 512}',
              c["slab_per_instance"] + c["slab_per_stats_fd"] <= c["data_size"] + 512,
              f'fd: {fmt(c["slab_per_stats_fd"])} B', unit=" B")
    cs = core.get(base + "_snap") if base else None
    if cs:
        j.add("B5", "statsfd instance with snapshots, not mappable (values area kmalloc()ed "
              "by the core), vCPU-shaped, bytes per instance", cs["slab_per_instance"],
              "(report)", None,
              f'plain: {fmt(c["slab_per_instance"]) if c else "n/a"} B; '
              f'memcg slab {fmt((cs.get("memcg") or {}).get("slab_per_instance"))} B', unit=" B")
    cm = core.get(base + "_mmap") if base else None
    if cm and c:
        pages = cm["pages_per_instance"]
        tot = None if pages is None else cm["slab_per_instance"] + pages
        out["core_mappable_total_per_instance"] = tot
        lim = c["slab_per_instance"] + PAGE
        how = "Slab (meminfo) + pages"
        # The memory cgroup counts the objects and pages charged to it, where
        # meminfo's Slab moves with whole slab pages of any cache in the
        # guest: a few bytes per instance of noise, which decides a
        # comparison of two instances whose objects are the same.
        mcm, mc = cm.get("memcg") or {}, c.get("memcg") or {}
        if mcm.get("kernel_per_instance") and mc.get("kernel_per_instance"):
            tot = mcm["kernel_per_instance"]
            lim = mc["kernel_per_instance"] + PAGE
            how = "memory cgroup kernel (objects + pages)"
        j.add("B5", "mappable statsfd instance (bench source, SNAPSHOT|MMAP), vCPU-shaped: "
              "kernel memory per instance, vs the plain instance of this run",
              tot, f"<= plain + 1 page = {fmt(lim)}",
              None if tot is None else tot <= lim,
              f'{how}; meminfo: slab {fmt(cm["slab_per_instance"])} B + pages '
              f'{fmt(pages)} B (memory cgroup: kernel minus slab), plain '
              f'{fmt(c["slab_per_instance"])} B; memory cgroup slab '
              f'{fmt(mcm.get("slab_per_instance"))} B vs plain '
              f'{fmt(mc.get("slab_per_instance"))} B; '
              f'was {fmt(PREVIOUS["bench_vcpu_shape_slab_per_instance"])} B', unit=" B")
    a = core.get("bench_10x1000")
    b = core.get("bench_1000x1000")
    if a and b:
        diff = b["slab_per_instance"] - a["slab_per_instance"]
        grow = b["desc_block_size"] - a["desc_block_size"]
        j.add("B5", "descriptor memory per instance: 1000 vs 10 descriptors "
              "(same 8000 B data), extra bytes per instance",
              diff, f"independent (<< {grow} B)", abs(diff) < 0.05 * grow,
              f'{fmt(a["slab_per_instance"])} vs {fmt(b["slab_per_instance"])} B/instance '
              f'(Slab over 4096 sources each); descriptor blocks of {a["desc_block_size"]} vs '
              f'{b["desc_block_size"]} B, built once per schema', unit=" B")
    # The provider's VMs and vCPUs: mappable sources, values in a page each.
    mc = x["vms_and_vcpus"].get("memcg")
    pages = mc.get("kernel_not_slab_per_instance") if mc else None
    tot = None if pages is None else obj + pages
    prev = PREVIOUS["fleet_slab_per_instance"]
    out["fleet_pages_per_instance"] = pages
    out["fleet_total_per_instance"] = tot
    j.add("B5", f"mappable sources: statsfd_vm VM and vCPU ({nvm} VMs x {nvc} vCPUs, objects "
          "+ their fds), slab + pages per instance, vs the previous per-instance memory",
          tot, f"<= previous + 1 page = {fmt(prev + PAGE)}",
          None if tot is None else tot <= prev + PAGE,
          f"slab {fmt(obj)} B + pages {fmt(pages)} B (memory cgroup: kernel minus slab; "
          f"memcg kernel {fmt(mc.get('kernel_per_instance') if mc else None)} B); "
          f"previous {fmt(prev)} B, all slab ({PREVIOUS['commit']})", unit=" B")
    j.add("B5", f"statsfd_vm: {nvm} VMs x {nvc} vCPUs, Slab per stats fd",
          fd, "(report; desc block not copied)", None,
          f'was {fmt(PREVIOUS["fleet_slab_per_stats_fd"])} B; vCPU desc block '
          f'{x["vcpu_layout"]["file_size"] - vc_d} B+; '
          f'VM/vCPU objects + their fds: {fmt(obj)} B/instance', unit=" B")
    passes = x["read_all"][1:]
    tot = statistics.median([r["total_ms"] for r in passes])
    out["read_all_ms"] = tot
    out["ns_per_vcpu_fd"] = statistics.median([r["ns_per_vcpu_fd"] for r in passes])
    out["ns_per_vm_fd"] = statistics.median([r["ns_per_vm_fd"] for r in passes])
    j.add("B5", f"read every stats fd once ({inst} fds)", tot, "(report)", None,
          f'{fmt(out["ns_per_vcpu_fd"])} ns/vCPU fd, {fmt(out["ns_per_vm_fd"])} ns/VM fd',
          unit=" ms")
    col = x.get("collector", {})
    out["collector"] = col
    if "cpu_percent" in col:
        floor = 2 * tot / 10
        out["collector_read_floor_percent"] = floor
        j.add("B5", "collector daemon CPU at 2 reads/s of every fd", col["cpu_percent"],
              "(report)", None, f'{col["command"]}: {fmt(col["cpu_s"])} s CPU in '
              f'{fmt(col["window_s"])} s, {fmt(col.get("reads_per_source_per_s"))} reads/s '
              f'per source, {col.get("read_errors")} errors; two of the bench\'s own '
              f'read-every-fd passes take {fmt(floor)}% of a second', unit="%")
    else:
        j.add("B5", "collector daemon CPU at 2 reads/s", None, "(report)", None,
              col.get("error", "not measured"))
    res["b5"] = out


def b6(p, j, res):
    x = p["b6"][0]
    pts = x["counts"]
    out = {"raw": x, "points": pts}
    first, last = pts[0], pts[-1]
    slope = (last["vm_pread_ns"] - first["vm_pread_ns"]) / (last["vcpus"] - first["vcpus"])
    out["ns_per_vcpu"] = slope
    j.add("B6", f'VM aggregate pread, {first["vcpus"]} -> {last["vcpus"]} vCPUs',
          last["vm_pread_ns"], "(report)", None,
          f'{fmt(first["vm_pread_ns"])} -> {fmt(last["vm_pread_ns"])} ns, '
          f'{fmt(slope)} ns per vCPU', unit=" ns")
    j.add("B6", f'userspace aggregation (pread + sum every vCPU fd), {last["vcpus"]} vCPUs / kernel aggregate',
          ratio(last["vcpus_pread_sum_ns"], last["vm_pread_ns"]), "(report)", None,
          f'{fmt(last["vcpus_pread_sum_ns"])} ns vs {fmt(last["vm_pread_ns"])} ns')
    res["b6"] = out


def b7(p, j, res):
    x = p["b7"][0]
    c = x["idle"]
    ns = {k: v["ns"] for k, v in c.items()}
    plain = x["plain_values_bytes"]
    out = {"raw": x, "ns": ns}
    r = out["ratios"] = {
        "mmap_vs_pread": ratio(ns.get("mmap_seq"), ns.get("pread_values")),
        "mmap_vs_pread_data_block": ratio(ns.get("mmap_seq"), ns.get("pread_data_block")),
        "mmap_vs_pread_one_value": ratio(ns.get("mmap_seq"), ns.get("pread_one_value")),
        "mmap_memcpy_vs_pread": ratio(ns.get("mmap_seq_memcpy"), ns.get("pread_values")),
        "mmap_uapi_vs_pread": ratio(ns.get("mmap_uapi_copy"), ns.get("pread_values")),
        "one_value_mmap_vs_pread": ratio(ns.get("mmap_one_value"), ns.get("pread_one_value")),
    }
    valid = x.get("mapped_equals_pread")
    j.at_most("B7", f"idle vCPU, all its values ({plain} B): mapped copy with the latch "
              "protocol (version 2: the copy seq selects) / one pread of the same bytes",
              r["mmap_vs_pread"], 0.1,
              f'{fmt(ns.get("mmap_seq"))} ns vs {fmt(ns.get("pread_values"))} ns; '
              f'{x.get("idle_retries")} retries, {x.get("idle_fallbacks")} fallbacks; '
              f'mapped copy == pread: {valid}')
    j.add("B7", "the same mapped copy / pread of one 8 B value (the syscall without the copy)",
          r["mmap_vs_pread_one_value"], "(context)", None,
          f'{fmt(ns.get("mmap_seq"))} ns vs {fmt(ns.get("pread_one_value"))} ns')
    j.add("B7", "the protocol with memcpy() as the copy / the same pread",
          r["mmap_memcpy_vs_pread"], "(context)", None,
          f'{fmt(ns.get("mmap_seq_memcpy"))} ns; the protocol alone (two loads of seq, '
          f'a fence): {fmt(ns.get("mmap_seq_only"))} ns; the uapi header\'s '
          f'statsfd_mmap_copy() (checks the header each call): '
          f'{fmt(ns.get("mmap_uapi_copy"))} ns')
    j.add("B7", "one value: seq (to pick the copy) and one mapped 8-byte load / pread of 8 B",
          r["one_value_mmap_vs_pread"], "(context)", None,
          f'{fmt(ns.get("mmap_one_value"))} ns vs {fmt(ns.get("pread_one_value"))} ns')
    busy = x.get("busy", {})
    out["busy"] = busy
    if "mapped_reads" in busy:
        j.add("B7", "vCPU running in another thread: retries per mapped read (a copy is "
              "retried only when a window was published during it)",
              busy["retries_per_read"], "(report)", None,
              f'{busy["reads_retried"]:,} of {busy["mapped_reads"]:,} reads retried '
              f'(at most {busy["max_retries_of_a_consistent_read"]} times), '
              f'{busy["fallbacks_to_pread"]} fell back to pread; writer: '
              f'{busy["writer_windows"]:,} windows in {fmt(busy["seconds"])} s; '
              f'inconsistent copies (exits != sum by reason): mapped '
              f'{busy["mapped_inconsistent"]}, pread {busy["pread_inconsistent"]}; '
              f'{fmt(busy["mapped_ns_per_read"])} vs {fmt(busy["pread_ns_per_read"])} ns per '
              'read (mapped vs pread, CPU shared with the writer)', unit="")
    res["b7"] = out


def b8(p, j, res):
    runs = p.get("b8", [])
    out = {"raw": runs}
    runs = [r for r in runs if "on" in r and "off" in r]
    if not runs:
        j.add("B8", "run loop per exit, update windows on / off", None, "<= 1.10x", None,
              (p.get("b8") or [{}])[0].get("error", "not measured"))
        res["b8"] = out
        return
    for k in ("on", "off"):
        samples = [v for r in runs for v in r[k]["samples"]]
        out[k] = {
            "ns_per_exit": statistics.median(samples),
            "p25_ns_per_exit": statistics.quantiles(samples, n=4)[0] if len(samples) > 1 else None,
            "p75_ns_per_exit": statistics.quantiles(samples, n=4)[2] if len(samples) > 1 else None,
            "per_load_ns_per_exit": [r[k]["ns_per_exit"] for r in runs],
            "per_load_ns_per_exit_with_run_overhead":
                [r[k]["ns_per_exit_with_run_overhead"] for r in runs],
            "rounds_with_unexpected_seq": sum(r[k]["rounds_with_unexpected_seq"] for r in runs),
            "rounds_with_unexpected_published_exits":
                sum(r[k].get("rounds_with_unexpected_published_exits", 0) for r in runs),
        }
    on, off = out["on"]["ns_per_exit"], out["off"]["ns_per_exit"]
    out["ratio"] = on / off
    out["per_load_ratio"] = [r["ratio"] for r in runs]
    out["window_ns_per_exit"] = on - off
    valid = all(out[k]["rounds_with_unexpected_seq"] == 0 and
                out[k]["rounds_with_unexpected_published_exits"] == 0 for k in ("on", "off"))
    out["windows_valid"] = valid
    j.add("B8", f'run loop, marginal cost of an exit (runs of {runs[0]["exits_per_run"]} minus '
          f'runs of {runs[0]["exits_per_short_run"]} exits): update windows on / off, '
          f'same module and vCPU, {len(runs)} module loads x {runs[0]["rounds"]} rounds',
          out["ratio"], "<= 1.10x", out["ratio"] <= 1.10,
          f'{fmt(on)} vs {fmt(off)} ns/exit (per load: '
          f'{fmt(min(out["per_load_ratio"]))}..{fmt(max(out["per_load_ratio"]))}x); '
          'seq advanced by one per window with windows on and not at all off, and the '
          'published exits followed: ' + ("yes" if valid else "NO"))
    kx = p.get("b4kvm", [{}])[0]
    if "ns_per_exit" in kx:
        rel = out["window_ns_per_exit"] / kx["ns_per_exit"]
        out["window_vs_kvm_exit"] = rel
        j.add("B8", "the window's cost per exit / one real upstream KVM exit in this guest",
              rel * 100, "(context)", None,
              f'{fmt(out["window_ns_per_exit"])} ns vs {fmt(kx["ns_per_exit"])} ns', unit="%")
    res["b8"] = out


# B7 in the same committed results: the mapped copy and the pread of the
# same 1176 B, when the pread's copy-out was one copy_to_user().
PREVIOUS_B7 = {"results_commit": "57c4020", "mmap_seq": 323.0, "pread_values": 3623.0}


def b9(p, j, res):
    x = p["b9"][0]
    c = x["reads"]
    ns = {k: v["ns"] for k, v in c.items()}
    vl, fl = x["view_layout"], x["vcpu_layout"]
    out = {"raw": x, "ns": ns}
    r = out["ratios"] = {
        "view_vs_full": ratio(ns.get("view"), ns.get("full")),
        "view_vs_separate": ratio(ns.get("view"), ns.get("separate")),
        "view_vs_prefix_64": ratio(ns.get("view"), ns.get("full_prefix_64")),
        "one_value_vs_full": ratio(ns.get("full_one_value"), ns.get("full")),
        "prefix_64_vs_full": ratio(ns.get("full_prefix_64"), ns.get("full")),
        "view_of_view_vs_view": ratio(ns.get("view_of_view"), ns.get("view")),
    }
    ok = x.get("view_layout_ok") and x.get("view_equals_full")
    out["valid"] = bool(ok)
    names = ", ".join(x.get("stats", []))
    j.at_most("B9", f'view of 8 of a vCPU\'s stats ({names}; {vl["data_size"]} B data): '
              f'one pread of it / one pread of the vCPU\'s whole data block ({fl["data_size"]} B)',
              r["view_vs_full"], 0.5,
              f'{fmt(ns.get("view"))} ns vs {fmt(ns.get("full"))} ns; view layout and values '
              f'as the full fd\'s: {"yes" if ok else "NO"}')
    j.at_most("B9", "the same view read / 8 separate preads of the same stats (8 B each) on the full fd",
              r["view_vs_separate"], 0.3,
              f'{fmt(ns.get("view"))} ns vs {fmt(ns.get("separate"))} ns')
    j.add("B9", "floor: one pread of 8 B of the full fd / its whole data block (the syscall, "
          "a snapshot, one value)",
          r["one_value_vs_full"], "(context)", None,
          f'{fmt(ns.get("full_one_value"))} ns; 64 contiguous bytes of the full fd: '
          f'{fmt(ns.get("full_prefix_64"))} ns ({fmt(r["prefix_64_vs_full"])}x)')
    j.add("B9", "view read / pread of 64 contiguous bytes of the full fd (what gathering "
          "8 values costs)", r["view_vs_prefix_64"], "(context)", None,
          f'{fmt(ns.get("view"))} ns vs {fmt(ns.get("full_prefix_64"))} ns; a view of the '
          f'view (same stats, reversed): {fmt(ns.get("view_of_view"))} ns, '
          f'layout and values right: {"yes" if x.get("view_of_view_ok") else "NO"}')
    res["b9"] = out


def b10(p, j, res):
    x = p["b10"][0]
    out = {"raw": x, "series": []}
    for s in x["series"]:
        lat = s["latency"]
        sec = s.get("latency_from_return") or s.get("latency_from_last_close")
        call = s.get("create_vcpu_call") or s.get("close_calls")
        row = {
            "event": s["event"], "waiter": s["waiter"], "events": s["events"],
            "median_ns": lat["median_ns"], "p99_ns": lat["p99_ns"],
            "p90_ns": lat["p90_ns"], "max_ns": lat["max_ns"],
            "second_median_ns": sec["median_ns"], "second_p99_ns": sec["p99_ns"],
            "call_median_ns": call["median_ns"],
            "wrong_revents": s["wrong_revents"],
            "woke_before_return": s["woke_before_the_call_returned"],
        }
        out["series"].append(row)
        us = lambda v: fmt(v / 1000)  # noqa: E731
        if s["event"] == "vcpu_create":
            what = (f'vCPU created (STATSFD_VM_CREATE_VCPU call) -> POLLPRI on the VM\'s '
                    f'stats fd, poller in {s["waiter"]}()')
            more = (f'woke before the ioctl returned in {row["woke_before_return"]} of '
                    f'{s["events"]}; the ioctl took {us(call["median_ns"])} µs (median)')
        else:
            what = (f'VMM closes the VM (2 vCPU fds, then the VM fd) -> POLLHUP on the '
                    f'VM\'s stats fd, poller in {s["waiter"]}()')
            more = (f'from the VM fd\'s close (the one that hangs up): median '
                    f'{us(sec["median_ns"])} µs, p99 {us(sec["p99_ns"])} µs; the three '
                    f'closes took {us(call["median_ns"])} µs (median)')
        j.add("B10", what + f': median over {s["events"]} events', lat["median_ns"] / 1000,
              "(report)", None,
              f'p99 {us(lat["p99_ns"])} µs, p90 {us(lat["p90_ns"])} µs, max '
              f'{us(lat["max_ns"])} µs; {more}; wrong revents: {s["wrong_revents"]}',
              unit=" µs")
    res["b10"] = out


def b11(p, j, res):
    """B11: the host's stats through stats fds vs node_exporter's text."""
    x = p["b11"][0]
    out = {"raw": x}
    for key, label in (("max", "every CPU online"), ("two", "2 CPUs online")):
        if key not in x:
            continue
        m = x[key]
        cpus = f'{m["cpus_online"]} of {x["cpus"]} CPUs online'
        rows = out[key] = {}
        for fam in ("cpu", "memory", "net", "disk", "all"):
            f = m[fam]
            texts = [f["text"]["ns"]] + ([f["sysfs"]["ns"]] if "sysfs" in f else [])
            fastest = min(texts)
            r = rows[fam] = ratio(fastest, f["fds"]["ns"])
            target = 10 if fam == "all" else 5
            src = {"cpu": "/proc/stat", "memory": "/proc/meminfo + /proc/vmstat",
                   "net": "the faster of /proc/net/dev and sysfs statistics",
                   "disk": "/proc/diskstats",
                   "all": "/proc/stat, meminfo, vmstat, diskstats, net/dev"}[fam]
            detail = (f'{fmt(f["fds"]["ns"] / 1000)} µs for {f["num_fds"]} preads vs '
                      f'{fmt(fastest / 1000)} µs for {src}')
            if "sysfs" in f:
                detail += (f' (/proc/net/dev {fmt(f["text"]["ns"] / 1000)} µs, '
                           f'{f["sysfs_files"]} sysfs files {fmt(f["sysfs"]["ns"] / 1000)} µs)')
            j.add("B11", f"{fam}: text / stats fds, {label} ({cpus})", r,
                  f">= {target}x", None if r is None else r >= target, detail)
    res["b11"] = out


def b12(p, j, res):
    """B12: statsfd-collector --host vs node_exporter, CPU per scrape."""
    x = p["b12"][0]
    out = {"raw": x}
    if "error" in x:
        j.add("B12", "CPU per scrape: statsfd-collector --host / node_exporter", None,
              "<= 0.2x", None, x["error"])
        res["b12"] = out
        return
    ne, col = x["node_exporter"], x["collector"]
    r = out["ratio"] = ratio(col["cpu_s"], ne["cpu_s"])
    j.at_most("B12", "CPU per scrape: statsfd-collector --host / prometheus-node-exporter "
              "(same collectors, same guest)", r, 0.2,
              f'{fmt(col["cpu_ms_per_scrape"])} ms vs {fmt(ne["cpu_ms_per_scrape"])} ms of CPU '
              f'per scrape over {x["scrapes"]} scrapes each ({fmt(x["window_s"])} s, '
              f'{x["failed_scrapes"]} failed); bodies {fmt(col["bytes"])} B vs '
              f'{fmt(ne["bytes"])} B; CPU from /proc in clock ticks')
    res["b12"] = out


def b16(p, j, res):
    x = p["b16"][0]
    out = {"raw": x}
    fleet = f'{x["vms"]} VMs x {x["vcpus_per_vm"]} vCPUs'
    if "error" in x or not x.get("iterations"):
        j.add("B16", "protobuf (native histograms) / text bytes per scrape", None, "<= 0.3x",
              None, x.get("error", "no scrape"))
        res["b16"] = out
        return
    r = out["bytes"] = x["bytes_ratio"]
    j.add("B16", f"scrape of the fleet ({fleet}) as protobuf with native histograms / as "
          "text: bytes on the wire", r, "<= 0.3x", r <= 0.3,
          f'{fmt(x["protobuf_bytes"])} B vs {fmt(x["text_bytes"])} B; gzip: '
          f'{fmt(x["protobuf_gzip_bytes"])} B vs {fmt(x["text_gzip_bytes"])} B')
    rc = out["cpu"] = ratio(x["protobuf_cpu_ms"], x["text_cpu_ms"])
    j.add("B16", "collector CPU per scrape that renders: protobuf / text", rc, "", None,
          f'{fmt(x["protobuf_cpu_ms"])} ms vs {fmt(x["text_cpu_ms"])} ms of CPU, '
          f'{fmt(x["protobuf_ms"])} ms vs {fmt(x["text_ms"])} ms to the last byte '
          f'(medians of {x["iterations"]})')
    res["b16"] = out


# B17: real KVM served by statsfd (kvm/patches/) vs upstream KVM in the 6.12
# guest, same workload (issue 21): a vCPU data pread at most as dear, and
# with update windows on (kvm.stats_snapshot=1) a CPUID exit at most 2%
# dearer.  Each round loads upstream, statsfd and statsfd+snapshot back to
# back; the ratios are the medians of the rounds' ratios, so drift in the
# emulation's speed across the run falls on numerator and denominator alike.
B17_PREAD_TARGET = 1.0
B17_EXIT_TARGET = 1.02


def b17(p, j, res):
    """B17: KVM's own stats through statsfd vs upstream KVM."""
    rows = p["b17"]
    out = {"raw": rows}
    res["b17"] = out
    errs = [r["error"] for r in rows if "error" in r]
    by = {}
    for r in rows:
        if "kvm" in r:
            by.setdefault(r["kvm"], []).append(r)
    rounds = list(zip(by.get("upstream", []), by.get("statsfd", []), by.get("snapshot", [])))
    if errs or not rounds:
        j.add("B17", "KVM served by statsfd / upstream KVM", None, "", None,
              "; ".join(errs) or "no complete round")
        return

    def med(idx, field, base_field=None, base=0):
        vals = [ratio(rd[idx][field], rd[base][base_field or field]) for rd in rounds]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None

    def raw(idx, field):
        return statistics.median(rd[idx][field] for rd in rounds)

    n = len(rounds)
    r = out["pread"] = med(1, "pread_ns")
    j.add("B17", "pread of a vCPU's data block: statsfd / upstream KVM", r,
          f"<= {fmt(B17_PREAD_TARGET)}x", r is not None and r <= B17_PREAD_TARGET,
          f'{fmt(raw(1, "pread_ns"))} vs {fmt(raw(0, "pread_ns"))} ns, '
          f'{rounds[0][1]["data_size"]} bytes (median of {n} rounds)')
    r = out["pread_snapshot"] = med(2, "pread_ns")
    j.add("B17", "the same with kvm.stats_snapshot=1 (a consistent snapshot, "
          "+ sample_ns and generation) / upstream", r, "", None,
          f'{fmt(raw(2, "pread_ns"))} vs {fmt(raw(0, "pread_ns"))} ns')
    r = out["exit_snapshot"] = med(2, "exit_ns")
    j.add("B17", "run loop per CPUID exit, update windows on (kvm.stats_snapshot=1) / "
          "upstream KVM", r, f"<= {fmt(B17_EXIT_TARGET)}x",
          r is not None and r <= B17_EXIT_TARGET,
          f'{fmt(raw(2, "exit_ns"))} vs {fmt(raw(0, "exit_ns"))} ns an exit '
          f'(median of {n} rounds of {rounds[0][0]["exit_n"]}-exit runs)')
    r = out["exit_default"] = med(1, "exit_ns")
    j.add("B17", "run loop per CPUID exit, statsfd defaults / upstream KVM", r, "", None,
          f'{fmt(raw(1, "exit_ns"))} vs {fmt(raw(0, "exit_ns"))} ns an exit')
    for idx, label in ((1, "statsfd defaults"), (2, "kvm.stats_snapshot=1")):
        key = "vcpu_bytes_" + ("default" if idx == 1 else "snapshot")
        out[key] = raw(idx, "vcpu_bytes") - raw(0, "vcpu_bytes")
        j.add("B17", f"memory per vCPU with a stats fd, {label} - upstream (MemFree "
              "drop, bytes)", out[key], "", None,
              f'{fmt(raw(idx, "vcpu_bytes"))} vs {fmt(raw(0, "vcpu_bytes"))} bytes a vCPU '
              f'over {rounds[0][0]["mem_vcpus"]} vCPUs', unit="")
    if all("mmap_ns" in rd[2] for rd in rounds):
        r = out["mmap_vs_pread"] = med(2, "mmap_ns", "pread_ns", 0)
        j.add("B17", "read of a vCPU's values through mmap (kvm.stats_snapshot=1) / "
              "upstream's pread", r, "", None,
              f'{fmt(raw(2, "mmap_ns"))} vs {fmt(raw(0, "pread_ns"))} ns')


# B15: an honest scrape's p99 under each attack may be at most this many
# times its p99 on an idle collector, and the collector's RSS at most
# B15_RSS_MB throughout (issue 18).
B15_TARGET = 2.0
B15_RSS_MB = 256
B15_ATTACKS = (("slow", "60 slow readers (8 addresses, a new one every 250 ms, ~40 KB/s each)"),
               ("trickle", "256 connections from 16 addresses trickling request headers a "
                "byte at a time"),
               ("flood", "4 unix-socket clients sending the largest query-stats filter "
                "(1024 names, 1024 providers) back to back"),
               ("quota", "a client of another uid holding its full quota of vCPU stats fds"),
               ("guess", "8 basic-auth password guessers (bcrypt cost 10) from 4 addresses"))


def b15(p, j, res):
    """B15: an honest scrape's latency and the collector's RSS, idle vs under siege."""
    x = p["b15"][0]
    out = {"raw": x, "ratios": {}}
    res["b15"] = out
    idle = x.get("idle", {})
    if "error" in x or "p99_ms" not in idle:
        j.add("B15", "honest scrape p99 under attack / idle", None, f"<= {fmt(B15_TARGET)}x",
              None, x.get("error", idle.get("error", "no idle scrape")))
        return
    for name, what in B15_ATTACKS:
        a = x.get(name, {})
        if "p99_ms" not in a:
            j.add("B15", f"honest scrape p99 under {what} / idle", None,
                  f"<= {fmt(B15_TARGET)}x", None, a.get("error", "did not run"))
            continue
        r = out["ratios"][name] = ratio(a["p99_ms"], idle["p99_ms"])
        out["ratios"][name + "_p50"] = ratio(a["p50_ms"], idle["p50_ms"])
        ok = r is not None and r <= B15_TARGET and not a["failed"]
        extra = (f'; the attacker got {a["attacker_sources"]:,} sources registered'
                 if "attacker_sources" in a else "")
        j.add("B15", f"honest scrape p99 under {what} / idle", r, f"<= {fmt(B15_TARGET)}x",
              ok, f'p99 {fmt(a["p99_ms"])} vs {fmt(idle["p99_ms"])} ms, p50 '
              f'{fmt(a["p50_ms"])} vs {fmt(idle["p50_ms"])} ms; {a["failed"]} of '
              f'{a["scrapes"]} scrapes failed (idle {idle["failed"]}){extra}')
    d, qa = x.get("double", {}), x.get("quota", {})
    if "p99_ms" in d and "p99_ms" in qa:
        r = out["ratios"]["quota_vs_double"] = ratio(qa["p99_ms"], d["p99_ms"])
        j.add("B15", "control: p99 under the quota attack / the same sources registered by "
              "the fleet's own uid, no attack", r, "", None,
              f'p99 {fmt(qa["p99_ms"])} vs {fmt(d["p99_ms"])} ms ({fmt(d["p99_ms"])} ms is '
              f'{fmt(ratio(d["p99_ms"], idle["p99_ms"]))}x idle): the cost of the '
              f'exposition\'s size, {fmt(qa.get("body_gzip_bytes"))} vs '
              f'{fmt(idle.get("body_gzip_bytes"))} gzip bytes')
    states = [x[k] for k in ["idle"] + [n for n, _ in B15_ATTACKS] if k in x]
    rss = max(max(st.get("rss_max_mb", 0), st.get("hwm_mb", 0)) for st in states)
    out["rss_max_mb"] = rss
    j.add("B15", "collector RSS, highest over every state (sampled every 100 ms, and "
          "VmHWM)", rss, f"<= {B15_RSS_MB} MB", rss <= B15_RSS_MB,
          ", ".join(f'{k} {fmt(max(x[k].get("rss_max_mb", 0), x[k].get("hwm_mb", 0)))}'
                    for k in ["idle"] + [n for n, _ in B15_ATTACKS] if k in x) + " MB",
          unit=" MB")


def b13(p, j, res):
    x = p["b13"][0]
    bare, col, sc = x["bare_reads"], x["collector"], x.get("scrapes", {})
    fleet = f'{x["vms"]} VMs x {x["vcpus_per_vm"]} vCPUs, every {x["interval_ms"]} ms'
    out = {"raw": x}
    if "error" in col:
        j.add("B13", "collector CPU / bare reads", None, "<= 1.5x", None, col["error"])
        res["b13"] = out
        return
    r = out["overhead"] = ratio(col["cpu_s"], bare["cpu_s"])
    j.at_most("B13", f"collector CPU reading the fleet ({fleet}) / the bench's own preads of "
              "the same fds at the same rate", r, 1.5,
              f'{fmt(col["cpu_percent"])} % vs {fmt(bare["cpu_percent"])} % of a CPU over '
              f'{fmt(col["window_s"])} s; {fmt(col["reads_per_source_per_s"])} reads per source '
              f'per s; {col["sources_mapped"]} of {col["sources_reported"]} sources mapped; '
              f'a bare pass {fmt(bare["ms_per_pass"])} ms')
    if sc.get("iterations"):
        rs = out["scrape"] = sc["cached_over_render"]
        j.add("B13", "scrape with the per-tick cache / a scrape that renders (every scrape "
              "before the cache)", rs, "<= 0.2x", rs <= 0.2,
              f'{fmt(sc["cached_ms"])} ms vs {fmt(sc["render_ms"])} ms (medians of '
              f'{sc["iterations"]}; same body: {sc["same_body"]}), {fmt(sc["body_bytes"])} B; '
              f'gzip: first {fmt(sc["gzip_first_ms"])} ms, cached '
              f'{fmt(sc["gzip_cached_ms"])} ms, {fmt(sc["gzip_bytes"])} B')
    else:
        j.add("B13", "scrape with the per-tick cache / a scrape that renders", None,
              "<= 0.2x", None, sc.get("error", "no scrape"))
    res["b13"] = out


# B14: a reader's p99 latency with the writer stalled may be at most this
# many times its p99 with the writer running, and no read may fail.
B14_TARGET = 2.0
B14_KINDS = (("vcpu_pread", "pread of the vCPU's data block"),
             ("vm_aggregates_pread", "pread of the VM's aggregates"),
             ("mmap_copy", "statsfd_mmap_copy() of the vCPU's mapping"))
B14_STALLED = (("preempted", "writer preempted inside its windows (a CPU hog on its "
                "CPU, the writer SCHED_IDLE)"),
               ("stopped", "writer stopped (SIGSTOP)"))


def b14(p, j, res):
    """B14: snapshot reader latency, writer running vs preempted vs stopped."""
    x = p["b14"][0]
    out = {"raw": x, "ratios": {}}
    res["b14"] = out
    if "error" in x:
        j.add("B14", "reader p99 under a stalled writer / with the writer running", None,
              f"<= {fmt(B14_TARGET)}x", None, x["error"])
        return
    st = x["states"]
    run = st["running"]
    us = lambda v: fmt(v / 1000)  # noqa: E731
    for state, label in B14_STALLED:
        for kind, what in B14_KINDS:
            a, b = st[state]["reads"][kind], run["reads"][kind]
            r = ratio(a["p99_ns"], b["p99_ns"])
            out["ratios"][f"{state}_{kind}_p99"] = r
            out["ratios"][f"{state}_{kind}_p50"] = ratio(a["p50_ns"], b["p50_ns"])
            j.add("B14", f"{what}: p99 latency, {label} / writer running", r,
                  f"<= {fmt(B14_TARGET)}x", None if r is None else r <= B14_TARGET,
                  f'p99 {us(a["p99_ns"])} vs {us(b["p99_ns"])} µs, p50 {us(a["p50_ns"])} vs '
                  f'{us(b["p50_ns"])} µs, max {us(a["max_ns"])} vs {us(b["max_ns"])} µs; '
                  f'{a["reads"]:,} reads each; the writer published '
                  f'{st[state]["writer_windows_published"]:,} windows meanwhile '
                  f'({run["writer_windows_published"]:,} running) and was preempted '
                  f'{st[state]["writer_preemptions"]:,} times')
    reads = eagain = errors = torn = 0
    for state in st.values():
        for k in state["reads"].values():
            reads += k["reads"]
            eagain += k["eagain"]
            errors += k["errors"]
            torn += k["inconsistent"]
    out.update(reads=reads, eagain=eagain, errors=errors, inconsistent=torn)
    bad = eagain + errors + torn
    j.add("B14", "failed (EAGAIN or other) or inconsistent reads, all kinds and writer states",
          bad, "0", bad == 0,
          f'{reads:,} reads: EAGAIN {eagain}, other errors {errors}, copies where exits != '
          f'the sum of exits by reason {torn} (checked: vCPU {x.get("vcpu_sum_checked")}, '
          f'VM sums {x.get("vm_sum_checked")}); {x["cpus"]} CPUs, preemption {x["preempt"]}',
          unit="")


def plots(res, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    if "b3" in res:
        s = res["b3"]["schemas"]
        raw = {r["num_desc"]: r for r in res["b3"]["raw"]["schemas"]}
        x = [r["num_desc"] for r in s]
        data = [r["data_ns"] for r in s]
        lo = [r["data_ns"] - raw[n].get("data_p25_ns", r["data_ns"]) for n, r in zip(x, s)]
        hi = [raw[n].get("data_p75_ns", r["data_ns"]) - r["data_ns"] for n, r in zip(x, s)]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        ref = min(data)
        ax1.axhspan(ref, ref * 1.10, color="tab:green", alpha=0.15,
                    label="target: within 10% of the fastest")
        ax1.errorbar(x, data, yerr=[lo, hi], fmt="o-", capsize=3,
                     label="data-only pread, 8000 B, snapshots off (median, quartiles)")
        top = max(r + h for r, h in zip(data, hi))
        on = res["b3"].get("snapshots_on")
        if on:
            rawon = {r["num_desc"]: r for r in res["b3"]["raw"]["snap_schemas"]}
            don = [r["data_ns"] for r in on["schemas"]]
            lon = [r["data_ns"] - rawon[r["num_desc"]].get("data_p25_ns", r["data_ns"])
                   for r in on["schemas"]]
            hon = [rawon[r["num_desc"]].get("data_p75_ns", r["data_ns"]) - r["data_ns"]
                   for r in on["schemas"]]
            ax1.axhspan(min(don), min(don) * 1.10, color="tab:orange", alpha=0.10)
            ax1.errorbar(x, don, yerr=[lon, hon], fmt="s--", capsize=3,
                         label="the same, snapshots on (+ sample_ns, generation)")
            top = max(top, max(r + h for r, h in zip(don, hon)))
        ax1.set_xscale("log")
        ax1.set_ylim(0, top * 1.3)
        ax1.set_xlabel("descriptors in the schema (same 1000 values)")
        ax1.set_ylabel("ns per read (QEMU TCG guest)")
        ax1.set_title("data-only read vs schema size")
        ax1.grid(True, which="both", alpha=0.3)
        ax1.legend(loc="lower right", fontsize=8)
        ax2.plot(x, data, "o-", label="data-only pread")
        ax2.plot(x, [r["whole_ns"] for r in s], "s--", label="whole-file pread")
        if on:
            ax2.plot(x, [r["whole_ns"] for r in on["schemas"]], "^:",
                     label="whole-file pread, snapshots on")
        ax2.set_xscale("log")
        ax2.set_yscale("log")
        ax2.set_xlabel("descriptors in the schema (same 1000 values)")
        ax2.set_ylabel("ns per read (median)")
        ax2.set_title("descriptors are skipped by a data-only read")
        ax2.grid(True, which="both", alpha=0.3)
        ax2.legend(fontsize=8)
        fig.suptitle("B3: data-only pread vs whole-file read")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "b3.png"), dpi=110)
        plt.close(fig)
        made.append("b3.png")
    if "b6" in res:
        pts = res["b6"]["points"]
        x = [r["vcpus"] for r in pts]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        ax.plot(x, [r["vm_pread_ns"] for r in pts], "o-", label="VM stats fd pread (kernel aggregates)")
        ax.plot(x, [r["vcpus_pread_sum_ns"] for r in pts], "s--",
                label="pread every vCPU fd + sum in userspace")
        ax.set_xscale("log", base=2)
        ax.set_xticks(x)
        ax.set_xticklabels([str(v) for v in x])
        ax.set_yscale("log")
        ax.set_xlabel("vCPUs in the VM")
        ax.set_ylabel("ns per read (median, QEMU TCG guest)")
        ax.set_title("B6: aggregate read cost vs vCPU count")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "b6.png"), dpi=110)
        plt.close(fig)
        made.append("b6.png")
    if "b10" in res:
        series = res["b10"]["raw"]["series"]
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        styles = {("vcpu_create", "poll"): "-", ("vcpu_create", "epoll_wait"): "--",
                  ("vm_hangup", "poll"): "-", ("vm_hangup", "epoll_wait"): "--"}
        for s in series:
            v = s["latency"].get("sorted_samples")
            if not v:
                continue
            n = len(v)
            label = ("vCPU created -> POLLPRI" if s["event"] == "vcpu_create"
                     else "VM closed -> POLLHUP") + f', {s["waiter"]}()'
            ax.plot([x / 1000 for x in v], [(i + 1) / n for i in range(n)],
                    styles.get((s["event"], s["waiter"]), "-"),
                    color="tab:blue" if s["event"] == "vcpu_create" else "tab:red",
                    label=label)
        ax.axhline(0.5, color="grey", lw=0.6)
        ax.axhline(0.99, color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_xlabel("µs from the call that causes the event to the poller's wake-up")
        ax.set_ylabel("fraction of events")
        ax.set_title(f'B10: event latency ({series[0]["events"]} events per series, '
                     "QEMU TCG guest)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "b10.png"), dpi=110)
        plt.close(fig)
        made.append("b10.png")
    return made


def reading_notes(res, host=None):
    """What limits each figure: the caveats a reader needs, with numbers."""
    out = ["## How to read these figures", ""]
    out.append(
        "- **Method.** One guest boot runs every phase. A figure is the median, over "
        "rounds, of the mean time per call of a short batch; in each round every "
        "contender of a comparison runs one batch, in a freshly shuffled order, and "
        "each contender cycles over 16 instances (for the bench module's sources: 4 "
        "copies of the schema with 4 sources each) and 8 user buffers, so that no "
        "result hangs on where one object landed in the emulated TLB. Ratios are "
        "ratios of those medians.")
    b1r = res.get("b1", {}).get("ratios", {})
    if b1r and b1r.get("kvm_shape_vs_kvm") is not None:
        judged = [v for v in (b1r.get("kvm_shape_vs_kvm"), b1r.get("vcpu_matched_vs_kvm"),
                              b1r.get("snap_whole_vs_kvm"), b1r.get("snap_values_vs_kvm"))
                  if v is not None]
        verdict = ("all met" if max(judged) <= 1.0 else
                   "met" if min(judged) <= 1.0 else "missed") + \
            f" ({fmt(min(judged))}x..{fmt(max(judged))}x)"
        out.append(
            "- **B1.** A read of the data block is one snapshot, assembled in the open "
            "file's buffer (src/core/read.c `statsfd_fill()`), then copied out eight bytes "
            "at a time: `statsfd_copy_words()` stores each u64 with `unsafe_put_user()`, "
            "after the checks `copy_to_user()` makes (KASAN/KCSAN instrumentation, the "
            "usercopy fault-injection site, `access_ok()`), and a fault ends the read "
            "short at the faulting byte. KVM's stats read is one `copy_to_user()`, which "
            "in the stock 6.1 kernel is `rep movsb` (`-cpu max` advertises ERMS); QEMU "
            "TCG runs a `rep`-prefixed string instruction one element per pass through "
            "its translated block, so KVM's copy-out pays per byte what ours pays per "
            "eight (/dev/zero's `clear_user()` is `rep stosq`, one pass per eight bytes "
            "too). One more byte of a read costs "
            f"{fmt(b1r.get('ours_vcpu_ns_per_extra_byte'))} ns here against KVM's "
            f"{fmt(b1r.get('kvm_vcpu_ns_per_extra_byte'))} ns and /dev/zero's "
            f"{fmt(b1r.get('zero_ns_per_extra_byte'))} ns (at 57c4020, with one "
            "`copy_to_user()` of the buffer: 1.96 vs 1.73 ns, and ours/KVM 1.13x). "
            "Ours/KVM for the same bytes: "
            f"{fmt(b1r.get('kvm_shape_vs_kvm'))}x with snapshots off (KVM's exact shape), "
            f"{fmt(b1r.get('snap_values_vs_kvm'))}x with snapshots on, "
            f"{fmt(b1r.get('snap_whole_vs_kvm'))}x for the whole snapshot data block "
            "(16 B more), "
            f"{fmt(b1r.get('vcpu_matched_vs_kvm'))}x for a provider vCPU: the 1.0x "
            f"targets are {verdict}. The margin is an emulator effect: on hardware "
            "`rep movsb` copies a KiB in tens of ns. Snapshots cost little: on/off "
            f"{fmt(b1r.get('snap_vs_nosnap'))}x for the same bytes.")
    b3 = res.get("b3")
    if b3:
        on = b3.get("snapshots_on", {})
        out.append(
            "- **B3.** A data-only pread copies the values and never touches the "
            "descriptor block; a whole-file read copies the descriptors too, which "
            "is why it grows with the schema. Both are copied out eight bytes at a "
            "time (see B1), for every schema size alike: flatness is "
            f"{fmt(b3['data_spread'] * 100)}% with snapshots off and "
            f"{fmt(on.get('data_spread', 0) * 100) if on else 'n/a'}% on.")
    b4 = res.get("b4", {})
    if "overhead" in b4:
        b8r = res.get("b8", {})
        off = b8r.get("off", {}).get("ns_per_exit")
        on = b8r.get("on", {}).get("ns_per_exit")
        upd = b4["update_ns_per_exit"]
        txt = ("- **B4.** A synthetic exit of statsfd_vm costs "
               f"{fmt(b4['nostats']['ns_per_exit'])} ns here without stats: a check of "
               "the stretch, a switch, a multiply and a store of the workload's state, "
               "no world switch. With stats, each exit also adds to its counters in the "
               "writer's live values (reached through `vcpu->stats`: in the MMIO path of "
               "`statsfd_vm_vcpu_run()` three loads, adds and stores of counters), and "
               "the updates are grouped in update windows (the default, "
               "update_windows=Y), one per stretch of up to 256 exits between two of "
               "the loop's \"guest entries\" (src/vm/run.c). ")
        if b4["overhead"] <= 0.03:
            txt += (f"The stats build measures {fmt(upd)} ns "
                    f"({b4['overhead'] * 100:+.1f}%) against the build without: the "
                    "3% target is met. Under TCG an exit's cost follows how the "
                    "compiler laid out the loop's translated blocks as much as its "
                    "memory accesses, so this figure says only that the counters cost "
                    "no more than a few percent of this exit here. ")
        else:
            txt += (f"Together they add {fmt(upd)} ns, {fmt(b4['overhead'] * 100)}% of "
                    "that; a 3% budget for these updates needs an exit of at least "
                    f"{fmt(upd / 0.03)} ns of other work. ")
        txt += ("Both builds are the bench's own copies of the provider, made with "
                "-falign-functions=4096: under TCG a loop whose translated blocks lie on "
                "two guest pages cannot chain them, so before every function had a page "
                "of its own, whether the run loop straddled a page boundary (an accident "
                "of the code before it) moved the build without stats between 11 and "
                "32 ns an exit and the ratio between -20% and +67% from one commit to "
                "the next. Laid out alike, the builds differ by the counters alone; "
                "the same method on the tree before the seqcount latch (6c2a143) "
                "measured 14.4 ns of updates on a 10.1 ns exit (143%): the latch costs "
                "an exit nothing, its copy is per window. ")
        if off and on:
            txt += (f"B8, in the same module loads, measures an exit with stats at "
                    f"{fmt(off)} ns without windows and {fmt(on)} ns with them. ")
        txt += ("One in-kernel CPUID exit of upstream KVM in this (nested, emulated) "
                f"guest costs {fmt(b4.get('kvm_exit', {}).get('ns_per_exit'))} ns. The "
                "figure moves with code and data layout under TCG (see the per-load "
                "spread).")
        out.append(txt)
    b5 = res.get("b5", {})
    if b5:
        out.append(
            "- **B5.** 'statsfd instance' is what the core adds per source: its "
            "`struct statsfd_source`, the id string and the values, measured on "
            "sources of the bench module (a slab cache of exactly one source, so no "
            "kmalloc rounding), of three kinds, the values in the owner's object for "
            "all three (API version 3: a snapshot source is set up with the owner's live "
            "stats, as a plain one): plain, with snapshots (the core adds the published "
            "area, with `kzalloc()`: the 64-byte header and two copies of the values, the "
            "seqcount latch's, each copy's start cache-line aligned; for a vCPU's 1176 B "
            "of values 2,456 B, a 4 KiB kmalloc object) and mappable (the header and the "
            "two copies in whole pages: one page for a vCPU). Pages are "
            "in no /proc/meminfo field of their own: B5 runs in a cgroup v2 memory cgroup "
            "and takes them as the kernel memory charged to it beyond slab objects "
            "(everything statsfd allocates per instance is charged). A mappable instance "
            "costs the plain instance plus its page: its slab is the plain one's (before "
            "API version 3 the core also kmalloc()ed the live values and a copy buffer "
            "for the debugfs view, 2 KiB each for a vCPU, which now lives with the view). "
            "The statsfd_vm fleet's VMs and vCPUs, also mappable, keep their stats "
            "embedded the same way. Its stats fd adds a "
            "`struct file` and a dentry, the same "
            "as every KVM stats fd, and since snapshots the file's read buffer "
            "(`kzalloc(data_size)` in src/core/fd.c `statsfd_source_getfile()`; for a "
            "vCPU's 1192 B data block a 2 KiB kmalloc object): that is why a stats fd "
            f"costs more than the {fmt(PREVIOUS['fleet_slab_per_stats_fd'])} B of "
            f"{PREVIOUS['commit']}. The descriptor block is built once per schema: 1000 "
            "descriptors instead of 10 change the per-instance cost by a few bytes. "
            "/proc/meminfo's Slab counts slab pages, not objects: a bench source with "
            "8000 B of values no longer fits 4 to an order-3 slab now that "
            "`struct statsfd_source` is larger, hence ~11 KB per 8000 B source there "
            "(the memory cgroup's slab figure in results.json counts the objects).")
    if "b6" in res:
        out.append(
            "- **B6.** A VM's aggregates are computed at read time, over one snapshot "
            "of every vCPU; the cost is linear in the vCPU count, and below reading and "
            "summing every vCPU fd from userspace beyond a few vCPUs.")
    b7 = res.get("b7")
    if b7:
        n = b7["ns"]
        r7 = b7["ratios"].get("mmap_vs_pread")
        met = ("the target is met against the whole pread but not against the syscall "
               "alone" if r7 is not None and r7 <= 0.1 else
               "the target is missed, and the syscall alone is more than a tenth")
        busy = b7.get("busy", {})
        if "mapped_reads" in busy:
            bz = (f"{busy['reads_retried']:,} of {busy['mapped_reads']:,} copies retried "
                  f"and {busy['fallbacks_to_pread']} fell back to pread")
        else:
            bz = "not measured in this run"
        pv7 = PREVIOUS_B7
        out.append(
            "- **B7.** The mapped copy is the ABI document's reader of version 2 of the "
            "area (`statsfd_mmap_copy()` in the uapi header, here with bounded tries): an "
            "acquire load of `seq`, one relaxed 8-byte load and one store per value (147 "
            "for a vCPU) from the copy `seq` selects (`seq & 1`), an acquire fence and "
            "`seq` again; the protocol around the copy costs "
            f"{fmt(n.get('mmap_seq_only'))} ns, so the copy is nearly all of the "
            f"{fmt(n.get('mmap_seq'))} ns (`memcpy()` instead: "
            f"{fmt(n.get('mmap_seq_memcpy'))} ns). The pread it is compared with pays "
            f"the syscall ({fmt(n.get('pread_one_value'))} ns for 8 B) and its "
            f"copy-out (see B1), so {met}: "
            f"{fmt(b7['ratios'].get('mmap_vs_pread_one_value'))}x a pread of one value. "
            "A single value through the mapping needs only the load of `seq` that picks "
            f"the copy: {fmt(n.get('mmap_one_value'))} ns vs "
            f"{fmt(n.get('pread_one_value'))} ns. With the vCPU running in another thread "
            "(the guest has one CPU, so the two alternate), a copy retries only when the "
            "writer published a window while the reader was preempted mid-copy; the "
            "writer never makes it wait otherwise (B14 measures a stalled writer): "
            f"{bz}. At {pv7['results_commit']} B7 measured "
            f"{fmt(pv7['mmap_seq'])} vs {fmt(pv7['pread_values'])} ns "
            f"({fmt(pv7['mmap_seq'] / pv7['pread_values'])}x); the mapped copy is "
            "unchanged, the pread it is judged against is cheaper since its copy-out "
            "became eight-byte stores (B1), so the same mapping is now "
            f"{fmt(r7)}x of it.")
    b8 = res.get("b8")
    if b8 and "ratio" in b8:
        pl = b8.get("per_load_ratio") or [b8["ratio"]]
        bad = sum(b8[k]["rounds_with_unexpected_seq"] +
                  b8[k].get("rounds_with_unexpected_published_exits", 0) for k in ("on", "off"))
        met = "met" if b8["ratio"] <= 1.10 else "missed"
        out.append(
            "- **B8.** Same module, same vCPU, `update_windows` toggled between "
            "measurements; `seq` in the vCPU's mapping confirms each setting: with "
            "windows a run advances it by 1 per window published, one window at the start "
            "of the run and one per stretch of up to 256 exits, the last of which also "
            "closes the run, and the mapped `exits` then count every exit run so far; "
            "without, neither moves: the run loop opens no window, so nothing is "
            "published and readers see no change (rounds where either did otherwise: "
            f"{bad}). The "
            "run loop (src/vm/run.c `statsfd_vm_vcpu_run()`) opens a window at the first "
            "exit of a stretch and closes it at the next \"guest entry\" (its "
            "reschedule and signal check every 256 exits, STATSFD_VM_SIGNAL_CHECK_EXITS) "
            "or before a halt sleeps. Its per-exit code is the same with windows on and "
            "off (the test of the stretch's `open` flag runs in both); what differs is "
            "`statsfd_update_end()` (src/core/snapshot.c: two write barriers, a copy of "
            "the vCPU's live values into the copy readers are not using, and a store of "
            "the count that selects it; `statsfd_update_begin()` costs nothing), once per "
            "256 exits instead of once per exit. At 57c4020, with one window per exit "
            "(then two stores of the count and barriers, no copy), they cost 6.89 ns an "
            "exit (1.40x); a copy of a vCPU's 155 values per 256 exits is under one "
            "store per exit. "
            "B8 now "
            f"measures {fmt(b8['ratio'])}x ({fmt(b8['on']['ns_per_exit'])} vs "
            f"{fmt(b8['off']['ns_per_exit'])} ns; per module load "
            f"{fmt(min(pl))}..{fmt(max(pl))}x): the target of 1.10x is {met}"
            + (", and the two settings are within the per-load spread of each other. "
               if min(pl) <= 1.0 <= max(pl) else ". ")
            + "A reader's snapshot, consistent across all of a "
            "vCPU's values, is the copy the last window published: it never waits for "
            "the writer (B14), and is at most one stretch (256 synthetic exits) old "
            "while the vCPU runs. "
            + (f"The windows' cost per exit, {fmt(b8['window_ns_per_exit'])} ns, is "
               f"{fmt((b8.get('window_vs_kvm_exit') or 0) * 100)}% of one upstream KVM "
               "exit in this guest." if b8["window_ns_per_exit"] > 0 else
               "The windows' cost per exit is below what this guest resolves "
               f"({fmt(b8['window_ns_per_exit'])} ns)."))
    b9 = res.get("b9")
    if b9:
        n9, r9 = b9["ns"], b9["ratios"]
        out.append(
            "- **B9.** A view's read (src/core/read.c `statsfd_fill_view()`) takes one "
            "snapshot of the ranges of the source's values that hold its stats, "
            "gathers the selected values into the view's compact data block and copies "
            f"out its {b9['raw']['view_layout']['data_size']} B; a full read snapshots and "
            f"copies out all {b9['raw']['vcpu_layout']['data_size']} B. Under TCG a "
            "small read is mostly the syscall, the fd, the file's mutex and the "
            "snapshot protocol: one 8 B pread of the full fd costs "
            f"{fmt(n9.get('full_one_value'))} ns, {fmt(r9.get('one_value_vs_full'))}x the "
            "full data block's pread, and 64 contiguous bytes "
            f"{fmt(r9.get('prefix_64_vs_full'))}x. No read of eight values can cost "
            "less than that floor, so the view's ratio, "
            f"{fmt(r9.get('view_vs_full'))}x, "
            + ("meets 0.5x. " if (r9.get("view_vs_full") or 9) <= 0.5 else
               "misses 0.5x in this guest: the floor alone is above half of the full "
               "read, whose copy-out is eight-byte stores now (B1). "
               if (r9.get("one_value_vs_full") or 0) > 0.5 else
               "misses 0.5x: the floor is below half of the full read, so the view's "
               "own work decides. ")
            + "The view's own work, gathering eight values where a prefix read copies one "
            f"range, is what it costs above 64 contiguous bytes: "
            f"{fmt((n9.get('view') or 0) - (n9.get('full_prefix_64') or 0))} ns "
            f"({fmt(r9.get('view_vs_prefix_64'))}x). Against eight separate preads of the "
            f"same stats, which pay the floor eight times, the view is "
            f"{fmt(r9.get('view_vs_separate'))}x (target 0.3x). A view of the view costs "
            f"{fmt(n9.get('view_of_view'))} ns, {fmt(r9.get('view_of_view_vs_view'))}x "
            "the view.")
    b10r = res.get("b10")
    if b10r:
        ser = b10r["series"]
        cr = [r for r in ser if r["event"] == "vcpu_create"]
        hu = [r for r in ser if r["event"] == "vm_hangup"]
        wrong = sum(r["wrong_revents"] for r in ser)
        early = sum(r["woke_before_return"] for r in cr)
        ncr = sum(r["events"] for r in cr)
        txt = ("- **B10.** A poller thread sleeps in `poll()` (or, in a second series, "
               "level-triggered `epoll_wait()`) on the VM's stats fd; the main thread "
               "starts each event only once /proc shows the poller asleep, and both take "
               "CLOCK_MONOTONIC timestamps. The guest has one CPU: a latency includes "
               "the switch to the poller. The provider is loaded with debugfs=0 here, "
               "so that creating a vCPU does not also create its debugfs files. ")
        if cr:
            txt += ("A vCPU's creation wakes the poller from inside STATSFD_VM_CREATE_VCPU "
                    "(`wake_up_poll()` in `statsfd_children_changed()` when the vCPU's "
                    "source joins the VM's, src/core/source.c), and the woken poller ran "
                    f"before the ioctl returned in {early} of {ncr} events: the latency is "
                    "bounded by the ioctl itself ("
                    + ", ".join(f"{fmt(r['call_median_ns'] / 1000)} µs median with "
                                f"{r['waiter']}()" for r in cr)
                    + "), which creates the vCPU (its source, its page of values, its fd) "
                    "as well as delivering the event; after each event the "
                    "poller reads the VM fd's header, which consumes it. ")
        if hu:
            txt += ("The VM's hang-up comes with the last of the VMM's handles (here the "
                    "VM fd, after its 2 vCPU fds; src/vm/vm.c "
                    "`statsfd_vm_vm_close_handle()` hangs up the VM's and its vCPUs' "
                    "sources): from that close the poller woke in "
                    + ", ".join(f"{fmt(r['second_median_ns'] / 1000)} µs median "
                                f"(p99 {fmt(r['second_p99_ns'] / 1000)} µs) with "
                                f"{r['waiter']}()" for r in hu)
                    + ". ")
        txt += (f"Every wake-up had the expected revents (POLLPRI without POLLHUP for a "
                f"creation, POLLHUP for a close): {wrong} did not. The tails (p99, max) are "
                "emulated thread switches on a shared host and vary from run to run.")
        out.append(txt)
    b15r = res.get("b15")
    if b15r and b15r.get("ratios"):
        x = b15r["raw"]
        out.append(
            "- **B15.** tools/bench/b15_siege.c: the fleet is registered by uid 0 as VMMs "
            "would; an honest scraper behaves as Prometheus (one keep-alive connection, "
            "basic auth, `Accept-Encoding: gzip`, 10 s to the last byte or the scrape "
            "counts as failed at 10 s) from 127.0.0.200, the collector's `--http-scraper`, "
            "while the attackers of tools/tests/siege.c (collector_siege_test's code) use "
            "127.0.0.1-16 as any local user can. Each state runs on a freshly started "
            "collector (defaults, but for `--web.config.file`, `--http-scraper` and "
            "`--user-max-sources` equal to the fleet's sources, so that the quota attacker "
            f"of uid 65534 can register as many: {x.get('quota', {}).get('attacker_sources', '?')}); "
            "the attack runs 3 s before the first scrape, which logs in with bcrypt and is "
            "reported apart, then the timed scrapes. The collector and the scraper run on "
            "CPU 0, the attackers on the other CPU. RSS is sampled every 100 ms from the "
            "collector's start to its stop (registration included), and VmHWM read at the "
            "end. With a few dozen scrapes per state p99 is close to the maximum: one slow "
            "scrape on a shared host moves it.")
    b14r = res.get("b14")
    if b14r and "reads" in b14r:
        x = b14r["raw"]
        worst = max((v for k, v in b14r["ratios"].items() if k.endswith("_p99") and v),
                    default=None)
        out.append(
            "- **B14.** Its own boot: the stock 6.1 kernel with "
            f"{x['cpus']} CPUs and `preempt=full` (preemption: {x['preempt']}; the kernel "
            "is PREEMPT_DYNAMIC). The writer is vCPU 0 of a statsfd_vm VM, run by a child "
            f"process pinned to CPU {x['writer_cpu']} in long RUNs of I/O exits (one update "
            "window per stretch of up to 256 exits, almost all of its time inside one); "
            f"the readers are the bench on CPU {x['reader_cpu']}, timing single reads of "
            "the three kinds in turn. Each writer state is measured in "
            f"{x['turns_per_state']} turns alternating with the others'. Preempted: the "
            "writer is made SCHED_IDLE and a busy-loop process pinned to its CPU, so it "
            "runs in rare slices and is preempted wherever the tick finds it (the "
            "preemptions column counts its involuntary switches), inside a window most of "
            "the time. Stopped: SIGSTOP, which the run loop takes at its next \"guest "
            "entry\", after the stretch's window closed: a writer that publishes "
            "nothing. Since the seqcount latch a reader copies the values the last window "
            "published and never waits for the writer (before it, a writer preempted "
            "inside a window made readers spin, ask it for a copy, and give up with "
            "EAGAIN after 100 ms). The worst p99 ratio to the running writer's is "
            f"{fmt(worst)}x; reads with the writer running may retry a copy when a window "
            "is published during it, which the stalled states never do. Under TCG both "
            "guest CPUs are host threads on a shared host: tails are host noise as much "
            "as guest behaviour.")
    b13r = res.get("b13")
    if b13r and "overhead" in b13r:
        x = b13r["raw"]
        sc = x.get("scrapes", {})
        txt = ("- **B13.** The bench reads every VM's and vCPU's data block itself with "
               "one `pread()` each, twice a second, and takes its own utime + stime "
               "(`getrusage`); then statsfd-collector reads the same fds at "
               "`--interval 500`, nobody scraping, and its utime + stime comes from "
               "/proc. The collector reads mapped vCPUs through their mapping "
               f'({x["collector"]["sources_mapped"]} of {x["collector"]["sources_reported"]} '
               "sources here), so its reads can cost less than the bench's preads. ")
        if sc.get("iterations"):
            txt += ("Scrapes go over one keep-alive connection to a second collector "
                    "reading once an hour (under TCG a render of the fleet outlasts a "
                    "500 ms tick, after which every scrape would render); a change of "
                    "the sources (VM 0 removed and registered again) forces the render "
                    "a read tick would. The first scrape after it renders the "
                    f'exposition ({fmt(sc["body_bytes"])} B), the next is served from '
                    "the cache; gzip: the first encodes the cached text, the next is "
                    "served the cached encoding. Wall time to the last byte, medians.")
        out.append(txt)
    out.append("")
    return out


def section(lines, title, head=None):
    """A section of results.md: "## @title", and the head of its table
    when @head ("a | b | ...") is given."""
    lines += [f"## {title}", ""]
    if head:
        table_head(lines, head)


def table_head(lines, head):
    """The first two lines of a table whose columns are @head ("a | b")."""
    lines += [f"| {head} |", "|" + "---|" * (head.count(" | ") + 1)]


def markdown(res, j, info, command, notes):
    lines = []
    lines.append("# statsfd benchmark results")
    lines.append("")
    secs = ((info or {}).get("host") or {}).get("guest_seconds")
    lines.append(f"Reproduce with `{command}` from the repository root "
                 "(tools/bench/run-bench: builds the modules against the stock 6.1 "
                 "headers, boots the guest, writes this directory"
                 + (f"; the guest ran {secs} s" if secs else "") + ").")
    lines.append("")
    if info:
        lines.append(f"Guest: `{info.get('kernel', '?')}`, QEMU TCG (`-accel tcg -cpu max`, "
                     f"{info.get('cpus')} vCPU), clocksource {info.get('clocksource')}, "
                     f"clock_gettime {fmt(info.get('clock_gettime_ns'))} ns; "
                     f"{info.get('rounds')} rounds per figure, median of per-call means, "
                     f"{info.get('warmup')} warm-up calls. "
                     "Absolute times are emulated and mean little; the ratios "
                     "come from contenders measured side by side in the same guest.")
        lines.append("")
    host = info.get("host") if info else None
    if host:
        if host.get("commit"):
            lines.append(f"Modules built from commit {host['commit']}.")
            lines.append("")
        lines.append(f"Host: {host.get('cpus')} cores, load average {host.get('loadavg_before')} "
                     f"before and {host.get('loadavg_after')} after the "
                     f"{host.get('guest_seconds')} s guest run ({host.get('qemu')}, {host.get('date')}). "
                     "Other load on the host inflates emulated timings unevenly; "
                     "results.json also has each figure's quartiles.")
        lines.append("")
    table_head(lines, "Bench | Measure | Value | Target | Result | Detail")
    for r in j.rows:
        lines.append(f"| {r['bench']} | {r['measure']} | {fmt(r['value'], r['unit'])} | "
                     f"{r['target']} | {r['result']} | {r['detail']} |")
    lines.append("")
    if "b1" in res:
        section(lines, "B1: read cost by byte count (prefix of the data block, ns per pread)",
                "bytes | /dev/zero | statsfd_vm vCPU | statsfd 4 KiB source | KVM vCPU | "
                "vCPU/KVM | vCPU/zero | 4K src/zero | KVM/zero")
        for s in res["b1"]["sizes"]:
            lines.append(
                f"| {s['bytes']} | {fmt(s.get('zero_ns'))} | {fmt(s.get('ours_vcpu_ns'))} | "
                f"{fmt(s.get('ours_big_ns'))} | {fmt(s.get('kvm_vcpu_ns'))} | "
                f"{fmt(s.get('ours_vcpu_vs_kvm'))} | {fmt(s.get('ours_vcpu_vs_zero'))} | "
                f"{fmt(s.get('ours_big_vs_zero'))} | {fmt(s.get('kvm_vs_zero'))} |")
        lines.append("")
    if "b3" in res:
        on = res["b3"].get("snapshots_on", {}).get("schemas") or \
            [{} for _ in res["b3"]["schemas"]]
        section(lines, "B3: schema size (1000 values; ns per pread), snapshots off and on")
        lines.append("With snapshots on, the schema has two more descriptors and the data "
                     "block 16 more bytes (sample_ns, generation).")
        lines.append("")
        table_head(lines, "descriptors | file bytes | data-only | whole file | whole/data | "
                   "on: data-only | on: whole file | on: whole/data | data-only on/off")
        for s, t in zip(res["b3"]["schemas"], on):
            lines.append(f"| {s['num_desc']} | {s['file_bytes']} | {fmt(s['data_ns'])} | "
                         f"{fmt(s['whole_ns'])} | {fmt(s['whole_vs_data'])} | "
                         f"{fmt(t.get('data_ns'))} | {fmt(t.get('whole_ns'))} | "
                         f"{fmt(t.get('whole_vs_data'))} | "
                         f"{fmt(ratio(t.get('data_ns'), s['data_ns']))} |")
        lines.append("")
        lines.append("![B3](b3.png)")
        lines.append("")
    if "b6" in res:
        section(lines, "B6: VM aggregate read vs vCPU count (ns per read)",
                "vCPUs | VM stats fd pread | pread + sum of every vCPU fd")
        for s in res["b6"]["points"]:
            lines.append(f"| {s['vcpus']} | {fmt(s['vm_pread_ns'])} | "
                         f"{fmt(s['vcpus_pread_sum_ns'])} |")
        lines.append("")
        lines.append("![B6](b6.png)")
        lines.append("")
    if "b7" in res:
        x = res["b7"]["raw"]
        section(lines, f"B7: a vCPU's values through the mapping vs pread "
                       f"(idle vCPUs, ns per read, {x['rounds']} rounds)",
                "contender | bytes | ns (median) | p25 | p75 | / pread of the values")
        base = res["b7"]["ns"].get("pread_values")
        for name, c in x["idle"].items():
            lines.append(f"| {name} | {c['bytes']} | {fmt(c['ns'])} | {fmt(c['p25_ns'])} | "
                         f"{fmt(c['p75_ns'])} | {fmt(ratio(c['ns'], base))} |")
        lines.append("")
    if "b8" in res and "on" in res["b8"]:
        b = res["b8"]
        section(lines, "B8: run loop, ns per exit with update windows on and off (per module load)",
                "load | on | off | on/off")
        for i, (a, c, q) in enumerate(zip(b["on"]["per_load_ns_per_exit"],
                                          b["off"]["per_load_ns_per_exit"],
                                          b["per_load_ratio"])):
            lines.append(f"| {i + 1} | {fmt(a)} | {fmt(c)} | {fmt(q)} |")
        lines.append(f"| all rounds | {fmt(b['on']['ns_per_exit'])} | "
                     f"{fmt(b['off']['ns_per_exit'])} | {fmt(b['ratio'])} |")
        lines.append("")
    if "b9" in res:
        x = res["b9"]["raw"]
        section(lines, f"B9: 8 of a vCPU's stats through a view vs the full stats fd "
                       f"(idle vCPUs, ns per read, {x['rounds']} rounds)",
                "contender | bytes | ns (median) | p25 | p75 | / full data block")
        base = res["b9"]["ns"].get("full")
        for name, c in x["reads"].items():
            nb = c["bytes"] if name != "separate" else "8 x 8"
            lines.append(f"| {name} | {nb} | {fmt(c['ns'])} | {fmt(c['p25_ns'])} | "
                         f"{fmt(c['p75_ns'])} | {fmt(ratio(c['ns'], base))} |")
        lines.append("")
    if "b10" in res:
        section(lines, "B10: event latency (µs from the call that causes the event to "
                       "the poller's wake-up)",
                "event | waiter | events | median | p90 | p99 | max | "
                "from the ioctl's return / the last close: median | p99 | "
                "woke before the call returned | wrong revents")
        for r in res["b10"]["series"]:
            ev = ("vCPU created -> POLLPRI" if r["event"] == "vcpu_create"
                  else "VM closed -> POLLHUP")
            lines.append(f"| {ev} | {r['waiter']}() | {r['events']} | "
                         f"{fmt(r['median_ns'] / 1000)} | {fmt(r['p90_ns'] / 1000)} | "
                         f"{fmt(r['p99_ns'] / 1000)} | {fmt(r['max_ns'] / 1000)} | "
                         f"{fmt(r['second_median_ns'] / 1000)} | "
                         f"{fmt(r['second_p99_ns'] / 1000)} | {r['woke_before_return']} | "
                         f"{r['wrong_revents']} |")
        lines.append("")
        lines.append("![B10](b10.png)")
        lines.append("")
    b14r = res.get("b14")
    if b14r and "states" in b14r["raw"]:
        x = b14r["raw"]
        section(lines, f"B14: snapshot reader latency by writer state (µs per read, "
                       f"{x['reads_per_kind_and_state']:,} reads per kind and state, "
                       f"{x['cpus']} CPUs, preemption {x['preempt']})",
                "read | writer | p50 | p90 | p99 | max | p99 / running | EAGAIN | "
                "errors | inconsistent | windows published | writer preempted")
        for kind, _ in B14_KINDS:
            base = x["states"]["running"]["reads"][kind]["p99_ns"]
            for state in ("running", "preempted", "stopped"):
                sx = x["states"][state]
                r = sx["reads"][kind]
                lines.append(f"| {kind} | {state} | {fmt(r['p50_ns'] / 1000)} | "
                             f"{fmt(r['p90_ns'] / 1000)} | {fmt(r['p99_ns'] / 1000)} | "
                             f"{fmt(r['max_ns'] / 1000)} | {fmt(ratio(r['p99_ns'], base))} | "
                             f"{r['eagain']} | {r['errors']} | {r['inconsistent']} | "
                             f"{sx['writer_windows_published']:,} | "
                             f"{sx['writer_preemptions']:,} |")
        lines.append("")
    b15r = res.get("b15")
    if b15r and "p99_ms" in b15r["raw"].get("idle", {}):
        x = b15r["raw"]
        section(lines, f"B15: an honest scrape under siege (ms to the last byte, "
                       f"{x['vms']} VMs x {x['vcpus_per_vm']} vCPUs, {x['scrapes']} scrapes "
                       f"every {x['interval_ms']} ms per state, {x['cpus']} CPUs)",
                "state | p50 | p99 | max | p99 / idle | failed | first (login) | "
                "RSS max (MB) | VmHWM (MB) | 503 | refused | evicted | deadlines | "
                "auth 429 | longest request (s)")
        for k in ["idle"] + [n for n, _ in B15_ATTACKS] + ["double"]:
            st = x.get(k)
            if not st or "p99_ms" not in st:
                continue
            lines.append(f"| {k} | {fmt(st['p50_ms'])} | {fmt(st['p99_ms'])} | "
                         f"{fmt(st['max_ms'])} | "
                         f"{fmt(ratio(st['p99_ms'], x['idle']['p99_ms']))} | "
                         f"{st['failed']} | {fmt(st['first_ms'])} (HTTP {st['first_status']}) | "
                         f"{fmt(st['rss_max_mb'])} | {fmt(st['hwm_mb'])} | "
                         f"{fmt(st['http_busy_total'])} | {fmt(st['http_refused_total'])} | "
                         f"{fmt(st['http_evicted_total'])} | "
                         f"{fmt(st['http_deadlines_total'])} | "
                         f"{fmt(st['http_auth_busy_total'])} | "
                         f"{fmt(st['request_max_seconds'])} |")
        lines.append("")
    lines.extend(reading_notes(res, host))
    if notes:
        lines.append("## Guest notes")
        lines.append("")
        for n in notes:
            lines.append(f"- `{n}`")
        lines.append("")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--host", help="host.json written by run-bench")
    a = ap.parse_args()

    phases, notes = load(a.results)
    if not phases:
        sys.exit(f"report.py: no BENCH-JSON lines in {a.results}")
    j = Judge()
    res = {}
    chk = phases.get("check", [None])[0]
    if chk:
        j.add("-", "bench module self-check (errnos, lifetime, layout of synthetic schemas)",
              chk["checks"] - chk["failures"], f'{chk["checks"]} of {chk["checks"]}',
              chk["failures"] == 0, "; ".join(chk["failed"]) or "all passed", unit="")
    for name, fn in (("b1", b1), ("b2", b2), ("b3", b3), ("b4", b4),
                     ("b5", b5), ("b6", b6), ("b7", b7), ("b8", b8),
                     ("b9", b9), ("b10", b10), ("b11", b11), ("b12", b12),
                     ("b13", b13), ("b14", b14), ("b15", b15), ("b16", b16),
                     ("b17", b17)):
        if name in phases:
            try:
                fn(phases, j, res)
            except (KeyError, ValueError, ZeroDivisionError, IndexError) as e:
                j.add(name.upper(), "phase output incomplete", None, "", None, repr(e))
        else:
            j.add(name.upper(), "phase did not run", None, "", None, "see guest notes")
    info = phases.get("info", [{}])[0]
    host = {}
    if a.host and os.path.exists(a.host):
        with open(a.host, encoding="utf-8") as f:
            host = json.load(f)
    info = dict(info, host=host)
    os.makedirs(a.out, exist_ok=True)
    made = plots(res, a.out)
    doc = {
        "command": a.command,
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "guest": info,
        "targets": j.rows,
        "results": res,
        "plots": made,
        "guest_notes": notes,
    }
    with open(os.path.join(a.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(a.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(markdown(res, j, info, a.command, notes))


if __name__ == "__main__":
    main()
