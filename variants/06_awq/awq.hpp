// Variant 06 (docs/awq_format.md): GEMMs on AWQ int4 weights. awq_gemv (awq_gemv.cu) reads the
// AutoAWQ checkpoint tensors as they are, for M = 1..4; awq_gemm (awq_gemm.cu) runs variant 03's
// wgmma mainloop on the AWQ tiled repack (reference/awq.hpp awq_tile), any M. Host entry points
// and options for the registry.
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// Tokens per tile (wgmma's N), as variant 03's option.
inline constexpr OptionSpec kAwqGemmTokenTile{
    "token_tile",
    0,
    0,
    256,
    false,
    "tokens per tile (the MMA's N): 8, 16, 32, 64, 128 or 256; 0 = by M",
    /*multiple_of=*/8,
    /*power_of_two=*/true};

std::unique_ptr<VariantState> awq_gemm_setup(const GemmDims& dims, const VariantOptions& opts);
void awq_gemm_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                  cudaStream_t stream);

// 1: the mma.m16n8k16 kernel (the weights as the A fragment); 0: fp32 FMAs (awq_gemv.cu); 2: by
// M, the kernel measured faster (README.md): FMAs at M = 1, mma from kAwqGemvMmaFromRows.
inline constexpr OptionSpec kAwqGemvTensorCores{
    "tensor_cores",
    2,
    0,
    2,
    false,
    "1: weights through mma.m16n8k16; 0: fp32 FMAs; 2: by M (FMAs at M = 1, mma above)"};
inline constexpr std::int64_t kAwqGemvMmaFromRows = 2;

std::unique_ptr<VariantState> awq_gemv_setup(const GemmDims& dims, const VariantOptions& opts);
void awq_gemv_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                  cudaStream_t stream);

}  // namespace kbit::variants
