#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""report.py - turn the bench guest's BENCH-JSON lines into results.

Reads the results channel of the `make bench` guest (one "BENCH-JSON {...}"
line per phase), computes every ratio, judges each against the targets of
issue 4 and writes, under --out: results.json (every figure), results.md
(the table `make bench` prints) and the plots b3.png and b6.png.

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

    j.add("B1", f"pread {kvm_bytes} B data, ours (KVM's exact shape) / KVM vCPU",
          r["kvm_shape_vs_kvm"], "<= 1.0x",
          None if r["kvm_shape_vs_kvm"] is None else r["kvm_shape_vs_kvm"] <= 1.0,
          f'{fmt(ns.get("ours_kvm_shape"))} ns vs {fmt(ns.get("kvm_vcpu"))} ns')
    j.add("B1", f"pread {kvm_bytes} B data, ours (KVM's exact shape) / /dev/zero",
          r["kvm_shape_vs_zero"], "<= 1.3x",
          None if r["kvm_shape_vs_zero"] is None else r["kvm_shape_vs_zero"] <= 1.3,
          f'{fmt(ns.get("ours_kvm_shape"))} ns vs {fmt(ns.get("zero_kvm_size"))} ns')
    j.add("B1", f"pread {matched} B of a vCPU's data, statsfd_vm / KVM vCPU",
          r["vcpu_matched_vs_kvm"], "<= 1.0x",
          None if r["vcpu_matched_vs_kvm"] is None else r["vcpu_matched_vs_kvm"] <= 1.0,
          f'{fmt(ours_m)} ns vs {fmt(kvm_m)} ns')
    j.add("B1", f"pread {matched} B of a vCPU's data, statsfd_vm / /dev/zero",
          r["vcpu_matched_vs_zero"], "<= 1.3x",
          None if r["vcpu_matched_vs_zero"] is None else r["vcpu_matched_vs_zero"] <= 1.3,
          f'{fmt(ours_m)} ns vs {fmt(zero_m)} ns')
    j.add("B1", f"ns per byte, whole vCPU data blocks: statsfd_vm ({ours_bytes} B) / KVM ({kvm_bytes} B)",
          r["per_byte_vcpu_vs_kvm"], "<= 1.0x",
          None if r["per_byte_vcpu_vs_kvm"] is None else r["per_byte_vcpu_vs_kvm"] <= 1.0,
          f'{fmt(ratio(ns.get("ours_vcpu"), ours_bytes))} vs '
          f'{fmt(ratio(ns.get("kvm_vcpu"), kvm_bytes))} ns/B')
    j.add("B1", f"pread {kvm_bytes} B data, upstream KVM vCPU / /dev/zero (reference)",
          r["kvm_vs_zero"], "(host: ~1.35x)", None,
          f'{fmt(ns.get("kvm_vcpu"))} ns vs {fmt(ns.get("zero_kvm_size"))} ns')
    j.add("B1", f"pread whole statsfd_vm vCPU data ({ours_bytes} B) / /dev/zero",
          r["vcpu_whole_vs_zero"], "<= 1.3x",
          None if r["vcpu_whole_vs_zero"] is None else r["vcpu_whole_vs_zero"] <= 1.3,
          f'{fmt(ns.get("ours_vcpu"))} ns vs {fmt(ns.get("zero_ours_size"))} ns')

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


