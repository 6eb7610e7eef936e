#!/usr/bin/env python3
"""Regenerate every figure of a kbit-harness run from its results.csv (no GPU needed).

    python3 harness/plot.py results/<experiment>/<run>          # one run
    python3 harness/plot.py --latest results                     # newest run of every experiment
                                                                 # on every GPU

Figures land in <run>/figures/ (or --out). One function per figure; labels come from the
variant names in the CSV and the registry rows recorded in run.json; every title names the GPU the
run was timed on (run.json's device.name).
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools"))
from weight_format import weight_format  # noqa: E402


NUMERIC = {"M", "N", "K_dim", "k_bits", "median_us", "p10_us", "p90_us", "samples", "gb_per_s", "tflops",
           "floor_us", "frac_of_floor", "speedup_vs_baseline", "max_err_over_bound"}


def load_rows(run_dir):
    rows = []
    with open(os.path.join(run_dir, "results.csv"), newline="") as f:
        for r in csv.DictReader(f):
            for k in NUMERIC:
                if k in r:
                    try:
                        r[k] = float(r[k])
                    except ValueError:
                        r[k] = float("nan")
            if r.get("pdl") == "1":  # timed behind its own previous launch: its own series
                r["variant"] += " (PDL)"
            rows.append(r)
    return rows


def load_run(run_dir):
    path = os.path.join(run_dir, "run.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def heading(run):
    """The experiment and the GPU its rows were timed on: how every figure's title starts."""
    gpu = (run.get("device") or {}).get("name")
    return f"{run.get('experiment', '')} on {gpu}" if gpu else run.get("experiment", "")


def timed(rows):
    return [r for r in rows if r["median_us"] > 0 and math.isfinite(r["median_us"])]


def groups(rows):
    """(format, k_bits, dtype, l2) -> rows: each combination gets its own set of figures, so that
    the rows of an AWQ problem (cuBLAS on it included) never share a figure with a kbit one."""
    g = defaultdict(list)
    for r in rows:
        g[(weight_format(r), int(r["k_bits"]), r["dtype"], r.get("l2", ""))].append(r)
    return g


def suffix(key):
    fmt, k, dtype, l2 = key
    head = f"k{k}" if fmt == "kbit" else fmt
    return f"{head}_{dtype}" + (f"_{l2}" if l2 else "")


def grid(n):
    cols = min(4, max(1, n))
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def variant_order(rows, run):
    names = [n for v in run.get("variants", []) for n in (v["name"], v["name"] + " (PDL)")]
    seen = [r["variant"] for r in rows]
    return [n for n in names if n in seen] + sorted(set(seen) - set(names))


def by_shape(rows):
    shapes = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    return shapes


def line_style(rows, variant):
    """Peers (family "peer": public kernels run beside ours, docs/peers.md) are drawn dashed with
    hollow square markers, so a figure tells our rows from theirs at a glance."""
    fam = next((r.get("family", "") for r in rows if r["variant"] == variant), "")
    if fam == "peer":
        return dict(ls="--", marker="s", ms=4, mfc="none")
    return dict(marker="o", ms=3)


def series(rows, shape, variant, y):
    pts = sorted((r["M"], r[y]) for r in rows if r["shape"] == shape and r["variant"] == variant)
    return [p[0] for p in pts], [p[1] for p in pts]


def write_palette_png(png_bytes, path):
    """Stores a figure as an 8-bit palette PNG: the plots hold ~1,500 colours (antialiased edges),
    so 256 look the same at a third of the bytes, which keeps the tracked results/ small enough
    to travel to the GPU machine with the working tree."""
    from PIL import Image  # matplotlib's own dependency

    with Image.open(io.BytesIO(png_bytes)) as im:
        q = im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        q.save(path, optimize=True)


def save(fig, out, name, key):
    path = os.path.join(out, f"{name}_{suffix(key)}.png")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    write_palette_png(buf.getvalue(), path)
    return path


def baseline_of(run):
    """The baseline variant: the harness lists it first among run.json's variants."""
    variants = run.get("variants") or [{}]
    return variants[0].get("name", "")


