"""humming-kernels (pip) as a peer: uintB weights with fp16/bf16 group scales (docs/peers.md).

The package's own path, as its README shows it, for the quantize, dequantize and pack:
HummingLayer(...).load_from_unquantized(W) quantizes and bit-packs W (HummingWeightSchema.
quant_tensor -> humming.utils.weight.quantize_weight -> ops.quant_weight, ops.pack_weight);
layer.weight_schema.dequant_tensors() dequantizes that packed form (ops.unpack_weight, then
(q - 2^(B-1)) * scale), which is the check's reference; layer.transform() repacks it for the
kernel (transform_humming_tensors -> ops.repack_weight). The GEMM is humming.forward.
humming_forward(layer.humming_config, ...) with the tuning config that the package's heuristics
choose for the problem's M (humming.tune.get_heuristics_config), compiled once up front.
"""

from __future__ import annotations

import json
import sys

# humming's stream-K splits one output tile over at most this many CTAs (kMaxSlices in
# include/humming/scheduler.cuh) and adds their partial sums in the output type.
HUMMING_MAX_SLICES = 10


def _log(msg: str) -> None:
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def stream_k_slices(tuning: dict) -> int:
    """The most partial sums of one output tile that the chosen kernel adds in the output type
    (check.gemm_bound's `slices`)."""
    return HUMMING_MAX_SLICES if tuning.get("use_stream_k", True) else 1


_forward = None


def gemm(config, t, A, C, locks, compute, tuning_json, offsets=None):
    """One launch of humming's GEMM: C = A * W^T with the transformed tensors `t` of a layer
    (weight, weight_scale, zero_point, ... as layer.transform() left them)."""
    global _forward
    if _forward is None:  # imported once: launches are timed, host side included
        from humming.forward import humming_forward

        _forward = humming_forward
    _forward(
        config,
        inputs=A,
        weight=t["weight"],
        weight_scale=t.get("weight_scale"),
        zero_point=t.get("zero_point"),
        weight_scale_2=t.get("weight_scale_2"),
        bias=t.get("bias"),
        outputs=C,
        expert_layout=offsets,
        locks=locks,
        compute_config=compute,
        tuning_config=tuning_json,
    )


def layer_tensors(layer) -> dict:
    """The tensors the kernel reads, after layer.transform()."""
    names = ("weight", "weight_scale", "zero_point", "weight_scale_2", "bias")
    return {n: getattr(layer, n).data for n in names if getattr(layer, n, None) is not None}


