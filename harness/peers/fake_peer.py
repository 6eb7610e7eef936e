"""Peers for the tests only: no torch, no GPU (enabled by "test_peers": true in the problems
JSON; their names are unknown otherwise).

* fake_ok: computes C on a small surrogate of the problem (N <= 64, K_dim <= 256, the checked
  rows) in Python and rounds it to the output type: its check passes.
* fake_zero: writes zeros: its check must FAIL (the check catches an output that computes
  nothing). K = 4 only, so a K = 2 problem is skipped with a reason.
* fake_raises: raises: its row gets check = fail and the error, and the run goes on.

Timings are synthetic (1.25 x the floor); the rows say so in their config column.
"""

from __future__ import annotations

import math
import random
import struct

from harness.peers.check import check_rows_py, data_seed, gemm_bound, sample_rows

SURROGATE_N = 64
SURROGATE_K = 256


def round_to(dtype: str, x: float) -> float:
    """Round a float to fp16 or bf16 (nearest even), in plain Python."""
    if dtype == "fp16":
        try:
            return struct.unpack("<e", struct.pack("<e", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    if (bits & 0x7F800000) == 0x7F800000:
        return x
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


class FakePeer:
    package = "test"
    dtypes = ["fp16", "bf16"]
    moe = False
    bits_per_weight = 4.0

    def __init__(self, kind: str):
        assert kind in ("ok", "zero", "raises")
        self.kind = kind
        self.name = f"fake_{kind}"
        self.k_bits = [4] if kind == "zero" else [2, 3, 4, 5]
        self.description = {
            "ok": "test peer: exact result rounded to the output type (passes its check)",
            "zero": "test peer: writes zeros (fails its check)",
            "raises": "test peer: raises an error",
        }[kind]

    def availability(self):
        return None, None

    def unsupported_reason(self, p):
        if p.k_bits not in self.k_bits:
            return f"k_bits not {self.k_bits[0]}" if len(self.k_bits) == 1 else "k_bits not supported"
        if p.moe:
            return "MoE not wired for this peer"
        return None

    def compile_jobs(self, problems, ctx):
        return []

    def release(self):
        pass

    def run(self, p, ctx):
        if self.kind == "raises":
            raise RuntimeError("fake_raises: a deliberate failure (tests)")
        n, k = min(p.N, SURROGATE_N), min(p.K_dim, SURROGATE_K)
        rng = random.Random(data_seed(ctx.check_cfg.seed, p.shape, "fake", p.N, p.K_dim))
        # "Dequantized" weights: multiples of 1/8 (exact in both dtypes).
        W = [[round(rng.gauss(0.0, 1.0) * 8) / 8 for _ in range(k)] for _ in range(n)]
        rows = sample_rows(p.M, ctx.check_cfg.max_rows)
        arng = random.Random(data_seed(ctx.check_cfg.seed, p.shape, "fakeA", p.M, p.dtype))
        A = {}
        for m in range(p.M):
            vals = [round_to(p.dtype, arng.gauss(0.0, 1.0)) for _ in range(k)]
            if m in rows:
                A[m] = vals
        ref, dot, asum, rng_, got = [], [], [], [], []
        for m in rows:
            a = A[m]
            r_row, d_row, g_row, pr_row = [], [], [], []
            for w in W:
                c = 0.0
                s = 0.0
                pmax = pmin = 0.0
                for j in range(k):
                    c += a[j] * w[j]
                    s += abs(a[j] * w[j])
                    if j % 32 == 31 or j == k - 1:
                        pmax, pmin = max(pmax, c), min(pmin, c)
                r_row.append(c)
                d_row.append(s)
                pr_row.append(pmax - pmin)
                g_row.append(round_to(p.dtype, c) if self.kind == "ok" else 0.0)
            ref.append(r_row)
            dot.append(d_row)
            asum.append(sum(abs(x) for x in a))
            rng_.append(pr_row)
            got.append(g_row)
        res = None
        if ctx.check_cfg.enabled:
            res = check_rows_py(gemm_bound(p.dtype, k), rows, ref, dot, asum, rng_, got)
        median = 1.25 * p.floor_us if p.floor_us > 0 else 10.0
        return {
            "check": res,
            "median_us": median,
            "p10_us": 0.98 * median,
            "p90_us": 1.02 * median,
            "samples": 10,
            "copies": 1,
            "launches_per_sample": 1,
            "rel_noise": 0.04 / 1.0,
            "sm_mhz_before": 0.0,
            "sm_mhz_after": 0.0,
            "codebook": "fake",
            "config": f"bits/weight=4 test peer, synthetic timing, surrogate {n}x{k}",
        }
