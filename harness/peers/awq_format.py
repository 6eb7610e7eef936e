"""The AWQ int4 format of docs/awq_format.md in Python: the quantizer, the packing and the
dequantization, for the AWQ peer (humming_awq_peer.py) and the parity script (awq_parity.py).

Two ports of the same steps:

* `quantize_py`: plain Python, one value at a time, float32 emulated with `struct` (each
  float32 operation is done in double and rounded once to float32, which is the correctly
  rounded float32 result for +, -, *, / because double has more than 2 x 24 + 2 bits). The CPU
  test checks it against the golden words of docs/awq_format.md; no numpy, no torch.
* `quantize_torch`: the same steps on whole tensors (the GPU), checked against `quantize_py`
  where torch is importable.

Both follow the spec's order: min and max per (group, column); s32 = max(max - min, 1e-5f) /
15 in float32; the scale rounded to fp16; zero = clamp(round(-min / s), 0, 15) and q =
clamp(round(x / s) + zero, 0, 15) with the fp16-rounded s, round half to even. Nothing here
imports torch at module level.
"""

from __future__ import annotations

import math
import struct

# Nibble position i (bits 4i..4i+3) holds column 8j + ORDER[i]; column 8j + c sits at nibble
# position REVERSE[c] (docs/awq_format.md, "Packing").
ORDER = (0, 2, 4, 6, 1, 3, 5, 7)
REVERSE = (0, 4, 1, 5, 2, 6, 3, 7)
GROUPS = (32, 64, 128)
MAX_Q = 15


class AwqFormatError(ValueError):
    """A shape, value or scale that the format refuses (the message names it)."""


def check_shape(k_in: int, n_out: int, group: int) -> None:
    """docs/awq_format.md's shape rules, with reference/awq.cpp's messages."""
    if n_out <= 0 or n_out % 8:
        raise AwqFormatError(f"N_out = {n_out} must be a positive multiple of 8")
    if group not in GROUPS:
        raise AwqFormatError(f"group size {group} is not one of 32, 64, 128")
    if k_in <= 0 or k_in % group:
        raise AwqFormatError(f"K_in = {k_in} must be a positive multiple of the group size {group}")


# ---------------------------------------------------------------------------------------------
# Plain Python

_F32_1E5 = struct.unpack("<f", struct.pack("<f", 1e-5))[0]


def f32(x: float) -> float:
    """x rounded to float32 (to nearest even), as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def half_bits(x: float) -> int:
    """The fp16 bit pattern of x, rounded to nearest even; OverflowError past the fp16 range."""
    return struct.unpack("<H", struct.pack("<e", x))[0]


def half_value(bits: int) -> float:
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def to_int32(u: int) -> int:
    """A 32-bit pattern as the int32 it is (a top nibble of 8 or more is negative)."""
    u &= 0xFFFFFFFF
    return u - (1 << 32) if u >= (1 << 31) else u


def pack_nibbles(v) -> int:
    """Eight 4-bit values indexed by column (v[c] belongs to column 8j + c) as one int32."""
    word = 0
    for c, x in enumerate(v):
        if not 0 <= x <= MAX_Q:
            raise AwqFormatError(f"value {x} of column {c} does not fit in 4 bits")
        word |= x << (4 * REVERSE[c])
    return to_int32(word)


def unpack_nibbles(word: int) -> list:
    return [(word >> (4 * REVERSE[c])) & 0xF for c in range(8)]


def quantize_py(w, n: int, k_dim: int, group: int = 128):
    """w: n x k_dim values (a list of rows, or a flat row-major list) in the kbit orientation
    W[n][k], each exactly a float32. Returns (qweight, qzeros, scales): flat row-major lists of
    int32 [k_dim][n/8], int32 [k_dim/group][n/8] and fp16 bit patterns [k_dim/group][n]."""
    check_shape(k_dim, n, group)
    flat = [x for row in w for x in row] if w and isinstance(w[0], (list, tuple)) else list(w)
    if len(flat) != n * k_dim:
        raise AwqFormatError(f"the weight has {len(flat)} values; N x K_dim = {n} x {k_dim} needs {n * k_dim}")
    for i, x in enumerate(flat):
        if not math.isfinite(x):
            raise AwqFormatError(f"w_kbit[n = {i // k_dim}][k = {i % k_dim}] is {'nan' if x != x else 'inf'}")
    groups = k_dim // group
    q = [[0] * n for _ in range(k_dim)]  # AWQ orientation [k][n]
    zeros = [[0] * n for _ in range(groups)]
    scales = [[0] * n for _ in range(groups)]
    for c in range(n):
        for g in range(groups):
            xs = flat[c * k_dim + g * group : c * k_dim + (g + 1) * group]
            lo, hi = min(xs), max(xs)
            s32 = f32(max(f32(hi - lo), _F32_1E5) / 15.0)
            try:
                bits = half_bits(s32)
            except OverflowError:
                bits = 0x7C00
            if bits & 0x7FFF == 0x7C00:
                raise AwqFormatError(
                    f"the scale of group {g} (k {g * group}..{(g + 1) * group - 1}), column {c} "
                    f"overflows fp16: {s32:g} (range {hi - lo:g})"
                )
            s = half_value(bits)
            zero = min(max(round(f32(-lo / s)), 0), MAX_Q)
            scales[g][c] = bits
            zeros[g][c] = zero
            for j, x in enumerate(xs):
                q[g * group + j][c] = min(max(round(f32(x / s)) + zero, 0), MAX_Q)
    qweight = [pack_nibbles(q[k][8 * j : 8 * j + 8]) for k in range(k_dim) for j in range(n // 8)]
    qzeros = [pack_nibbles(zeros[g][8 * j : 8 * j + 8]) for g in range(groups) for j in range(n // 8)]
    return qweight, qzeros, [b for row in scales for b in row]


def dequantize_py(qweight, qzeros, scales, n: int, k_dim: int, group: int):
    """The spec's dequantization, float32 (exact), in the kbit orientation [n][k_dim]."""
    words = n // 8
    out = [[0.0] * k_dim for _ in range(n)]
    for k in range(k_dim):
        g = k // group
        for j in range(words):
            qs = unpack_nibbles(qweight[k * words + j])
            zs = unpack_nibbles(qzeros[g * words + j])
            for c in range(8):
                col = 8 * j + c
                out[col][k] = float(qs[c] - zs[c]) * half_value(scales[g * n + col])
    return out


