// Variant 01 (inline_dequant.cu): the Phase-1 fused MMA GEMM with inline dequantization. Host
// entry points for the registry; the _nopad row keeps the seeds' unpadded B column stride (the
// bank-conflict measurement).
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

std::unique_ptr<VariantState> inline_dequant_setup(const GemmDims& dims,
                                                   const VariantOptions& opts);
void inline_dequant_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                        cudaStream_t stream);
std::unique_ptr<VariantState> inline_dequant_nopad_setup(const GemmDims& dims,
                                                         const VariantOptions& opts);
void inline_dequant_nopad_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                              cudaStream_t stream);

}  // namespace kbit::variants
