"""The problems, their data and the check of a peer's output (docs/peers.md, "The check").

The bound is the one of docs/format.md ("Error budgets, 2. GEMM") with the peer's own
dequantized weights in the place of ours, plus one term for peers that reduce split-K partial
sums in the output type (humming's stream-K). Pure-Python parts (the bound, the row sample, the
element check) need no torch; the GPU reference (`check_torch`) imports torch when called.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import math

# ---------------------------------------------------------------------------------------------
# Problems


@dataclasses.dataclass(frozen=True)
class Problem:
    """One (shape, M, K, dtype) of the run, as the C++ side wrote it."""

    shape: str
    M: int
    N: int
    K_dim: int
    k_bits: int
    dtype: str  # "fp16" | "bf16"
    floor_us: float = 0.0
    baseline_us: float = 0.0
    experts: int = 0
    expert_offsets: tuple = ()
    # The weights' format (harness/weight_format.hpp): "kbit" (K bits and a codebook) or
    # "awq_g32" / "awq_g64" / "awq_g128" (docs/awq_format.md, k_bits 4). A peer runs only on
    # the problems of its own format.
    format: str = "kbit"

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def awq_group(self) -> int:
        """G of an AWQ problem, 0 for kbit."""
        return int(self.format[len("awq_g"):]) if self.format.startswith("awq_g") else 0

    @property
    def active_experts(self) -> int:
        off = self.expert_offsets
        return sum(1 for e in range(len(off) - 1) if off[e + 1] > off[e])

    def expert_of(self, row: int) -> int:
        if not self.moe:
            return 0
        return bisect.bisect_right(self.expert_offsets, row) - 1

    def cost(self):
        """(bytes, flops) of harness/problem.cpp problem_cost: our compressed bytes, so that
        gb_per_s and tflops compare with our rows."""
        experts = self.active_experts if self.moe else 1
        # AWQ per group of G: G nibbles, an fp16 scale and a 4-bit zero.
        G = self.awq_group
        per_weight = 0.5 + 2.5 / G if G else self.k_bits / 8.0 + 1.0 / 32.0
        weight_bytes = experts * float(self.N) * float(self.K_dim) * per_weight
        io = float(self.M) * float(self.K_dim + self.N) * 2.0
        return weight_bytes + io, 2.0 * self.M * self.N * self.K_dim

    def label(self) -> str:
        moe = f" E={self.experts}" if self.moe else ""
        weights = self.format if self.awq_group else f"K={self.k_bits}"  # harness weights_label
        return f"{self.shape} M={self.M} {weights} {self.dtype}{moe}"


def sample_rows(M: int, max_rows: int) -> list:
    """The rows of C that are checked: reference/gemm_ref.cpp sample_rows (first and last)."""
    if M <= max_rows:
        return list(range(M))
    if max_rows <= 1:
        return [0]
    rows = [i * (M - 1) // (max_rows - 1) for i in range(max_rows)]
    out = []
    for r in rows:
        if not out or out[-1] != r:
            out.append(r)
    return out


def data_seed(*parts) -> int:
    """A 63-bit seed from the check seed and a description of the tensor (stable everywhere)."""
    h = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def weight_seed(problem: Problem, seed: int) -> int:
    # The same weights for every peer, dtype and K of a shape: rows compare on equal data.
    return data_seed(seed, problem.shape, "W", problem.experts, problem.N, problem.K_dim)


def activation_seed(problem: Problem, seed: int) -> int:
    return data_seed(seed, problem.shape, "A", problem.M, problem.K_dim, problem.dtype)


# ---------------------------------------------------------------------------------------------
# The bound (docs/format.md, "2. GEMM"), element by element

UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}
_FORMAT = {"fp16": (11, -14), "bf16": (8, -126)}  # significand bits, smallest normal exponent


def gamma_n(n: float, u: float) -> float:
    return n * u / (1.0 - n * u)


@dataclasses.dataclass(frozen=True)
class Bound:
    """|C - C_ref| <= gamma*S*(1+u_out) + eta*sum|A| + ulp_out(|C_ref|) + split*R."""

    dtype: str
    gamma: float
    eta: float
    u_out: float
    split: float  # times R, the range of the prefix sums of the row's products (see below)


def gemm_bound(dtype: str, K_dim: int, extra_additions: int = 0, slices: int = 1) -> Bound:
    """Our bound with the peer's arithmetic: inputs and output in `dtype`, fp32 accumulation.

    * weights: the peer's dequantized weight rounded to `dtype` (a product and at most two
      roundings, as ours): gamma_3(u_in);
    * accumulation: gamma_n(2^-23), n = K_dim + extra_additions + 64 (extra: per-group scale
      steps, cross-warp sums);
    * output: one ulp of |C_ref|;
    * split-K in the output type: a peer that stores up to `slices` partial sums of a tile in
      `dtype` and adds them there (humming's stream-K: TMA reduce-add in fp16/bf16, any order
      after the first slice) rounds each partial and each running sum once; every partial is a
      sum over a contiguous K range, so it is at most R = max - min of the row's prefix sums at
      32-element boundaries, and a running sum of at most `slices` of them is at most
      slices*R: slices*u*R + (slices-2)*(slices-1)*u*R <= slices^2 * u_out * R.
    """
    u = UNIT_ROUNDOFF[dtype]
    g_w = gamma_n(3, u)
    g_acc = gamma_n(K_dim + extra_additions + 64, 2.0**-23)
    eta = 2.0**-19 if dtype == "fp16" else 2.0**-120
    split = 1.01 * slices * slices * u if slices > 1 else 0.0
    return Bound(dtype, g_w + g_acc + g_w * g_acc, eta, u, split)


def ulp(dtype: str, x: float) -> float:
    """reference/error_budget.cpp ulp(): one unit in the last place of |x| in `dtype`."""
    p, emin = _FORMAT[dtype]
    x = abs(x)
    e = math.frexp(x)[1] - 1 if x > 0 else emin
    e = max(e, emin)
    return math.ldexp(1.0, e - p + 1)


def element_bound(b: Bound, abs_dot: float, abs_a_sum: float, c_ref: float, prefix_range: float) -> float:
    return b.gamma * abs_dot * (1.0 + b.u_out) + b.eta * abs_a_sum + ulp(b.dtype, c_ref) + b.split * prefix_range


# ---------------------------------------------------------------------------------------------
# The result of a check


@dataclasses.dataclass
class CheckResult:
    passed: bool = False
    max_err_over_bound: float = 0.0
    violations: int = 0
    checked: int = 0
    nonfinite: int = 0
    first_bad: list = dataclasses.field(default_factory=list)  # (row, col, got, ref, bound)
    rel_fro_err: float = 0.0
    detail: dict = dataclasses.field(default_factory=dict)

    def error_message(self) -> str:
        """The C++ row's error for a failed check (harness/run_experiment.cpp)."""
        if self.passed:
            return ""
        if not self.first_bad:
            return f"{self.violations} of {self.checked} elements outside the bound"
        row, col, got, ref, _ = self.first_bad[0]
        return (
            f"{self.violations} of {self.checked} elements outside the bound; "
            f"first C[{row},{col}] = {got:f} vs {ref:f}"
        )


