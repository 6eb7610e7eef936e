#!/usr/bin/env python3
"""Summarizes ncu's source page (SASS, CSV) of one kernel: the instructions with the most
warp-stall samples, and the samples summed by opcode and by stall reason.

    python3 harness/tools/ncu_source_top.py prof.csv [--top 40]
"""
import argparse
import collections
import csv
import re
import sys


def number(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        lines = [l for l in f if l.strip()]
    start = next(i for i, l in enumerate(lines) if "Source" in l and "Address" in l)
    rows = list(csv.DictReader(lines[start:]))
    cols = list(rows[0].keys())
    print("columns:", " | ".join(cols))
    total_col = next(c for c in cols if "Sampling (All" in c)
    reason_cols = [c for c in cols if c.startswith("stall_") or "Stall" in c and c != total_col]
    total = sum(number(r[total_col]) for r in rows) or 1.0
    print(f"\n{total:.0f} samples in {total_col}; top {args.top} instructions:")
    top = sorted(rows, key=lambda r: -number(r[total_col]))[: args.top]
    for r in top:
        print(f"{number(r[total_col]) / total * 100:6.2f}%  {r.get('Address', ''):>8}  {r['Source'][:90]}")
    by_op = collections.Counter()
    for r in rows:
        m = re.match(r"\s*(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", r["Source"])
        by_op[m.group(1) if m else "?"] += number(r[total_col])
    print("\nby opcode:")
    for op, v in by_op.most_common(20):
        print(f"{v / total * 100:6.2f}%  {op}")
    if reason_cols:
        print("\nby column:")
        for c in reason_cols:
            v = sum(number(r[c]) for r in rows)
            if v:
                print(f"{v / total * 100:7.2f}%  {c}")


if __name__ == "__main__":
    sys.exit(main())