def b3(p, j, res):
    x = p["b3"][0]
    sch = x["schemas"]
    data = [s["data_ns"] for s in sch]
    out = {"raw": x, "schemas": []}
    for s in sch:
        out["schemas"].append({
            "num_desc": s["num_desc"], "data_bytes": s["layout"]["data_size"],
            "file_bytes": s["layout"]["file_size"], "data_ns": s["data_ns"],
            "whole_ns": s["whole_ns"],
            "whole_vs_data": ratio(s["whole_ns"], s.get("data_beside_whole_ns", s["data_ns"])),
        })
    spread = max(data) / min(data) - 1
    out["data_spread"] = spread
    low = [s.get("data_p25_ns") for s in sch]
    out["data_spread_p25"] = max(low) / min(low) - 1 if all(low) else None
    j.add("B3", f'data-only pread ({sch[0]["layout"]["data_size"]} B), '
          f'{sch[0]["num_desc"]} -> {sch[-1]["num_desc"]} descriptors: max/min - 1',
          spread * 100, "<= 10%", spread <= 0.10,
          f"{fmt(min(data))}..{fmt(max(data))} ns", unit="%")
    if out["data_spread_p25"] is not None:
        j.add("B3", "the same on lower quartiles (less host noise)",
              out["data_spread_p25"] * 100, "(context)", None,
              f"{fmt(min(low))}..{fmt(max(low))} ns", unit="%")
    for s in out["schemas"]:
        if s["num_desc"] in (10, 100, 1000):
            j.add("B3", f'whole-file read / data-only, {s["num_desc"]} descriptors '
                  f'({s["file_bytes"]} B vs {s["data_bytes"]} B)',
                  s["whole_vs_data"], "(report)", None,
                  f'{fmt(s["whole_ns"])} ns vs {fmt(s["whole_ns"] / s["whole_vs_data"])} ns, '
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
          f'runs of {runs[0].get("exits_per_short_run", 0)} exits, no halts): with stats vs '
          f'compiled out, {len(by["stats"])} module loads each',
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
            "desc_block_size": b["desc_block_size"],
            "slab_per_instance": b["slab_per_instance"],
            "slab_per_stats_fd": b["stats_fds"]["Slab_per_instance"],
            "slab_schema_and_cache": b["slab_schema_and_cache"],
        }
    out["core"] = core
    vshape = [k for k in shape if x[k]["num_desc"] == x["vcpu_layout"]["num_desc"]]
    if vshape:
        c = core[vshape[-1]]
        over = c["slab_per_instance"] - c["data_size"]
        j.add("B5", f'statsfd instance (source + id + {c["data_size"]} B data), '
              'vCPU-shaped, bytes per instance', c["slab_per_instance"],
              f'<= data + 512 = {c["data_size"] + 512}',
              c["slab_per_instance"] <= c["data_size"] + 512,
              f"data + {fmt(over)} B; 8192 instances, Slab delta", unit=" B")
        j.add("B5", "... plus its stats fd (struct file + dentry, as KVM's)",
              c["slab_per_instance"] + c["slab_per_stats_fd"],
              f'<= data + 512 = {c["data_size"] + 512}',
              c["slab_per_instance"] + c["slab_per_stats_fd"] <= c["data_size"] + 512,
              f'fd: {fmt(c["slab_per_stats_fd"])} B', unit=" B")
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
    j.add("B5", f"statsfd_vm: {nvm} VMs x {nvc} vCPUs, Slab per stats fd",
          fd, "(report; desc block not copied)", None,
          f'vCPU desc block {x["vcpu_layout"]["file_size"] - vc_d} B+; '
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
                     label="data-only pread, 8000 B (median, quartiles)")
        ax1.set_xscale("log")
        ax1.set_ylim(0, max(r + h for r, h in zip(data, hi)) * 1.2)
        ax1.set_xlabel("descriptors in the schema (same 1000 values)")
        ax1.set_ylabel("ns per read (QEMU TCG guest)")
        ax1.set_title("data-only read vs schema size")
        ax1.grid(True, which="both", alpha=0.3)
        ax1.legend(loc="lower right", fontsize=8)
        ax2.plot(x, data, "o-", label="data-only pread")
        ax2.plot(x, [r["whole_ns"] for r in s], "s--", label="whole-file pread")
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
    return made