def plot_speedup(rows, run, key, out):
    """Speedup vs the baseline, per shape, against M."""
    baseline = baseline_of(run)
    variants = [v for v in variant_order(rows, run) if v != baseline]
    if not variants:
        return None
    shapes = by_shape(rows)
    fig, axes = grid(len(shapes))
    for ax, shape in zip(axes, shapes):
        for v in variants:
            x, y = series(rows, shape, v, "speedup_vs_baseline")
            if x:
                ax.plot(x, y, label=v, **line_style(rows, v))
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_title(shape, fontsize=9)
        ax.set_xlabel("M")
        ax.set_ylabel(f"speedup vs {baseline}")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{heading(run)}: speedup vs {baseline} ({suffix(key)})")
    return save(fig, out, "speedup", key)


def moe_top_k(run):
    """{layer name: top_k} of the run's MoE layers, from the config text run.json keeps."""
    text = (run.get("config") or {}).get("text", "")
    if "moe" not in text:
        return {}
    try:
        import tomllib
    except ImportError:  # Python < 3.11: rows on the x axis instead of tokens
        return {}
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    return {m["name"]: int(m["top_k"]) for m in cfg.get("moe", []) if "name" in m and "top_k" in m}


def plot_time_vs_m(rows, run, key, out):
    """Median time against M per shape, every variant and the floor (the crossover picture). MoE
    layers are drawn against tokens per layer (M / top_k, M being all experts' rows)."""
    shapes = by_shape(rows)
    top_k = moe_top_k(run)
    fig, axes = grid(len(shapes))
    for ax, shape in zip(axes, shapes):
        div = top_k.get(shape, 1)
        for v in variant_order(rows, run):
            x, y = series(rows, shape, v, "median_us")
            if x:
                ax.plot([m / div for m in x], y, label=v, **line_style(rows, v))
        fx = sorted({r["M"] for r in rows if r["shape"] == shape})
        fy = [next(r["floor_us"] for r in rows if r["shape"] == shape and r["M"] == m) for m in fx]
        ax.plot([m / div for m in fx], fy, color="black", ls=":", label="floor")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(shape, fontsize=9)
        ax.set_xlabel(f"tokens (M / top-{div})" if shape in top_k else "M")
        ax.set_ylabel("median us")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{heading(run)}: time vs M ({suffix(key)})")
    return save(fig, out, "time_vs_m", key)


def plot_roofline(rows, run, key, out):
    """Achieved TFLOP/s against arithmetic intensity, under the measured roofs; and the
    fraction of the floor each variant reaches."""
    ceil = run.get("ceilings", {})
    bw = ceil.get("copy_gb_per_s", 0) * 1e9
    peak = ceil.get("fp16_tflops", 0)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    variants = variant_order(rows, run)
    for v in variants:
        rs = [r for r in rows if r["variant"] == v]
        ai = [r["tflops"] * 1e12 / (r["gb_per_s"] * 1e9) for r in rs if r["gb_per_s"] > 0]
        tf = [r["tflops"] for r in rs if r["gb_per_s"] > 0]
        mk = "s" if line_style(rows, v).get("ls") == "--" else "o"
        ax.scatter(ai, tf, s=12, marker=mk, label=v)
        ax2.scatter([r["M"] for r in rs], [r["frac_of_floor"] for r in rs], s=12, marker=mk, label=v)
    if bw > 0 and peak > 0:
        xs = [0.1 * 1.5 ** i for i in range(40)]
        ax.plot(xs, [min(peak, bw * x / 1e12) for x in xs], color="black", lw=1, label="roof (measured)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flops / compressed byte")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("roofline view")
    ax.legend(fontsize=7)
    ax2.set_xscale("log", base=2)
    ax2.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax2.set_xlabel("M")
    ax2.set_ylabel("fraction of the floor (floor / time)")
    ax2.set_title("fraction of the floor, every shape")
    fig.suptitle(f"{heading(run)}: roofline ({suffix(key)})")
    return save(fig, out, "roofline", key)


def plot_check_margin(rows, run, key, out):
    """max(|err| / bound) per problem: every point must sit below 1."""
    fig, ax = plt.subplots(figsize=(8, 4))
    variants = variant_order(rows, run)
    for i, v in enumerate(variants):
        rs = [r for r in rows if r["variant"] == v and r["check"] in ("pass", "fail")]
        ys = [max(r["max_err_over_bound"], 1e-6) for r in rs]
        xs = [i + (j % 9 - 4) * 0.04 for j in range(len(rs))]
        colors = ["tab:red" if r["check"] == "fail" else "tab:blue" for r in rs]
        ax.scatter(xs, ys, s=10, c=colors)
    ax.axhline(1.0, color="red", lw=1, ls="--", label="bound")
    ax.set_yscale("log")
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels(variants, rotation=20, fontsize=8)
    ax.set_ylabel("max |err| / bound")
    ax.set_title(f"{heading(run)}: check margin ({suffix(key)})")
    return save(fig, out, "check_margin", key)


