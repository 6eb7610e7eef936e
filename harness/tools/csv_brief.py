#!/usr/bin/env python3
"""One line per row of a results.csv: the columns a tuning log needs, and "LOW CLOCK" where the
row was timed below 90% of the run's highest SM clock (clocks.py).

    python3 harness/tools/csv_brief.py results/NAME/RUN/results.csv
"""
import csv
import sys

from clocks import low_clock, lower_clock
from weight_format import awq_format


def main(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    print(f"{'shape':28} {'M':>3} {'K':>8} {'variant':22} {'us':>9} {'floor':>7} "
          f"{'%floor':>7} {'speedup':>7} check  config")
    low = low_clock(rows)
    for i, r in enumerate(rows):
        if r.get("pdl") == "1":
            r["variant"] += " (PDL)"
        frac = float(r["frac_of_floor"] or 0) * 100
        k = awq_format(r.get("codebook")) or r["k_bits"]  # an AWQ problem's K column: its format
        print(f"{r['shape']:28} {r['M']:>3} {k:>8} {r['variant']:22} "
              f"{float(r['median_us'] or 0):9.2f} {float(r['floor_us'] or 0):7.2f} "
              f"{frac:6.1f}% {float(r['speedup_vs_baseline'] or 0):7.2f} {r['check']:6} "
              f"{r['config']}{(' ERROR ' + r['error']) if r['error'] else ''}"
              f"{f' LOW CLOCK {lower_clock(r):.0f} MHz' if i in low else ''}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: csv_brief.py results.csv")
    main(sys.argv[1])
