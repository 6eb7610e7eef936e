#!/usr/bin/env python3
"""Parity of humming-kernels' AWQ path with our AWQ reference (docs/peers.md, "AWQ parity").

    awq_parity.py DIR                  # humming's GEMM on the dump in DIR against C_ref
    awq_parity.py DIR --swap-nibbles   # negative control: the nibbles of every qweight word
                                       # reversed before loading; must fail
    awq_parity.py DIR --harness EXE [--rows N] [--k-dim K] [--group G]
                                       # (ctest) EXE format --awq --dump DIR first, then the
                                       # check (must pass) and the negative control (must fail)

DIR is what `kbit-harness format --awq --dump DIR` writes: the CPU reference's qweight /
qzeros / scales of a random fp16 weight, a 16-row fp16 activation A, C_ref = A * W_deq in
float64 (reference/awq.hpp awq_gemm_ref), its element-wise bound (docs/format.md, "2. GEMM")
and the prefix-sum ranges R for the bound's split-K term. The tensors go into humming through
its own AWQ schema (HummingLayer(weight_config={"quant_method": "awq", ...}), transform()), the
GEMM runs with the configuration its heuristics choose for M, and every element must satisfy
|C - C_ref| <= bound (+ 1.01 s^2 2^-11 R when that configuration splits K over s CTAs and adds
the partial sums in fp16). Exit 0 pass, 1 fail, 2 a malformed dump or command line, 77
skipped (no torch, no CUDA device or no humming-kernels: one "skipped: ..." line); with
KBIT_REQUIRE_GPU=1 in the environment (ctest --preset gpu) no CUDA device is a failure, exit 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import types

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from harness.peers import awq_format  # noqa: E402
from harness.peers.check import Problem, gemm_bound  # noqa: E402

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_SKIP = 0, 1, 2, 77
_ITEM = {"int32": 4, "fp16": 2, "float64": 8}
_FILES = ("qweight", "qzeros", "scales", "a", "c_ref", "bound", "prefix_range")


class DumpError(Exception):
    """A dump folder that is missing a file or holds one of the wrong size (exit 2)."""


def read_dump(folder: str) -> dict:
    """meta.json and the sizes of its files, checked before anything is loaded."""
    path = os.path.join(folder, "meta.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except OSError as e:
        raise DumpError(f"cannot read '{path}': {e.strerror} (write it with kbit-harness format --awq --dump)") from e
    except json.JSONDecodeError as e:
        raise DumpError(f"'{path}' is not JSON: {e}") from e
    for key in ("M", "N", "K_in", "group", "files"):
        if key not in meta:
            raise DumpError(f"'{path}' has no '{key}'")
    if meta.get("byte_order", "little") != "little" or sys.byteorder != "little":
        raise DumpError(f"the dump is {meta.get('byte_order')}-endian, this host {sys.byteorder}-endian")
    try:
        awq_format.check_shape(meta["K_in"], meta["N"], meta["group"])
    except awq_format.AwqFormatError as e:
        raise DumpError(f"'{path}': {e}") from e
    for name in _FILES:
        spec = meta["files"].get(name)
        if spec is None:
            raise DumpError(f"'{path}' names no '{name}' file")
        file = os.path.join(folder, spec["name"])
        want = math.prod(spec["shape"]) * _ITEM[spec["dtype"]]
        try:
            have = os.path.getsize(file)
        except OSError as e:
            raise DumpError(f"cannot read '{file}': {e.strerror}") from e
        if have != want:
            raise DumpError(f"'{file}' holds {have} bytes; {spec['dtype']} {spec['shape']} needs {want}")
    return meta


def load_tensors(folder: str, meta: dict) -> dict:
    """The dump's files as torch tensors on the current GPU, in their meta.json shapes."""
    import torch

    dtypes = {"int32": torch.int32, "fp16": torch.float16, "float64": torch.float64}
    out = {}
    for name in _FILES:
        spec = meta["files"][name]
        with open(os.path.join(folder, spec["name"]), "rb") as f:
            buf = bytearray(f.read())  # writable: torch.frombuffer shares it
        t = torch.frombuffer(buf, dtype=dtypes[spec["dtype"]]).reshape(spec["shape"])
        out[name] = t.cuda()
    return out