def plot_envelope(rows, run, key, out):
    """The envelope: auto (our one entry point) against every peer of this K and the floor, as
    speedup over the baseline per shape against M. Only for runs with an auto row."""
    base = baseline_of(run)
    ok = [r for r in rows if r["check"] != "fail"]  # passed, or run without a check
    bt = {(r["shape"], r["M"]): r["median_us"] for r in ok if r["variant"] == base}
    if not bt or not any(r["variant"] == "auto" for r in ok):
        return None
    peers = [v for v in variant_order(ok, run) if any(r["variant"] == v and r.get("family") == "peer" for r in ok)]
    pretty = base.replace("cublas", "cuBLAS").replace("_", " ")

    def pts(shape, variant, col):  # (M, baseline time / col) where both are finite and positive
        rs = [r for r in ok if r["shape"] == shape and r["variant"] == variant and (shape, r["M"]) in bt]
        p = sorted((r["M"], bt[(shape, r["M"])] / r[col]) for r in rs if math.isfinite(r[col]) and r[col] > 0)
        return [m for m, _ in p], [y for _, y in p]

    shapes = by_shape(ok)
    fig, axes = grid(len(shapes))
    ms = sorted({r["M"] for r in ok})
    for ax, shape in zip(axes, shapes):
        ax.plot(*pts(shape, "auto", "median_us"), color="C0", lw=2.6, marker="o", ms=4, zorder=3,
                label="auto (ours, best per problem)")
        for i, v in enumerate(peers):
            x, y = pts(shape, v, "median_us")
            if x:
                ax.plot(x, y, label=v, color=f"C{i + 1}", **line_style(ok, v))
        ax.plot(*pts(shape, "auto", "floor_us"), color="gray", ls="--", lw=1.2, label="limit (floor)")
        ax.axhline(1.0, color="black", lw=0.8, ls=":", label=f"{pretty} (= 1)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ms)
        ax.set_xticklabels([f"{m:g}" for m in ms], fontsize=7, rotation=45)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=2, subs=(1.0, 1.5)))
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.grid(True, which="major", lw=0.3, alpha=0.5)
        ax.set_title(shape, fontsize=9)
        ax.set_xlabel("M (rows of A)")
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel(f"speedup over {pretty} (x)")
    axes[min(len(axes), 4) - 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"{heading(run)}: auto vs peers and the floor, speedup over {pretty} ({suffix(key)})")
    return save(fig, out, "envelope", key)


FIGURES = [plot_speedup, plot_time_vs_m, plot_roofline, plot_check_margin, plot_envelope]


def plot_run(run_dir, out=None):
    rows = timed(load_rows(run_dir))
    run = load_run(run_dir)
    out = out or os.path.join(run_dir, "figures")
    os.makedirs(out, exist_ok=True)
    written = []
    for key, rs in sorted(groups(rows).items()):
        for fig in FIGURES:
            p = fig(rs, run, key, out)
            if p:
                written.append(p)
    return written


def latest_runs(root):
    """The newest run (by folder name: its UTC start) of every experiment on every GPU under root."""
    runs = []
    for exp in sorted(os.listdir(root)):
        d = os.path.join(root, exp)
        if not os.path.isdir(d):
            continue
        newest = {}  # GPU -> its newest run
        for c in sorted(os.listdir(d)):
            if os.path.exists(os.path.join(d, c, "results.csv")):
                newest[(load_run(os.path.join(d, c)).get("device") or {}).get("name", "")] = \
                    os.path.join(d, c)
        runs += [newest[g] for g in sorted(newest)]
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a run directory, or with --latest the results root")
    ap.add_argument("--latest", action="store_true", help="plot the newest run of every experiment on every GPU under RUN")
    ap.add_argument("--out", help="output directory (default: <run>/figures)")
    a = ap.parse_args()
    runs = latest_runs(a.run) if a.latest else [a.run]
    if not runs:
        print(f"plot.py: no runs under {a.run}", file=sys.stderr)
        return 1
    for r in runs:
        if not os.path.exists(os.path.join(r, "results.csv")):
            print(f"plot.py: {r} has no results.csv", file=sys.stderr)
            return 1
        for p in plot_run(r, a.out):
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
