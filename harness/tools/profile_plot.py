#!/usr/bin/env python3
"""The figure and the table of a `kbit-harness profile` run (docs/harness.md, "Profiling").

    python3 harness/tools/profile_plot.py results/<experiment>/<run>   [--out DIR] [--table]

Per problem (shape, M, weight format, dtype) one panel: a stacked bar per row (ours first, then
the peers), thread-instructions executed a weight split by SASS opcode class (the `inst_w_*`
columns: ncu's per-instruction counts of the source page, classes of sass_mix.py), with each
row's kernel time above its bar. A row of several kernels is drawn from its "(sum)" line. Writes
<run>/figures/profile_inst_per_weight.png; --table prints `row | inst/w | issue | dram | l2 | smem |
tensor | top stall` per problem (what `kbit-harness profile` prints at its end; l2 and smem are "-"
where the run did not measure them, as in runs from before they were recorded).
"""
import argparse
import csv
import math
import os
import sys
from collections import OrderedDict

CLASSES = [  # harness/ncu_csv.cpp opcode_classes(), in order, with the legend's words
    ("mma", "mma (HMMA/HGMMA)"), ("shfl", "shuffle"), ("fp32", "fp32 fma/mul/add"),
    ("shift", "shift / funnel"), ("logic", "logic (LOP3)"), ("int", "int add/mad"),
    ("smem", "shared ld/st"), ("gload", "global loads"), ("gstore", "global stores / atomics"),
    ("cvt", "cvt / mov / half math"), ("sync", "barriers / sync"), ("branch", "branch / compare"),
    ("other", "other"),
]  # fmt: skip


def fnum(v):
    try:
        x = float(v)
        return x if math.isfinite(x) else 0.0
    except (TypeError, ValueError):
        return 0.0


def pct(v):
    """A percentage column, "-" where the field is missing or empty (not measured)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "    -"
    return f"{x:4.0f}%" if math.isfinite(x) else "    -"


def load(run_dir):
    """One line per (problem, row): its "(sum)" line where it has several kernels, else its only
    kernel's; grouped by problem in file order."""
    with open(os.path.join(run_dir, "profile.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    problems = OrderedDict()
    for r in rows:
        single = r["kernels"] in ("0", "1")
        if not (single or r["kernel"] == "(sum)"):
            continue
        fmt = "K=" + r["k_bits"] if r["format"] == "kbit" else r["format"]
        key = f'{r["shape"]} M={r["M"]} {fmt} {r["dtype"]}'
        problems.setdefault(key, []).append(r)
    for key in problems:  # ours first, then the peers (stable)
        problems[key].sort(key=lambda r: r["family"] == "peer")
    return problems


def table(problems, out=sys.stdout):
    for key, rows in problems.items():
        print(f"\n{key}", file=out)
        print(f'{"row":22s} | {"inst/w":>7s} | {"issue":>5s} | {"dram":>5s} | {"l2":>5s} | {"smem":>5s} | '
              f'{"tensor":>6s} | top stall', file=out)  # fmt: skip
        for r in rows:
            stall = f'{r["stall1"]} {100 * fnum(r["stall1_share"]):.0f}%' if r["stall1"] else ""
            print(
                f'{r["row"]:22s} | {fnum(r["inst_per_weight"]):7.2f} | {fnum(r["issue_active_pct"]):4.0f}% | '
                f'{fnum(r["dram_pct"]):4.0f}% | {pct(r.get("l2_pct"))} | {pct(r.get("smem_pct"))} | '
                f'{fnum(r["tensor_pct"]):5.0f}% | {stall}'
                + (f'  ({r["error"]})' if r["error"] else ""),
                file=out,
            )


def figure(problems, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(problems)
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    height = 4.6 * nrows + 1.4  # the legend's rows below the panels, the title above
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, height), squeeze=False)
    tab = plt.get_cmap("tab20").colors
    colors = tab[::2] + tab[1::2]  # the ten strong colors first
    for ax, (key, rows) in zip(axes.flat, problems.items()):
        names = [r["row"] for r in rows]
        bottom = [0.0] * len(rows)
        for ci, (cls, label) in enumerate(CLASSES):
            vals = [fnum(r.get("inst_w_" + cls)) for r in rows]
            if not any(vals):
                continue
            ax.bar(range(len(rows)), vals, bottom=bottom, color=colors[ci % len(colors)], label=label,
                   edgecolor="white", linewidth=0.4)  # fmt: skip
            bottom = [b + v for b, v in zip(bottom, vals)]
        for i, r in enumerate(rows):
            total = fnum(r["inst_per_weight"])
            if not any(fnum(r.get("inst_w_" + c)) for c, _ in CLASSES):  # no source page: one bar
                ax.bar(i, total, color="lightgray", edgecolor="gray", hatch="//")
            top = max(total, bottom[i])
            ax.text(i, top, f'{total:.2f}\n{fnum(r["time_us"]):.1f} us', ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(
            [nm + (" (peer)" if r["family"] == "peer" else "") for nm, r in zip(names, rows)],
            rotation=25, ha="right", fontsize=8,
        )  # fmt: skip
        ax.set_title(key, fontsize=9)
        ax.set_ylabel("thread-instructions a weight")
        ax.margins(y=0.18)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(7, len(labels)), fontsize=8)
    fig.suptitle("Instructions executed a weight by SASS opcode class (Nsight Compute), kernel time above", fontsize=10)
    # Fixed margins (inches): rotated row names and the legend below, the title above.
    fig.subplots_adjust(left=0.7 / (5.2 * cols), right=1 - 0.2 / (5.2 * cols), bottom=2.0 / height,
                        top=1 - 0.6 / height, wspace=0.28, hspace=1.2 / 4.6)  # fmt: skip
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--out", help="folder for the figure (default: <run>/figures)")
    ap.add_argument("--table", action="store_true", help="print the table too")
    a = ap.parse_args(argv)
    problems = load(a.run_dir)
    if not problems:
        print(f"profile_plot.py: no rows in {a.run_dir}/profile.csv", file=sys.stderr)
        return 1
    if a.table:
        table(problems)
    path = os.path.join(a.out or os.path.join(a.run_dir, "figures"), "profile_inst_per_weight.png")
    figure(problems, path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
