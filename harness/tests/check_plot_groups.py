#!/usr/bin/env python3
"""plot.py's figure sets on the fixture run: the rows of AWQ problems (cuBLAS on them included)
form sets of their own, never mixed with the kbit rows of the same shape, M and K. Titles name the
GPU; --latest takes the newest run of each experiment on each GPU (fixtures/gpus/).

    check_plot_groups.py HARNESS_DIR RUN_DIR
"""
import os
import sys


def main():
    sys.path.insert(0, sys.argv[1])
    import plot  # noqa: E402 (harness/plot.py, under the Python that imports matplotlib)

    rows = plot.timed(plot.load_rows(sys.argv[2]))
    g = plot.groups(rows)
    bad = []
    kbit, awq = ("kbit", 4, "fp16", "cold"), ("awq_g128", 4, "fp16", "cold")
    if sorted(g) != sorted([kbit, awq]):
        bad.append(f"figure sets {sorted(g)}, expected {[kbit, awq]}")
    else:
        if any(r["codebook"] != "nf" for r in g[kbit]):
            bad.append("an AWQ row is in the kbit figures")
        if any(r["codebook"] != "awq_g128" for r in g[awq]):
            bad.append("a kbit row is in the AWQ figures")
        if {r["variant"] for r in g[awq]} != {"cublas_fp16", "awq_gemv"}:
            bad.append(f"AWQ figures hold {sorted({r['variant'] for r in g[awq]})}")
        if plot.suffix(awq) != "awq_g128_fp16_cold" or plot.suffix(kbit) != "k4_fp16_cold":
            bad.append(f"suffixes {plot.suffix(kbit)}, {plot.suffix(awq)}")
    if plot.weight_format({"codebook": "awq_g64 peer words"}) != "awq_g64":
        bad.append("a codebook that starts with awq_g64 and a space is not the awq_g64 format")
    if plot.weight_format({"codebook": "humming uint4 g128"}) != "kbit":
        bad.append("a peer's own format is taken for an AWQ one")
    if plot.heading({"experiment": "e", "device": {"name": "NVIDIA H200"}}) != "e on NVIDIA H200":
        bad.append("a figure's title does not name the GPU")
    gpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gpus")
    latest = [os.path.relpath(r, gpus) for r in plot.latest_runs(gpus)]
    want = ["envelope/20260203T000000Z_NVIDIA_H200_abc1234",
            "gemv/20260201T000000Z_NVIDIA_H100_80GB_HBM3_abc1234",
            "gemv/20260202T000000Z_NVIDIA_H200_abc1234"]
    if latest != want:
        bad.append(f"--latest takes {latest}, expected {want}")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
