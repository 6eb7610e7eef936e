#!/usr/bin/env python3
"""Writes docs/results.md from the CURRENT runs of every experiment (no GPU; standard library only).

    python3 harness/tools/results_md.py            # rewrites docs/results.md
    python3 harness/tools/results_md.py --check    # exit 1 if docs/results.md is out of date
    python3 harness/tools/results_md.py --gpu "NVIDIA H200" --out /tmp/h200.md   # one GPU's runs

One section per GPU (the GPUs the CURRENT files name, by name), in it one per experiment with a
run on that GPU: the run (results/<experiment>/CURRENT's line of that GPU), its commit and
measured ceilings, and one line per row kind (variant or peer): problems, checks, and the range
of its fraction of the floor and of its speedup over the run's baseline. --results reads another
results tree. A CURRENT file that does not parse or names a missing run: exit 2, file:line named.
"""
import argparse
import csv
import json
import os
import sys

from current import CurrentError, current_files, gpu_key, read_current
from weight_format import awq_format
from collections import OrderedDict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return float("nan")


def span(values, fmt):
    v = sorted(x for x in values if x == x and x > 0)
    if not v:
        return "-"
    lo, hi = fmt.format(v[0]), fmt.format(v[-1])
    return lo if lo == hi else lo + "-" + hi


def experiment_section(name, gpu_name, run, run_dir):
    meta = json.load(open(os.path.join(run_dir, "run.json")))
    if meta.get("kind") == "profile":
        return profile_section(name, run, run_dir, meta)
    rows = list(csv.DictReader(open(os.path.join(run_dir, "results.csv"), newline="")))
    kinds = OrderedDict()
    for r in rows:
        key = r["variant"] + (" (PDL)" if r.get("pdl") == "1" else "")
        fmt = awq_format(r.get("codebook"))
        if fmt:  # the rows of AWQ problems: a kind of their own
            key += " on " + fmt
        kinds.setdefault(key, []).append(r)
    build = meta.get("build", {})
    ceil = meta.get("ceilings", {})
    out = ["### %s (%s)" % (name, gpu_name), ""]
    if meta.get("description"):
        out += [meta["description"], ""]
    out += ["Run `results/%s/%s` on %s, commit %s; ceilings %.0f GB/s copy, %.0f TFLOP/s fp16."
            % (name, run, gpu_name, build.get("git_sha", "?"), ceil.get("copy_gb_per_s", 0),
               ceil.get("fp16_tflops", 0)), ""]
    out += ["| row | family | problems | checks pass / fail | % of floor | x baseline |",
            "|---|---|---|---|---|---|"]
    for key, rs in kinds.items():
        passed = sum(r["check"] == "pass" for r in rs)
        failed = sum(r["check"] == "fail" for r in rs)
        frac = span([100 * fnum(r["frac_of_floor"]) for r in rs], "{:.0f}")
        speed = span([fnum(r["speedup_vs_baseline"]) for r in rs], "{:.2f}")
        checks = "%d / %d" % (passed, failed) if passed or failed else "not checked"
        out.append("| `%s` | %s | %d | %s | %s | %s |" % (key, rs[0].get("family", ""), len(rs),
                                                          checks, frac, speed))
    out.append("")
    return "\n".join(out)


def profile_section(name, run, run_dir, meta):
    """A `kbit-harness profile` run: per (problem, row) its counters (profile.csv's row total)."""
    rows = list(csv.DictReader(open(os.path.join(run_dir, "profile.csv"), newline="")))
    dev = meta.get("device", {}).get("name", "?")
    out = ["### %s (%s)" % (name, meta.get("device", {}).get("name", "?")), ""]
    if meta.get("description"):
        out += [meta["description"], ""]
    out += ["Profile `results/%s/%s` on %s, commit %s (Nsight Compute counters, one launch each)."
            % (name, run, dev, meta.get("build", {}).get("git_sha", "?")), ""]
    out += ["| problem | row | time us | inst / weight | issue % | dram % | tensor % | top stall |",
            "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["kernels"] not in ("0", "1") and r["kernel"] != "(sum)":
            continue
        fmt = "K=" + r["k_bits"] if r["format"] == "kbit" else r["format"]
        stall = "%s %.0f%%" % (r["stall1"], 100 * fnum(r["stall1_share"])) if r["stall1"] else "-"
        out.append("| %s M=%s %s %s | `%s` | %.1f | %.2f | %.0f | %.0f | %.0f | %s |" % (
            r["shape"], r["M"], fmt, r["dtype"], r["row"], fnum(r["time_us"]), fnum(r["inst_per_weight"]),
            fnum(r["issue_active_pct"]), fnum(r["dram_pct"]), fnum(r["tensor_pct"]), stall))
    out.append("")
    return "\n".join(out)


def render(results_root, only_gpu=None):
    """The page; only_gpu (a device name or its folder form) keeps that GPU's runs alone."""
    by_gpu = OrderedDict()  # device name -> [(experiment, run, run folder)]
    for name in current_files(results_root):
        for gpu, dev, run, run_dir, _ in read_current(os.path.join(results_root, name),
                                                      "results/%s/CURRENT" % name):
            if only_gpu is None or gpu_key(only_gpu) == gpu:
                by_gpu.setdefault(dev, []).append((name, run, run_dir))
    if only_gpu is not None and not by_gpu:
        raise CurrentError("no CURRENT file under %s names a run on GPU '%s'"
                           % (results_root, only_gpu))
    parts = ["# Results (generated)", "",
             "Written by `harness/tools/results_md.py` from the runs each `results/<experiment>/CURRENT`",
             "names (one per GPU); do not edit by hand. Every row of a run is in its `results.csv`, its",
             "figures in `figures/` (`python3 harness/plot.py results/<experiment>/<run>` redraws them).",
             "Ranges run over every problem of the run (shapes, M, K, dtypes); the % of floor divides the",
             "problem's floor (compressed bytes over the measured copy bandwidth, or flops over the",
             "measured tensor rate) by the row's median. One section per GPU: a figure is from the GPU",
             "its section names.", ""]
    parts += ["GPUs: " + "; ".join("%s (%d experiments)" % (dev, len(runs))
                                   for dev, runs in sorted(by_gpu.items())), ""]
    for dev, runs in sorted(by_gpu.items()):
        parts += ["## %s" % dev, ""]
        for name, run, run_dir in runs:
            parts.append(experiment_section(name, dev, run, run_dir))
    return "\n".join(parts).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if docs/results.md is stale")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "results.md"))
    ap.add_argument("--results", default=os.path.join(ROOT, "results"),
                    help="the results tree to read (default: this tree's results/)")
    ap.add_argument("--gpu", help="only this GPU's runs (its name as run.json records it)")
    args = ap.parse_args()
    try:
        text = render(args.results, args.gpu)
    except CurrentError as e:
        print("results_md: %s" % e, file=sys.stderr)
        return 2
    if args.check:
        old = open(args.out).read() if os.path.exists(args.out) else ""
        if old != text:
            print("%s is out of date: run python3 harness/tools/results_md.py" % args.out)
            return 1
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
