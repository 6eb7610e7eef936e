#!/usr/bin/env python3
"""Each row's cost per launch and per k from a run that times one layer width over several k_dim:
a least-squares line of median_us over k_dim / PER for every (M, N, K, dtype, variant, PDL) group
of checked or probe rows (a peer's and cuBLAS's rows included), its slope the cost per PER of k
(the weight stream and the decode) and its intercept the cost of a launch (launch, prologue, the
walks' ends). Groups with fewer than two k_dim values in [--k-min, --k-max] are listed unfitted;
a row timed below 90% of the run's highest SM clock (clocks.py) is named after its group's line
(leave its k_dim out with --k-min / --k-max, or re-time it).

    python3 harness/tools/launch_cost.py results/NAME/RUN/results.csv [--k-min 4096]
        [--k-max N] [--per 4096]

experiments/small_m_intercept.toml and small_m_fixed_cost.toml are runs of this kind
(variants/07_fragment_mma/README.md, "Per launch and per k").
"""
import argparse
import csv
import sys
from collections import defaultdict

from clocks import low_clock, lower_clock
from weight_format import awq_format

USED_CHECKS = ("pass", "probe", "skipped")  # rows whose time stands (a failed check's does not)


def fit(points):
    """Least-squares (slope, intercept, largest |residual|) of (x, y) points, two x values at least."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    intercept = my - slope * mx
    worst = max(abs(y - (intercept + slope * x)) for x, y in points)
    return slope, intercept, worst


def groups(rows, k_min, k_max):
    """{(M, N, K, dtype, variant): {k_dim: (us, MHz where the clock was low, else 0)}} of the rows
    that count, k_dim in [k_min, k_max]."""
    out = defaultdict(dict)
    low = low_clock(rows)
    for i, r in enumerate(rows):
        if r.get("check") not in USED_CHECKS or not r.get("median_us") or r.get("error"):
            continue
        k_dim = int(r["K_dim"])
        if k_dim < k_min or (k_max is not None and k_dim > k_max):
            continue
        variant = r["variant"] + (" (PDL)" if r.get("pdl") == "1" else "")
        k = awq_format(r.get("codebook")) or r["k_bits"]
        out[(int(r["M"]), int(r["N"]), k, r["dtype"], variant)][k_dim] = (
            float(r["median_us"]), lower_clock(r) if i in low else 0)
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("--k-min", type=int, default=0, help="smallest k_dim fitted (default: all)")
    p.add_argument("--k-max", type=int, default=None, help="largest k_dim fitted (default: all)")
    p.add_argument("--per", type=int, default=4096, help="k of the slope's unit (default 4096)")
    a = p.parse_args(argv)
    if a.per <= 0:
        sys.exit(f"launch_cost: --per {a.per}: must be a positive k")
    if a.k_max is not None and a.k_max < a.k_min:
        sys.exit(f"launch_cost: --k-max {a.k_max} is below --k-min {a.k_min}")
    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = {"M", "N", "K_dim", "k_bits", "dtype", "variant", "median_us", "check"} - set(
        rows[0].keys() if rows else ())
    if missing:
        sys.exit(f"launch_cost: {a.csv} has no column(s) {', '.join(sorted(missing))}")
    print(f"{'M':>5} {'N':>6} {'K':>8} {'dtype':5} {'variant':28} {'k_dim values':>24} "
          f"{'us / ' + str(a.per) + ' k':>12} {'us / launch':>11} {'max resid':>9}")
    for (m, n, k, dtype, variant), by_k in sorted(groups(rows, a.k_min, a.k_max).items()):
        ks = ",".join(str(x) for x in sorted(by_k))
        head = f"{m:>5} {n:>6} {k:>8} {dtype:5} {variant:28} {ks:>24}"
        if len(by_k) < 2:
            print(f"{head} {'(one k_dim: not fitted)':>34}")
            continue
        slope, intercept, worst = fit([(kd / a.per, us) for kd, (us, _) in by_k.items()])
        low = [f"k_dim {kd} at {mhz:.0f} MHz" for kd, (_, mhz) in sorted(by_k.items()) if mhz]
        print(f"{head} {slope:12.2f} {intercept:11.2f} {worst:9.2f}"
              f"{'  LOW CLOCK: ' + ', '.join(low) if low else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