def check_rows_py(b: Bound, rows, ref, abs_dot, abs_a_sum, prefix_range, got) -> CheckResult:
    """The element check in plain Python: ref/abs_dot/prefix_range/got are lists of rows of N
    values, abs_a_sum one value per row. Every element must be inside its bound, NaN never."""
    r = CheckResult()
    err2 = ref2 = 0.0
    for i, row in enumerate(rows):
        for n, want in enumerate(ref[i]):
            g = got[i][n]
            bound = element_bound(b, abs_dot[i][n], abs_a_sum[i], want, prefix_range[i][n])
            r.checked += 1
            if not math.isfinite(g):
                r.nonfinite += 1
                ratio = math.inf
            else:
                err = abs(g - want)
                ratio = err / bound
                err2 += err * err
            ref2 += want * want
            r.max_err_over_bound = max(r.max_err_over_bound, ratio)
            if not ratio <= 1.0:
                r.violations += 1
                if len(r.first_bad) < 8:
                    r.first_bad.append((row, n, g, want, bound))
    r.rel_fro_err = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)
    r.passed = r.violations == 0 and r.checked > 0
    return r


# ---------------------------------------------------------------------------------------------
# Data and the check on the GPU (torch, imported when called)


def make_weights(problem: Problem, seed: int):
    """W[N, K_dim] (W[E, N, K_dim] for MoE) ~ N(0, 1), float32 on the GPU, seeded."""
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(weight_seed(problem, seed))
    shape = (problem.experts, problem.N, problem.K_dim) if problem.moe else (problem.N, problem.K_dim)
    return torch.randn(shape, generator=g, device="cuda", dtype=torch.float32)


def torch_dtype(dtype: str):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]


def make_activations(problem: Problem, seed: int):
    """A[M, K_dim] ~ N(0, 1) rounded to the problem's dtype (MoE: rows sorted by expert)."""
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(activation_seed(problem, seed))
    a = torch.randn((problem.M, problem.K_dim), generator=g, device="cuda", dtype=torch.float32)
    return a.to(torch_dtype(problem.dtype)).contiguous()


def _ulp_torch(dtype: str, x):
    import torch

    p, emin = _FORMAT[dtype]
    x = x.abs()
    _, e = torch.frexp(x)
    e = torch.where(x > 0, e.to(torch.int64) - 1, torch.full_like(e, emin, dtype=torch.int64))
    e = torch.clamp(e, min=emin)
    return torch.ldexp(torch.ones_like(x), (e - p + 1).to(x.dtype))


