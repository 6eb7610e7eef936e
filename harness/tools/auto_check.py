#!/usr/bin/env python3
"""How close the `auto` row comes to the variants it dispatches to, in one run (docs/harness.md,
"Dispatch"):

    python3 harness/tools/auto_check.py results/envelope/<run> [--chosen-pct 3] [--best-pct 5]

For every problem (shape, M, K, dtype, PDL; K is the format, "awq_g128", of an AWQ problem) with a
passing `auto` row: its time against the same run's row of the variant it chose (named in its
`config`: "auto -> NAME ...") and against the fastest passing row of ours at that problem (a
row whose `family` column is not baseline, peer or probe; in a CSV without that column, auto and
the rows auto may choose: scalar_gemv, warp_specialized, fragment_mma, fetch_dequant,
inline_dequant). Prints the rows of ours that failed, the problems whose chosen row is missing, and those
outside --chosen-pct / --best-pct with both rows' SM clocks (sampled before and after each row): a
row timed while the GPU clocked down (power capping at large M) reads slower for the same kernel.
Exit status 1 when anything is printed but the count. The count's line names the GPU the run was
timed on (its run.json's device.name).
"""
import argparse
import csv
import json
import os
import re
import sys

from weight_format import awq_format

OURS = {"auto", "scalar_gemv", "warp_specialized", "fragment_mma", "fetch_dequant",
        "inline_dequant"}
NOT_OURS = {"baseline", "peer", "probe"}


def ours(r, name):
    """Whether a row is one of ours: by its family where the CSV has one, else by its name."""
    family = r.get("family")
    return family not in NOT_OURS if family else name in OURS


def weights(r):
    """The bit width of a kbit problem, the format of an AWQ one (the codebook column)."""
    return awq_format(r.get("codebook")) or str(int(r["k_bits"]))


def mhz(r):
    return (float(r["sm_mhz_before"]) + float(r["sm_mhz_after"])) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--chosen-pct", type=float, default=3.0)
    ap.add_argument("--best-pct", type=float, default=5.0)
    a = ap.parse_args()
    rows, failed, mine = {}, [], set()
    with open(os.path.join(a.run, "results.csv"), newline="") as f:
        for r in csv.DictReader(f):
            key = (r["shape"], int(r["M"]), weights(r), r["dtype"], r.get("pdl", "0"))
            name = r["variant"].split(" ")[0]
            if r["check"] == "fail" or r["error"]:
                if ours(r, name):
                    failed.append((key, name))
                continue
            if r["median_us"] and float(r["median_us"]) > 0:
                rows[key + (name,)] = r
                if ours(r, name):
                    mine.add(key + (name,))
    autos = {k[:5]: r for k, r in rows.items() if k[5] == "auto"}
    if not autos:
        sys.exit(f"auto_check: {a.run} has no auto row that passed")
    off_chosen, off_best, missing = [], [], []
    for key, r in sorted(autos.items()):
        t = float(r["median_us"])
        m = re.match(r"auto -> ([A-Za-z0-9_]+)", r["config"])
        chosen = rows.get(key + (m.group(1),)) if m else None
        if chosen is None:
            missing.append((key, m.group(1) if m else f"config {r['config'][:40]!r}"))
        else:
            rel = t / float(chosen["median_us"]) - 1
            if abs(rel) * 100 > a.chosen_pct:
                off_chosen.append((key, m.group(1), t, float(chosen["median_us"]), rel, mhz(r),
                                   mhz(chosen)))
        best = min((x for k, x in rows.items() if k[:5] == key and k in mine),
                   key=lambda x: float(x["median_us"]))
        rel = t / float(best["median_us"]) - 1
        if rel * 100 > a.best_pct:
            off_best.append((key, best["variant"], t, float(best["median_us"]), rel, mhz(r), mhz(best)))
    try:
        with open(os.path.join(a.run, "run.json")) as f:
            gpu = json.load(f).get("device", {}).get("name") or "an unknown GPU"
    except (OSError, ValueError, AttributeError):
        gpu = "an unknown GPU (no readable run.json)"
    print(f"{len(autos)} problems with an auto row, timed on {gpu}")
    for (shape, M, k, dt, pdl), name in failed:
        print(f"  FAILED {name} at {shape} M={M} K={k} {dt}{' PDL' if pdl == '1' else ''}")
    for (shape, M, k, dt, pdl), name in missing:
        print(f"  {shape} M={M} K={k} {dt}: auto chose {name}, which has no passing row in this run")
    for title, items, pct in (("its chosen variant's row", off_chosen, a.chosen_pct),
                              ("the best row of ours", off_best, a.best_pct)):
        print(f"auto beyond {pct:g}% of {title}: {len(items)}")
        for (shape, M, k, dt, pdl), v, t, u, rel, f1, f2 in items:
            print(f"  {shape:22s} M={M:<5d} K={k} {dt}{' PDL' if pdl == '1' else ''}: auto {t:9.2f} us "
                  f"at {f1:6.0f} MHz, {v} {u:9.2f} us at {f2:6.0f} MHz ({100 * rel:+.1f}%)")
    return 1 if off_chosen or off_best or missing or failed else 0

if __name__ == "__main__":
    sys.exit(main())