class HummingPeer:
    package = "humming-kernels"
    dtypes = ["fp16", "bf16"]
    moe = True

    def __init__(self, bits: int, group: int):
        self.bits = bits
        self.group = group
        self.name = f"humming_u{bits}_g{group}"
        self.k_bits = [bits]
        self.bits_per_weight = bits + 16.0 / group
        self.description = (
            f"humming-kernels: uint{bits} weights (offset 2^{bits - 1}), one fp16/bf16 scale per "
            f"{group} along K; Hopper wgmma + TMA, JIT-compiled; dense and grouped MoE"
        )
        self._cache = None
        self._version = None

    # -- what it can run ----------------------------------------------------------------------

    def availability(self):
        try:
            import torch
        except Exception as e:  # noqa: BLE001
            return None, f"torch is not importable ({e})"
        try:
            import humming  # noqa: F401
            from humming.layer import HummingLayer  # noqa: F401
        except Exception as e:  # noqa: BLE001
            return None, f"humming-kernels is not importable ({type(e).__name__}: {e})"
        self._version = getattr(humming, "__version__", None)
        if not torch.cuda.is_available():
            return self._version, "no CUDA device"
        major, minor = torch.cuda.get_device_capability()
        if major * 10 + minor < 75:
            return self._version, f"humming needs sm_75 or newer (this GPU is sm_{major}{minor})"
        return self._version, None

    def unsupported_reason(self, p):
        if p.k_bits != self.bits:
            return f"k_bits not {self.bits}"
        if p.dtype not in self.dtypes:
            return f"dtype {p.dtype} not supported"
        if p.K_dim % self.group:
            return f"K_dim not a multiple of {self.group}"
        if p.N % 64:
            return "N not a multiple of 64"
        return None

    # -- the kernel's configuration -------------------------------------------------------------

    def _schema_config(self):
        """The layer's weight_config (HummingLayer(weight_config=...))."""
        return {"quant_method": "humming", "dtype": f"uint{self.bits}", "group_size": self.group}

    def _humming_schema(self, param_dtype):
        """The HummingWeightSchema that layer.transform() ends with: the kernel's config."""
        from humming.schema import HummingWeightSchema

        return HummingWeightSchema.from_config(self._schema_config())

    def codebook_text(self, p):
        return f"humming uint{self.bits} g{self.group} {p.dtype} scales"

    @staticmethod
    def _gemm_type(p):
        return "grouped_contiguous" if p.moe else "dense"

    def _tuning(self, layer_config, p, ctx):
        """The config the package's heuristics choose for this M, as JSON strings."""
        import torch
        from humming.tune import get_heuristics_config

        tuning = dict(
            get_heuristics_config(
                layer_config, shape_m=p.M, gemm_type=self._gemm_type(p), device=torch.cuda.current_device()
            )
        )
        if not ctx.timing.pdl:
            # The heuristics turn programmatic dependent launch on for sm_90; our rows time
            # plain launches (pdl = 0), so the peer does too.
            tuning["use_pdl"] = False
        compute = json.dumps({"gemm_type": "grouped_contiguous"}) if p.moe else None
        return compute, json.dumps(tuning), tuning

    def compile_jobs(self, problems, ctx):
        """The JIT compiles this peer's problems need, as (label, callable) pairs that the
        runner runs in parallel before any problem (a GEMM kernel takes tens of seconds; each
        (shape, dtype, M range) is its own kernel). The package's helper kernels (quantize,
        pack, unpack, repack) are compiled there too, best effort: what fails here is compiled
        at first use, and a real error shows in that problem's row."""
        import torch

        from humming.kernel.humming import HummingKernel
        from humming.transform import prepare_layer_config

        from harness.peers.check import torch_dtype

        device = torch.cuda.current_device()
        jobs = {}
        for p in problems:
            if self.unsupported_reason(p):
                continue
            try:
                cfg = prepare_layer_config(
                    shape_n=p.N,
                    shape_k=p.K_dim,
                    weight_schema=self._humming_schema(torch_dtype(p.dtype)),
                    num_experts=p.experts if p.moe else None,
                    torch_dtype=torch_dtype(p.dtype),
                    device=device,
                )
                compute, tuning_json, _ = self._tuning(cfg, p, ctx)
            except Exception as e:  # noqa: BLE001  (the problem's own run reports it)
                _log(f"{self.name}: no kernel config for {p.label()}: {type(e).__name__}: {e}")
                continue
            key = (cfg.to_str(), compute, tuning_json)
            label = f"humming gemm {self.name} {p.label()}"
            jobs.setdefault(
                "gemm " + json.dumps(key),
                (label, lambda k=key: HummingKernel.prepare_kernels(k[0], k[1], k[2], device)),
            )

        if jobs:
            jobs.update(self._helper_jobs(device))
        return list(jobs.items())

    @staticmethod
    def _helper(device, kind, **kw):
        """A job that compiles one of the package's helper kernels on `device`."""

        def build():
            import torch
            from humming.kernel.pack_weight import PackWeightKernel
            from humming.kernel.quant_weight import QuantWeightKernel
            from humming.kernel.repack_weight import RepackWeightKernel
            from humming.kernel.unpack_weight import UnpackWeightKernel

            cls = {
                "quant": QuantWeightKernel,
                "pack": PackWeightKernel,
                "unpack": UnpackWeightKernel,
                "repack": RepackWeightKernel,
            }[kind]
            with torch.cuda.device(device):
                cls(**kw)

        return build

    def _pack_jobs(self, device):
        """pack, unpack and repack of B-bit weights: what load and transform() run."""
        B = self.bits
        return {
            f"pack {B}": (f"humming pack_weight {B} bits", self._helper(device, "pack", num_bits=B)),
            f"unpack {B}": (f"humming unpack_weight {B} bits", self._helper(device, "unpack", num_bits=B)),
            f"repack {B}": (
                f"humming repack_weight {B} bits",
                self._helper(
                    device,
                    "repack",
                    weight_bits=B,
                    activation_bits=16,
                    is_weight_packed=True,
                    should_preprocess_for_int2fp=False,
                    should_preprocess_with_zp=False,
                    use_fused_e8m0_scale=False,
                    group_size_zp=0,
                    use_packed_k_layout=False,
                    use_native_dequant=False,
                ),
            ),
        }

    def _helper_jobs(self, device):
        from humming import dtypes

        B = self.bits
        jobs = {
            f"quant fp32 u{B} g{self.group}": (
                f"humming quant_weight float32->uint{B} g{self.group}",
                self._helper(
                    device,
                    "quant",
                    source_dtype=dtypes.DataType.from_str("float32"),
                    target_dtype=dtypes.DataType.from_str(f"uint{B}"),
                    group_size=self.group,
                    has_scale=True,
                    has_zero_point=False,
                    use_e8m0_scale=False,
                    is_fp_zero_point=False,
                    allow_negative_scale=True,
                ),
            )
        }
        jobs.update(self._pack_jobs(device))
        return jobs

    # -- weights and launches -------------------------------------------------------------------

    def release(self):
        if self._cache is not None:
            self._cache = None
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()

    def _make_layer(self, p, ctx):
        """The quantized layer, loaded but not yet transformed, and the check's reference: a
        function (expert, k0, k1) -> float64 [N, k1 - k0] of the dequantized weight."""
        from humming.layer import HummingLayer

        from harness.peers.check import make_weights, torch_dtype

        layer = HummingLayer(
            shape_n=p.N,
            shape_k=p.K_dim,
            weight_config=self._schema_config(),
            num_experts=p.experts if p.moe else None,
            torch_dtype=torch_dtype(p.dtype),
        ).cuda()
        W = make_weights(p, ctx.check_cfg.seed)
        layer.load_from_unquantized(W)  # quantize + bit-pack, by the package
        del W
        packed = {
            name: getattr(layer, name).data
            for name in ("weight", "weight_scale", "zero_point", "weight_scale_2")
            if getattr(layer, name, None) is not None
        }
        # The package's dequantize: float32 [E?, N, K], (q - 2^(B-1)) * scale is exact in float32.
        deq = layer.weight_schema.dequant_tensors(packed).float()
        del packed

        def deq_chunk(e, k0, k1):
            W = deq[e] if p.moe else deq
            return W[:, k0:k1].double()

        return layer, deq_chunk

    def _weights(self, p, ctx):
        """Quantized, dequantized (reference) and repacked weights of a shape, reused for
        every M of it."""
        key = (p.shape, p.N, p.K_dim, p.experts, p.dtype, ctx.check_cfg.seed)
        if self._cache is not None and self._cache["key"] == key:
            return self._cache
        self.release()
        layer, deq_chunk = self._make_layer(p, ctx)
        layer.transform()  # repack for the kernel
        first = layer_tensors(layer)
        per_copy = sum(t.numel() * t.element_size() for t in first.values())
        self._cache = {
            "key": key,
            "layer": layer,
            "config": layer.humming_config,
            "deq_chunk": deq_chunk,
            "copies": [first],
            "per_copy": per_copy,
        }
        return self._cache

    def build(self, p, A, ctx):
        import torch

        w = self._weights(p, ctx)
        compute, tuning_json, tuning = self._tuning(w["config"], p, ctx)
        config = w["config"]
        locks = w["layer"].locks
        C = torch.empty((p.M, p.N), dtype=A.dtype, device=A.device)
        offsets = (
            torch.tensor(list(p.expert_offsets), dtype=torch.int64, device=A.device) if p.moe else None
        )
        copies = w["copies"]
        peer = self

        class Built:
            per_copy_bytes = w["per_copy"]
            touched_bytes = (
                w["per_copy"] * p.active_experts // max(1, p.experts) if p.moe else w["per_copy"]
            )
            extra_additions = p.K_dim // peer.group  # one scale step per group
            slices = stream_k_slices(tuning)
            codebook = peer.codebook_text(p)
            config_text = (
                f"bits/weight={peer.bits_per_weight:g} group={peer.group} "
                f"package=humming-kernels {peer._version} gemm={peer._gemm_type(p)} "
                f"mma={tuning.get('mma_type')} block={'x'.join(str(x) for x in tuning.get('block_shape', ()))} "
                f"warp={'x'.join(str(x) for x in tuning.get('warp_shape', ()))} "
                f"stages={tuning.get('num_stages')} stream_k={int(bool(tuning.get('use_stream_k', True)))} "
                f"warp_spec={int(bool(tuning.get('use_warp_spec', False)))} tma={int(bool(tuning.get('use_tma', False)))} "
                f"pdl={int(bool(tuning.get('use_pdl', False)))}"
            )

            @staticmethod
            def ensure_copies(n):
                while len(copies) < n:
                    copies.append({k: v.clone() for k, v in copies[0].items()})

            @staticmethod
            def launch(i):
                gemm(config, copies[i], A, C, locks, compute, tuning_json, offsets)

            @staticmethod
            def poison():
                C.fill_(float("nan"))

            @staticmethod
            def output():
                return C

            deq_chunk = staticmethod(w["deq_chunk"])

            @staticmethod
            def cached_copies():
                return len(copies)

            @staticmethod
            def free():
                # A and C go with this object; the weights (and their copies) stay cached for
                # the next M of this shape and go when the shape changes (release()).
                pass

        return Built
