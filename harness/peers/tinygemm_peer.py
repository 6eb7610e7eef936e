"""torch's built-in tinygemm int4 GEMM as a peer (docs/peers.md).

torch.ops.aten._weight_int4pack_mm(A, B_packed, group_size, scales_and_zeros): A bf16 [M, K],
B packed by torch.ops.aten._convert_weight_to_int4pack(W_int4, inner_k_tiles) into the m16n8k16
tensor-core layout [N/8][K/(inner_k_tiles*16)][32][inner_k_tiles/2] int32, and scales_and_zeros
bf16 [K/group, N, 2]. The kernel (aten/src/ATen/native/cuda/int4mm.cu) dequantizes
w = fma_bf16(q - 8, scale, zero), multiplies in bf16 with fp32 accumulation, adds its warps'
partial sums in fp32 and writes bf16 once (no split over blocks).

Quantization (ours, as torch's tests and gpt-fast do it): asymmetric int4 per group of
`group` along K, scale = (max - min) / 15, zero = min + 8 * scale (both stored in bf16),
q = clamp(round((w - min) / scale), 0, 15). The packer's input is the codes two to a byte,
[N, K/2] uint8, element 2j in the high nibble (torch >= 2.5 on CUDA); older torch took int32
[N, K] codes: we try uint8 first and fall back to int32 on a dtype error, and the config column
says which was used. The check's reference unpacks exactly the bytes handed to the packer.
"""

from __future__ import annotations

INNER_K_TILES = 8  # gpt-fast's choice: 16-byte loads; K must be a multiple of 8 * 16


class TinygemmPeer:
    package = "torch"
    dtypes = ["bf16"]
    moe = False

    def __init__(self, group: int):
        self.group = group
        self.name = f"tinygemm_int4_g{group}"
        self.k_bits = [4]
        self.bits_per_weight = 4 + 32.0 / group
        self.description = (
            f"torch's tinygemm (aten._weight_int4pack_mm): asymmetric int4, bf16 scale and zero "
            f"per {group} along K; mma.sync m16n8k16; bf16 only, dense only"
        )
        self._cache = None
        self._version = None

    def availability(self):
        try:
            import torch
        except Exception as e:  # noqa: BLE001
            return None, f"torch is not importable ({e})"
        self._version = torch.__version__
        if not torch.cuda.is_available():
            return self._version, "no CUDA device"
        if not hasattr(torch.ops.aten, "_weight_int4pack_mm") or not hasattr(
            torch.ops.aten, "_convert_weight_to_int4pack"
        ):
            return self._version, "this torch has no aten._weight_int4pack_mm"
        major, _ = torch.cuda.get_device_capability()
        if major < 8:
            return self._version, "tinygemm needs sm_80 or newer"
        return self._version, None

    def unsupported_reason(self, p):
        if p.k_bits != 4:
            return "k_bits not 4"
        if p.dtype != "bf16":
            return "tinygemm is bf16 only"
        if p.moe:
            return "MoE not wired for this peer"
        if p.K_dim % self.group:
            return f"K_dim not a multiple of {self.group}"
        if p.K_dim % (INNER_K_TILES * 16):
            return f"K_dim not a multiple of {INNER_K_TILES * 16}"
        if p.N % 8:
            return "N not a multiple of 8"
        return None

    def compile_jobs(self, problems, ctx):
        return []  # nothing to compile: the kernels ship with torch

    def release(self):
        if self._cache is not None:
            self._cache = None
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()

    @staticmethod
    def _pack(q_u8, q_codes):
        """torch's packer: uint8 [N, K/2] on torch >= 2.5, int32 codes [N, K] before."""
        import torch

        try:
            return torch.ops.aten._convert_weight_to_int4pack(q_u8, INNER_K_TILES), "uint8[N,K/2]"
        except RuntimeError as e:
            if "Byte" not in str(e) and "uint8" not in str(e) and "dtype" not in str(e).lower():
                raise
            return torch.ops.aten._convert_weight_to_int4pack(q_codes, INNER_K_TILES), "int32[N,K]"

    def _weights(self, p, ctx):
        import torch

        from harness.peers.check import make_weights

        key = (p.shape, p.N, p.K_dim, ctx.check_cfg.seed)
        if self._cache is not None and self._cache["key"] == key:
            return self._cache
        self.release()
        G, N, K = self.group, p.N, p.K_dim
        W = make_weights(p, ctx.check_cfg.seed).view(N, K // G, G)
        mx = W.amax(-1, keepdim=True)
        mn = W.amin(-1, keepdim=True)
        scales = (mx - mn).clamp(min=1e-6) / 15.0
        zeros = mn + scales * 8.0
        q = ((W - mn) / scales).round().clamp_(0, 15).to(torch.int32).view(N, K)
        del W, mx, mn
        q_u8 = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8).contiguous()
        packed, pack_input = self._pack(q_u8, q)
        del q
        scales_bf = scales.view(N, K // G).to(torch.bfloat16)
        zeros_bf = zeros.view(N, K // G).to(torch.bfloat16)
        sz = torch.stack([scales_bf, zeros_bf], dim=2).transpose(0, 1).contiguous()  # [K/G, N, 2]
        first = {"w": packed, "sz": sz}
        self._cache = {
            "key": key,
            "q_u8": q_u8,  # exactly what the packer got: the reference unpacks it
            "scale64": scales_bf.double(),
            "zero64": zeros_bf.double(),
            "copies": [first],
            "per_copy": packed.numel() * packed.element_size() + sz.numel() * sz.element_size(),
            "pack_input": pack_input,
        }
        return self._cache

    def build(self, p, A, ctx):
        import torch

        w = self._weights(p, ctx)
        G = self.group
        copies = w["copies"]
        q_u8, s64, z64 = w["q_u8"], w["scale64"], w["zero64"]
        out = {"C": None}
        peer = self

        class Built:
            per_copy_bytes = w["per_copy"]
            touched_bytes = w["per_copy"]
            extra_additions = 8 + p.K_dim // 32  # the 8 warps' partials, the k-tile pairs
            slices = 1  # one block owns an output tile's whole K: no split-K
            codebook = f"tinygemm int4 asymmetric g{G} bf16 scale+zero"
            config_text = (
                f"bits/weight={peer.bits_per_weight:g} group={G} package=torch {peer._version} "
                f"inner_k_tiles={INNER_K_TILES} pack_input={w['pack_input']}"
            )

            @staticmethod
            def ensure_copies(n):
                while len(copies) < n:
                    copies.append({k: v.clone() for k, v in copies[0].items()})

            @staticmethod
            def cached_copies():
                return len(copies)

            @staticmethod
            def launch(i):
                t = copies[i]
                out["C"] = torch.ops.aten._weight_int4pack_mm(A, t["w"], G, t["sz"])

            @staticmethod
            def poison():
                out["C"] = None  # the op returns a fresh tensor

            @staticmethod
            def output():
                return out["C"]

            @staticmethod
            def deq_chunk(e, k0, k1):
                b = q_u8[:, k0 // 2 : k1 // 2].to(torch.int16)
                q = torch.stack([b >> 4, b & 15], dim=2).reshape(b.shape[0], k1 - k0).double()
                g = torch.arange(k0, k1, device=q.device) // G
                return (q - 8.0) * s64[:, g] + z64[:, g]

            @staticmethod
            def free():
                out["C"] = None

        return Built
