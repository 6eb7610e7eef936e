#!/usr/bin/env python3
"""Two runs' times row by row, for an A/B experiment: B/A - 1 of each row both runs timed and,
with --peer, the same change measured against the peer's fastest row of the problem in each run,
(B / B_peer) / (A / A_peer) - 1. The two runs of an A/B pair were often timed on different
machines of one GPU model, and one machine can be a few % faster than the other for some kernels;
a change that the peer's rows show as well is the machine's, not the variant's.

    python3 harness/tools/compare_runs.py results/NAME/RUN_A results/NAME/RUN_B
        [--variant NAME ...] [--peer PREFIX] [--shape GLOB] [--m 1,16,128] [--any-gpu]

Rows match on (shape, M, N, K_dim, k_bits, dtype, experts, active_experts, weight format (the
codebook column), variant, PDL); a row without a time (a failed or refused row) is left out and
counted. Default: every variant both runs timed. X_peer is the fastest passing row of the problem
in run X whose variant starts with PREFIX (blank where a run has none). Marked: LOW CLOCK where a
row (ours or the peer row used, either run) was timed below 90% of its run's highest SM clock
(clocks.py, the harness's rule), CHECK where a row of ours did not pass. A last line per variant:
its rows, and the median and range of each change. Refused (exit 2, before anything is printed):
a folder without results.csv, a CSV without a needed column, no rows in common, a --variant that
neither run timed, a --peer no variant starts with, runs of two GPU models (run.json's
device.name; --any-gpu compares them anyway).
"""
import argparse
import csv
import fnmatch
import json
import os
import statistics
import sys

from clocks import low_clock, lower_clock
from weight_format import awq_format, weight_format

NEEDED = ("shape", "M", "N", "K_dim", "k_bits", "dtype", "variant", "median_us", "check")
# Absent from older runs' CSVs (taken as empty there): both runs then read "".
PROBLEM = ("shape", "M", "N", "K_dim", "k_bits", "dtype", "experts", "active_experts")


def refuse(message):
    sys.stderr.write(f"compare_runs: {message}\n")
    sys.exit(2)


def problem(r):
    return tuple(r.get(c, "") for c in PROBLEM) + (weight_format(r),)


def label(r):
    return r["variant"] + (" (PDL)" if r.get("pdl") == "1" else "")


class Run:
    """One run folder: its rows with a time, keyed by (problem, variant label), and which of them
    were timed at a low clock (judged over all of the run's rows, as the harness judges them)."""

    def __init__(self, folder):
        self.folder = folder
        path = os.path.join(folder, "results.csv")
        if not os.path.isfile(path):
            refuse(f"{folder}: no results.csv (not a run folder)")
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in NEEDED if c not in (reader.fieldnames or ())]
            all_rows = list(reader)
        if missing:
            refuse(f"{path} has no column(s) {', '.join(missing)}")
        low = low_clock(all_rows)
        self.rows, self.untimed, self.variants = {}, [], {r["variant"] for r in all_rows}
        for i, r in enumerate(all_rows):
            r["low_mhz"] = lower_clock(r) if i in low else 0
            if not r["median_us"]:
                self.untimed.append(r)
                continue
            key = (problem(r), label(r))
            if key in self.rows:
                refuse(f"{path}: {label(r)} at {r['shape']} M={r['M']} is timed twice")
            self.rows[key] = r
        try:
            with open(os.path.join(folder, "run.json")) as f:
                self.gpu = json.load(f).get("device", {}).get("name")
        except (OSError, ValueError, AttributeError):
            self.gpu = None
        # The physical GPU (the device column: index and UUID), to show when it changed.
        self.uuid = sorted({r.get("device", "").split(" ")[-1] for r in all_rows} - {""})

    def peer(self, prob, prefix):
        """The fastest passing row of prob whose variant starts with prefix, None without one (a
        failed check's time does not stand)."""
        rows = [r for (p, _), r in self.rows.items()
                if p == prob and r["variant"].startswith(prefix) and r["check"] == "pass"]
        return min(rows, key=lambda r: float(r["median_us"]), default=None)


def pct(x):
    return "" if x is None else f"{100 * x:+.2f}%"