def reference_rows(A_rows, deq_chunk, expert: int, K_dim: int, k_chunk: int = 1024):
    """C_ref, S = |A||W|^T, sum|A| and R (range of the prefix sums at 32-element boundaries) for
    a few rows of A (float64 [R, K]) against the peer's dequantized weights, in float64.
    deq_chunk(expert, k0, k1) gives W_deq[:, k0:k1] as float64 [N, k1-k0]."""
    import torch

    R, K = A_rows.shape
    C = S = pmax = pmin = None
    for k0 in range(0, K, k_chunk):
        k1 = min(K, k0 + k_chunk)
        W = deq_chunk(expert, k0, k1)  # [N, kb] float64
        a = A_rows[:, k0:k1]
        s = a.abs() @ W.abs().T
        kb = k1 - k0
        nb = (kb + 31) // 32
        if kb % 32:
            pad = nb * 32 - kb
            a = torch.nn.functional.pad(a, (0, pad))
            W = torch.nn.functional.pad(W, (0, pad))
        parts = torch.einsum("rbk,nbk->rbn", a.view(R, nb, 32), W.view(W.shape[0], nb, 32))
        pref = parts.cumsum(1)
        if C is None:
            zero = torch.zeros((R, W.shape[0]), dtype=torch.float64, device=A_rows.device)
            C, S, pmax, pmin = zero, s, zero.clone(), zero.clone()
        else:
            S = S + s
        pref = pref + C.unsqueeze(1)
        pmax = torch.maximum(pmax, pref.amax(1))
        pmin = torch.minimum(pmin, pref.amin(1))
        C = pref[:, -1]
        del parts, pref, W
    return C, S, A_rows.abs().sum(1), pmax - pmin


def check_torch(problem: Problem, A, C, deq_chunk, max_rows: int, b: Bound) -> CheckResult:
    """Checks `max_rows` rows of the peer's C (first and last included, every column) against
    the float64 reference from the peer's own dequantized weights."""
    import torch

    rows = sample_rows(problem.M, max_rows)
    refs, dots, asums, ranges, gots = [], [], [], [], []
    i = 0
    while i < len(rows):  # rows of one expert together (rows are sorted, so are experts)
        e = problem.expert_of(rows[i])
        j = i
        while j < len(rows) and problem.expert_of(rows[j]) == e:
            j += 1
        idx = torch.tensor(rows[i:j], device=A.device, dtype=torch.int64)
        ref, dot, asum, rng = reference_rows(A.index_select(0, idx).double(), deq_chunk, e, problem.K_dim)
        refs.append(ref)
        dots.append(dot)
        asums.append(asum)
        ranges.append(rng)
        gots.append(C.index_select(0, idx).double())
        i = j
    ref = torch.cat(refs)
    dot = torch.cat(dots)
    asum = torch.cat(asums)
    rng = torch.cat(ranges)
    got = torch.cat(gots)
    bound = (
        b.gamma * dot * (1.0 + b.u_out)
        + b.eta * asum.unsqueeze(1)
        + _ulp_torch(b.dtype, ref)
        + b.split * rng
    )
    finite = torch.isfinite(got)
    err = (got - ref).abs()
    ratio = torch.where(finite, err / bound, torch.full_like(err, math.inf))
    bad = ~(ratio <= 1.0)
    r = CheckResult()
    r.checked = ref.numel()
    r.nonfinite = int((~finite).sum().item())
    r.violations = int(bad.sum().item())
    r.max_err_over_bound = float(ratio.max().item()) if r.checked else 0.0
    err_f = torch.where(finite, err, torch.zeros_like(err))
    ref2 = float((ref * ref).sum().item())
    err2 = float((err_f * err_f).sum().item())
    r.rel_fro_err = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)
    if r.violations:
        flat = bad.flatten().nonzero().flatten()[:8].tolist()
        N = ref.shape[1]
        for f in flat:
            ri, n = divmod(f, N)
            r.first_bad.append(
                (rows[ri], n, float(got[ri, n]), float(ref[ri, n]), float(bound[ri, n]))
            )
    r.passed = r.violations == 0 and r.checked > 0
    # What the bound is made of, for docs and debugging (KBIT_PEERS_DEBUG=1 prints it).
    r.detail = {
        "max_abs_err": float(err_f.max().item()) if r.checked else 0.0,
        "max_abs_ref": float(ref.abs().max().item()) if r.checked else 0.0,
        "rms_ref": math.sqrt(ref2 / max(1, r.checked)),
        "max_gamma_term": float((b.gamma * dot).max().item()) if r.checked else 0.0,
        "max_split_term": float((b.split * rng).max().item()) if r.checked else 0.0,
        "rel_fro_err": r.rel_fro_err,
        "rows": len(rows),
    }
    return r