def skip_reason():
    """Why humming cannot run here (torch, a CUDA device of sm_75 or newer, humming-kernels),
    or None; and the package's version."""
    from harness.peers.humming_awq_peer import HummingAwqPeer

    version, why = HummingAwqPeer(128).availability()
    return why, version


def check(t: dict, meta: dict, swap_nibbles: bool, log=print) -> tuple:
    """humming's AWQ GEMM on the dump's tensors against C_ref. Returns (passed, violations,
    elements, worst ratio)."""
    import torch
    from humming.schema.awq import AWQWeightSchema

    from harness.peers.humming_awq_peer import HummingAwqPeer, load_awq_layer
    from harness.peers.humming_peer import gemm, layer_tensors, stream_k_slices

    M, N, K, G = meta["M"], meta["N"], meta["K_in"], meta["group"]
    awq = {"qweight": t["qweight"], "qzeros": t["qzeros"], "scales": t["scales"]}
    if swap_nibbles:
        awq["qweight"] = awq_format.reverse_nibbles_torch(awq["qweight"])
        log("  negative control: the nibbles of every qweight word reversed (a wrong interleave order)")

    # humming's own reading of these tensors (its AWQ conversion, then its dequantize) against
    # the spec's: tells a conversion problem from a kernel problem when the GEMM fails.
    hschema, ht = AWQWeightSchema(bits=4, group_size=G).convert_humming(
        dict(awq), [N], [K], torch.float16, None, torch.cuda.current_device()
    )
    theirs = hschema.dequant_tensors(ht).float()
    ours = awq_format.dequantize_rows_torch(awq["qweight"], awq["qzeros"], awq["scales"], G, 0, K).t()
    differ = int((theirs != ours).sum().item())
    log(
        f"  humming's AWQ conversion + dequantize: "
        + ("equal to docs/awq_format.md's" if differ == 0 else f"DIFFERS from docs/awq_format.md's in {differ}")
        + f" of {N * K} weights"
    )
    del theirs, ours, ht

    layer = load_awq_layer(awq, N, K, G)
    layer.transform()
    peer = HummingAwqPeer(G)
    p = Problem("awq_parity", M, N, K, 4, "fp16", format=f"awq_g{G}")
    ctx = types.SimpleNamespace(timing=types.SimpleNamespace(pdl=False))
    compute, tuning_json, tuning = peer._tuning(layer.humming_config, p, ctx)
    A = t["a"]
    C = torch.full((M, N), float("nan"), dtype=torch.float16, device=A.device)
    gemm(layer.humming_config, layer_tensors(layer), A, C, layer.locks, compute, tuning_json)
    torch.cuda.synchronize()

    slices = stream_k_slices(tuning)
    split = gemm_bound("fp16", K, K // G, slices).split  # 1.01 s^2 2^-11, 0 without stream-K
    log(
        f"  kernel: mma={tuning.get('mma_type')} "
        f"block={'x'.join(str(x) for x in tuning.get('block_shape', ()))} "
        f"stream_k={int(slices > 1)}"
        + (f" (bound + {split:.4g} R: up to {slices} fp16 partial sums)" if slices > 1 else "")
    )
    bound = t["bound"] + split * t["prefix_range"]
    got = C.double()
    err = (got - t["c_ref"]).abs()
    finite = torch.isfinite(got)
    ratio = torch.where(finite, err / bound, torch.full_like(err, math.inf))
    bad = ~(ratio <= 1.0)
    violations = int(bad.sum().item())
    worst = float(ratio.max().item())
    at = divmod(int(ratio.argmax().item()), N)
    log(
        f"  worst |C - C_ref| / bound = {worst:.4g} at C[{at[0]}, {at[1]}]; "
        f"{violations} of {M * N} elements outside the bound"
        + (f" ({int((~finite).sum().item())} not finite)" if not bool(finite.all()) else "")
    )
    for f in bad.flatten().nonzero().flatten()[:4].tolist():
        m, n = divmod(f, N)
        log(
            f"    C[{m}, {n}] = {float(got[m, n]):.6g} vs C_ref {float(t['c_ref'][m, n]):.6g}, "
            f"bound {float(bound[m, n]):.3g}"
        )
    return violations == 0, violations, M * N, worst


def run_dump(exe: str, folder: str, args) -> int:
    cmd = [exe, "format", "--awq", "--dump", folder]
    for flag, v in (("--rows", args.rows), ("--k-dim", args.k_dim), ("--group", args.group), ("--seed", args.seed)):
        if v is not None:
            cmd += [flag, str(v)]
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        print(f"awq_parity.py: cannot run --harness '{exe}': {e.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p.returncode


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="the folder of kbit-harness format --awq --dump")
    ap.add_argument("--swap-nibbles", action="store_true",
                    help="negative control: reverse the nibbles of every qweight word (must fail)")
    ap.add_argument("--harness", metavar="EXE",
                    help="write the dump with EXE first, then run the check and the negative control")
    ap.add_argument("--rows", type=int, help="--harness: N of the dump")
    ap.add_argument("--k-dim", type=int, help="--harness: K_in of the dump")
    ap.add_argument("--group", type=int, help="--harness: the AWQ group size of the dump")
    ap.add_argument("--seed", type=int, help="--harness: the dump's seed")
    args = ap.parse_args(argv)
    if args.harness and args.swap_nibbles:
        print("awq_parity.py: --harness runs the negative control itself; drop --swap-nibbles", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.harness and any(v is not None for v in (args.rows, args.k_dim, args.group, args.seed)):
        print("awq_parity.py: --rows, --k-dim, --group and --seed shape the dump: they need --harness", file=sys.stderr)
        return EXIT_BAD_INPUT

    if args.harness:
        rc = run_dump(args.harness, args.dir, args)
        if rc != 0:
            print(f"FAIL: the dump exited {rc}")
            return EXIT_BAD_INPUT if rc == EXIT_BAD_INPUT else EXIT_FAIL
    try:
        meta = read_dump(args.dir)
    except DumpError as e:
        print(f"awq_parity.py: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    why, version = skip_reason()
    if why == "no CUDA device" and os.environ.get("KBIT_REQUIRE_GPU") == "1":
        print("FAIL: no CUDA device, and KBIT_REQUIRE_GPU=1 (ctest --preset gpu) asks for one")
        return EXIT_FAIL
    if why:
        print(f"skipped: {why}")
        return EXIT_SKIP
    print(
        f"awq parity: humming-kernels {version} on AWQ g{meta['group']}, M={meta['M']} N={meta['N']} "
        f"K={meta['K_in']} fp16 (dump {args.dir})",
        flush=True,
    )
    t = load_tensors(args.dir, meta)
    passed, violations, elements, worst = check(t, meta, args.swap_nibbles)
    if not args.harness:
        print("PASS" if passed else "FAIL")
        return EXIT_PASS if passed else EXIT_FAIL
    if not passed:
        print("FAIL: humming's AWQ GEMM is outside the bound")
        return EXIT_FAIL
    # The negative control: the same check must see a wrong nibble order.
    control, violations, elements, worst = check(t, meta, True)
    if control:
        print("FAIL: the negative control passed: the check cannot see a wrong nibble order")
        return EXIT_FAIL
    print(f"PASS (negative control failed as it must: {violations} of {elements} elements, worst {worst:.3g})")
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