def spread(values):
    return (f"median {pct(statistics.median(values))} range {pct(min(values))} .. "
            f"{pct(max(values))}" if values else "none")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--variant", action="append", default=[], help="a variant to compare "
                   "(repeatable; default: every variant both runs timed)")
    p.add_argument("--peer", help="variant prefix of the peer whose rows normalize the change")
    p.add_argument("--shape", default="*", help="shape glob (default: every shape)")
    p.add_argument("--m", help="comma-separated M values (default: every M)")
    p.add_argument("--any-gpu", action="store_true", help="compare runs of two GPU models")
    a = p.parse_args(argv)
    ms = None
    if a.m is not None:
        try:
            ms = {str(int(x)) for x in a.m.split(",")}
        except ValueError:
            refuse(f"--m '{a.m}' is not a comma-separated list of M values")

    run_a, run_b = Run(a.run_a), Run(a.run_b)
    if run_a.gpu != run_b.gpu and not a.any_gpu:
        refuse(f"{a.run_a} was timed on '{run_a.gpu}', {a.run_b} on '{run_b.gpu}' (run.json's "
               "device.name): times of two GPU models do not compare (--any-gpu to do it anyway)")
    for v in a.variant:
        where = [x.folder for x in (run_a, run_b) if v in x.variants]
        if len(where) < 2:
            refuse(f"--variant '{v}' is " + (f"only in {where[0]}" if where else "in neither run"))
    if a.peer is not None and not any(v.startswith(a.peer)
                                      for v in run_a.variants | run_b.variants):
        refuse(f"--peer '{a.peer}': no variant of either run starts with it")

    def chosen(r):
        return ((not a.variant or r["variant"] in a.variant)
                and fnmatch.fnmatchcase(r["shape"], a.shape) and (ms is None or r["M"] in ms))

    keys = sorted((k for k in run_a.rows.keys() & run_b.rows.keys() if chosen(run_a.rows[k])),
                  key=lambda k: (k[1], k[0][0], int(k[0][1]), k[0][2:]))
    if not keys:
        refuse(f"{a.run_a} and {a.run_b} have no timed row in common"
               + (" among the rows chosen" if a.variant or a.m or a.shape != "*" else ""))

    print(f"A: {a.run_a} ({run_a.gpu}, {', '.join(run_a.uuid) or 'no device column'})")
    print(f"B: {a.run_b} ({run_b.gpu}, {', '.join(run_b.uuid) or 'no device column'})")
    untimed = [sum(chosen(r) for r in x.untimed) for x in (run_a, run_b)]
    only = [sum(chosen(x.rows[k]) for k in x.rows.keys() - y.rows.keys())
            for x, y in ((run_a, run_b), (run_b, run_a))]
    print(f"rows compared: {len(keys)}; without a time (left out): A {untimed[0]}, B {untimed[1]}; "
          f"timed in one run only: A {only[0]}, B {only[1]}")
    peer_head = f" {'peer-norm':>9}" if a.peer is not None else ""
    print(f"{'shape':28} {'M':>5} {'K':>8} {'dtype':5} {'variant':24} {'A us':>9} {'B us':>9} "
          f"{'B/A-1':>8}{peer_head}  marks")
    changes, normed = {}, {}
    for prob, variant in keys:
        ra, rb = run_a.rows[(prob, variant)], run_b.rows[(prob, variant)]
        ua, ub = float(ra["median_us"]), float(rb["median_us"])
        change, norm = ub / ua - 1, None
        low = [f"{x} {r['low_mhz']:.0f} MHz" for x, r in (("A", ra), ("B", rb)) if r["low_mhz"]]
        if a.peer is not None:
            pa, pb = run_a.peer(prob, a.peer), run_b.peer(prob, a.peer)
            if pa and pb:
                norm = (ub / float(pb["median_us"])) / (ua / float(pa["median_us"])) - 1
                normed.setdefault(variant, []).append(norm)
                low += [f"{x} peer {r['low_mhz']:.0f} MHz"
                        for x, r in (("A", pa), ("B", pb)) if r["low_mhz"]]
        changes.setdefault(variant, []).append(change)
        marks = [f"CHECK {x} {r['check'] or '(empty)'}"
                 for x, r in (("A", ra), ("B", rb)) if r["check"] != "pass"]
        marks += ["LOW CLOCK " + ", ".join(low)] if low else []
        k = awq_format(ra.get("codebook")) or ra["k_bits"]
        peer_col = f" {pct(norm):>9}" if a.peer is not None else ""
        print(f"{ra['shape']:28} {ra['M']:>5} {k:>8} {ra['dtype']:5} {variant:24} {ua:9.3f} "
              f"{ub:9.3f} {pct(change):>8}{peer_col}  {'; '.join(marks)}".rstrip())
    for variant, values in changes.items():
        line = f"summary {variant}: {len(values)} rows, B/A-1 {spread(values)}"
        if a.peer is not None:
            n = normed.get(variant, [])
            line += f"; peer-normalized ({len(n)} rows with a peer in both) {spread(n)}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
