"""humming-kernels (pip) on AWQ int4 weights: the AWQ format of docs/awq_format.md as a peer.

The weights are the problem's W (check.make_weights), quantized on the GPU by awq_format.
quantize_torch, word for word with our CPU reference (reference/awq.cpp), into AutoAWQ's
qweight / qzeros / scales. humming loads them through its own AWQ path: HummingLayer(
weight_config={"quant_method": "awq", "bits": 4, "group_size": G, "zero_point": True}),
layer.load_from_tensors(...), layer.transform() (AWQWeightSchema.convert_humming unpacks,
un-interleaves the order 0 2 4 6 1 3 5 7, transposes and re-packs; transform_humming_tensors
repacks for the kernel, which subtracts the zero point and multiplies by the fp16 scale in
fp16). The check's reference is the spec's dequantization (q - z) * s of the AWQ tensors
themselves, not humming's reading of them. Timing and the check are the humming peer's.
"""

from __future__ import annotations

from harness.peers.humming_peer import HummingPeer


def awq_weight_config(group: int) -> dict:
    """An AWQ checkpoint's quantization_config, as humming's AWQWeightSchema reads it."""
    return {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}


def load_awq_layer(tensors: dict, N: int, K_dim: int, group: int):
    """A HummingLayer holding AWQ tensors (qweight int32 [K, N/8], qzeros int32 [K/G, N/8],
    scales fp16 [K/G, N]) on the current GPU, not yet transformed."""
    import torch
    from humming.layer import HummingLayer

    layer = HummingLayer(
        shape_n=N,
        shape_k=K_dim,
        weight_config=awq_weight_config(group),
        torch_dtype=torch.float16,
    ).cuda()
    # load_state_dict(strict=False) under the hood: a missing or misshapen tensor would leave
    # uninitialized memory in the layer, so the names and shapes are checked here.
    want = {n: tuple(p.shape) for n, p in layer.named_parameters()}
    got = {n: tuple(t.shape) for n, t in tensors.items()}
    if want != got:
        raise ValueError(f"AWQ tensors {got} do not match the layer's {want}")
    layer.load_from_tensors(tensors)
    return layer


class HummingAwqPeer(HummingPeer):
    dtypes = ["fp16"]
    moe = False  # AWQ problems are dense (harness/problem.hpp make_host_weights_awq)

    def __init__(self, group: int):
        super().__init__(4, group)
        self.name = f"humming_awq_g{group}"
        self.formats = (f"awq_g{group}",)  # runs on the AWQ problems of its group only
        self.bits_per_weight = 4 + 20.0 / group  # the nibble, an fp16 scale and a 4-bit zero per G
        self.description = (
            f"humming-kernels on AWQ int4 (AutoAWQ gemm layout, docs/awq_format.md): uint4 with a "
            f"4-bit zero point and an fp16 scale per {group} along K, loaded through humming's AWQ "
            f"schema; fp16 only"
        )

    def unsupported_reason(self, p):
        # The uint4 peer's rules (k_bits, K_dim % G, N % 64), with the AWQ ones where K fits.
        if p.k_bits == self.bits and p.dtype not in self.dtypes:
            return "AWQ scales are fp16: fp16 only"
        if p.k_bits == self.bits and p.moe:
            return "MoE not wired for this peer"
        return super().unsupported_reason(p)

    def _schema_config(self):
        return awq_weight_config(self.group)

    def _humming_schema(self, param_dtype):
        # AWQWeightSchema.to_humming_schema: uint4, scales in the layer's dtype, group G, an
        # integer zero point; convert_symmetric_integer_weight leaves a zero-point schema as is.
        from humming.schema.awq import AWQWeightSchema

        return AWQWeightSchema.from_config(self._schema_config()).to_humming_schema(param_dtype)

    def codebook_text(self, p):
        # The format's name first: harness/weight_format.hpp format_of_codebook files the row
        # under the AWQ problems by it.
        return f"awq_g{self.group} humming (uint4, 4-bit zero, fp16 scale)"

    def _helper_jobs(self, device):
        return self._pack_jobs(device)  # no quantize kernel: the AWQ tensors are ours

    def _make_layer(self, p, ctx):
        from harness.peers.awq_format import dequantize_rows_torch, quantize_torch
        from harness.peers.check import make_weights

        W = make_weights(p, ctx.check_cfg.seed)  # float32 [N, K_dim], the kbit peers' W
        awq = quantize_torch(W, self.group)
        del W
        layer = load_awq_layer(awq, p.N, p.K_dim, self.group)
        group = self.group

        def deq_chunk(e, k0, k1):
            rows = dequantize_rows_torch(awq["qweight"], awq["qzeros"], awq["scales"], group, k0, k1)
            return rows.t().double()  # [N, k1 - k0], the kbit orientation

        return layer, deq_chunk