def reading_notes(res):
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
    if b1r:
        out.append(
            "- **B1 under emulation.** QEMU TCG runs a `rep`-prefixed string "
            "instruction one element per pass through its translated block, and the "
            "stock 6.1 kernel copies with them: `copy_to_user()` (KVM's stats read) "
            "is `rep movsb` since `-cpu max` advertises ERMS, `clear_user()` "
            "(/dev/zero) is `rep stosq`. statsfd copies values with one 8-byte "
            "`READ_ONCE()` + `unsafe_put_user()` per value (never tearing a u64), which "
            "TCG translates to plain moves. That is why ours reads "
            f"{fmt(b1r.get('kvm_shape_vs_kvm'))}x KVM and {fmt(b1r.get('kvm_shape_vs_zero'))}x "
            "/dev/zero here, below the 'floor': the targets are met in this guest, but "
            "the margin is an emulator effect and says nothing about hardware, where "
            "`rep movsb` is fast. Small reads (8-64 B), where the copy does not matter, "
            "show the syscall paths alone.")
    if "b3" in res:
        out.append(
            "- **B3.** A data-only pread copies the values and never touches the "
            "descriptor block; a whole-file read copies the descriptors too (with "
            "`copy_to_user()`, so under TCG at emulated `rep movsb` speed), which is "
            "why it grows with the schema.")
    b4 = res.get("b4", {})
    if "overhead" in b4:
        out.append(
            "- **B4.** A synthetic exit of statsfd_vm costs "
            f"{fmt(b4['nostats']['ns_per_exit'])} ns here without stats: a counter "
            "check, a switch and a multiply, no world switch. The stats updates, 3-4 "
            f"plain `u64 +=` per exit, add {fmt(b4['update_ns_per_exit'])} ns, "
            f"{fmt(b4['overhead'] * 100)}% of that. A 3% budget for the same updates "
            f"needs an exit of at least {fmt(b4['update_ns_per_exit'] / 0.03)} ns of "
            "other work; a real exit is a world switch, and one in-kernel CPUID exit "
            "of upstream KVM in this (nested, emulated) guest costs "
            f"{fmt(b4.get('kvm_exit', {}).get('ns_per_exit'))} ns. The target is "
            "missed against the synthetic loop, whose exits do almost nothing; the "
            "updates themselves are plain adds like KVM's (`++vcpu->stat.x`). The "
            "figure moves with code layout under TCG: development runs of earlier "
            "provider builds measured between 22% and 108%.")
    b5 = res.get("b5", {})
    if b5:
        out.append(
            "- **B5.** 'statsfd instance' is what the core adds per source: its "
            "`struct statsfd_source`, the id string and the values, measured on "
            "sources of the bench module (a slab cache of exactly one source, so no "
            "kmalloc rounding). Its stats fd adds a `struct file` and a dentry "
            "(anon inode files are pseudo files with a dentry each on 6.1), the same "
            "as every KVM stats fd. The descriptor block is built once per schema: "
            "1000 descriptors instead of 10 change the per-instance cost by a few "
            "bytes, not by the 63 KiB the extra descriptors take once.")
    if "b6" in res:
        out.append(
            "- **B6.** A VM's aggregates are computed at read time, under the VM "
            "source's children lock, over every vCPU; the cost is linear in the vCPU "
            "count, and below reading and summing every vCPU fd from userspace beyond "
            "a few vCPUs.")
    out.append("")
    return out


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
        lines.append(f"Host: {host.get('cpus')} cores, load average {host.get('loadavg_before')} "
                     f"before and {host.get('loadavg_after')} after the "
                     f"{host.get('guest_seconds')} s guest run ({host.get('qemu')}, {host.get('date')}). "
                     "Other load on the host inflates emulated timings unevenly; "
                     "results.json also has each figure's quartiles.")
        lines.append("")
    lines.append("| Bench | Measure | Value | Target | Result | Detail |")
    lines.append("|---|---|---|---|---|---|")
    for r in j.rows:
        lines.append(f"| {r['bench']} | {r['measure']} | {fmt(r['value'], r['unit'])} | "
                     f"{r['target']} | {r['result']} | {r['detail']} |")
    lines.append("")
    if "b1" in res:
        lines.append("## B1: read cost by byte count (prefix of the data block, ns per pread)")
        lines.append("")
        lines.append("| bytes | /dev/zero | statsfd_vm vCPU | statsfd 4 KiB source | KVM vCPU | "
                     "vCPU/KVM | vCPU/zero | 4K src/zero | KVM/zero |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for s in res["b1"]["sizes"]:
            lines.append(
                f"| {s['bytes']} | {fmt(s.get('zero_ns'))} | {fmt(s.get('ours_vcpu_ns'))} | "
                f"{fmt(s.get('ours_big_ns'))} | {fmt(s.get('kvm_vcpu_ns'))} | "
                f"{fmt(s.get('ours_vcpu_vs_kvm'))} | {fmt(s.get('ours_vcpu_vs_zero'))} | "
                f"{fmt(s.get('ours_big_vs_zero'))} | {fmt(s.get('kvm_vs_zero'))} |")
        lines.append("")
    if "b3" in res:
        lines.append("## B3: schema size (1000 values; ns per pread)")
        lines.append("")
        lines.append("| descriptors | file bytes | data-only | whole file | whole/data |")
        lines.append("|---|---|---|---|---|")
        for s in res["b3"]["schemas"]:
            lines.append(f"| {s['num_desc']} | {s['file_bytes']} | {fmt(s['data_ns'])} | "
                         f"{fmt(s['whole_ns'])} | {fmt(s['whole_vs_data'])} |")
        lines.append("")
        lines.append("![B3](b3.png)")
        lines.append("")
    if "b6" in res:
        lines.append("## B6: VM aggregate read vs vCPU count (ns per read)")
        lines.append("")
        lines.append("| vCPUs | VM stats fd pread | pread + sum of every vCPU fd |")
        lines.append("|---|---|---|")
        for s in res["b6"]["points"]:
            lines.append(f"| {s['vcpus']} | {fmt(s['vm_pread_ns'])} | "
                         f"{fmt(s['vcpus_pread_sum_ns'])} |")
        lines.append("")
        lines.append("![B6](b6.png)")
        lines.append("")
    lines.extend(reading_notes(res))
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
                     ("b5", b5), ("b6", b6)):
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