# ---------------------------------------------------------------------------------------------
# torch (whole tensors; the GPU)


def _first_index(mask):
    """The multi-index of the first True of `mask` in memory order."""
    flat = int(mask.flatten().nonzero()[0, 0].item())
    idx = []
    for d in reversed(mask.shape):
        idx.append(flat % d)
        flat //= d
    return tuple(reversed(idx))


def _pack_columns(v):
    """v: int tensor [..., rows, n] of 4-bit values (the AWQ orientation) -> int32
    [..., rows, n/8], column 8j + c at nibble position REVERSE[c]."""
    import torch

    v = v.to(torch.int64).reshape(*v.shape[:-1], v.shape[-1] // 8, 8)
    shifts = torch.tensor([4 * r for r in REVERSE], dtype=torch.int64, device=v.device)
    words = (v << shifts).sum(-1)  # the nibbles do not overlap: the sum is the OR
    words = torch.where(words >= 2**31, words - 2**32, words)
    return words.to(torch.int32)


def unpack_columns(words):
    """int32 [..., rows, n/8] -> int32 [..., rows, n] (the value of column 8j + c)."""
    import torch

    shifts = torch.tensor([4 * r for r in REVERSE], dtype=torch.int32, device=words.device)
    v = (words.unsqueeze(-1) >> shifts) & 0xF  # arithmetic shift: the mask drops the sign
    return v.reshape(*words.shape[:-1], words.shape[-1] * 8)


def quantize_torch(W, group: int = 128) -> dict:
    """W: float32 [N, K_dim] (kbit orientation) on any device -> {"qweight": int32 [K, N/8],
    "qzeros": int32 [K/G, N/8], "scales": fp16 [K/G, N]}, word for word with quantize_py and
    reference/awq.cpp. Raises AwqFormatError (before returning anything) on a bad shape, a
    non-finite element or a scale that overflows fp16."""
    import torch

    if W.dim() != 2:
        raise AwqFormatError(f"quantize_torch takes W[N, K_dim]; got {W.dim()} dimensions")
    n, k_dim = W.shape
    check_shape(k_dim, n, group)
    W = W.to(torch.float32)
    bad = ~torch.isfinite(W)
    if bool(bad.any()):
        r, k = _first_index(bad)
        x = float(W[r, k])
        raise AwqFormatError(f"w_kbit[n = {r}][k = {k}] is {'nan' if x != x else 'inf'}")
    x = W.reshape(n, k_dim // group, group)
    lo = x.amin(-1)
    hi = x.amax(-1)
    # Division by a tensor, never by a Python number: torch's CUDA division by a CPU scalar is
    # a multiplication by its reciprocal, which is not the correctly rounded quotient.
    fifteen = torch.full_like(lo, 15.0)
    s32 = torch.clamp(hi - lo, min=_F32_1E5) / fifteen
    scale = s32.to(torch.float16)
    if bool(torch.isinf(scale).any()):
        c, g = _first_index(torch.isinf(scale))
        raise AwqFormatError(
            f"the scale of group {g} (k {g * group}..{(g + 1) * group - 1}), column {c} overflows "
            f"fp16: {float(s32[c, g]):g} (range {float(hi[c, g] - lo[c, g]):g})"
        )
    s = scale.to(torch.float32)
    zero = torch.clamp(torch.round(-lo / s), 0, MAX_Q)
    q = torch.clamp(torch.round(x / s.unsqueeze(-1)) + zero.unsqueeze(-1), 0, MAX_Q)
    del x
    q = q.to(torch.uint8).reshape(n, k_dim)
    return {
        "qweight": _pack_columns(q.t()),  # the AWQ orientation: rows k, columns n
        "qzeros": _pack_columns(zero.to(torch.uint8).t()),
        "scales": scale.t().contiguous(),
    }


def dequantize_rows_torch(qweight, qzeros, scales, group: int, k0: int, k1: int):
    """The spec's dequantization of rows k0..k1-1 of the AWQ weight (AWQ orientation): float32
    [k1 - k0, N], (q - z) * s, exact in float32. qweight int32 [K, N/8], qzeros int32
    [K/G, N/8], scales fp16 [K/G, N] (no expert dimension)."""
    import torch

    q = unpack_columns(qweight[k0:k1])
    g = torch.arange(k0, k1, device=qweight.device) // group
    z = unpack_columns(qzeros).index_select(0, g)
    s = scales.to(torch.float32).index_select(0, g)
    return (q - z).to(torch.float32) * s


def reverse_nibbles_torch(words):
    """Nibble position i <-> 7 - i in every word: a wrong interleave order (the negative
    control of awq_parity.py)."""
    import torch

    w = words.to(torch.int64) & 0xFFFFFFFF
    out = torch.zeros_like(w)
    for i in range(8):
        out |= ((w >> (4 * i)) & 0xF) << (4 * (7 - i))
    out = torch.where(out >= 2**31, out - 2**32, out)
    return out.to(torch.int32)
