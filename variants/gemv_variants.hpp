// Variant 04 (variants/04_scalar_gemv.cu): scalar GEMV for M = 1..4, and its grouped (MoE)
// form. Host entry points for the registry.
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

std::unique_ptr<VariantState> scalar_gemv_setup(const GemmDims& dims, const VariantOptions& opts);
void scalar_gemv_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                     cudaStream_t stream);

std::unique_ptr<VariantState> grouped_scalar_gemv_setup(const GemmDims& dims,
                                                        const VariantOptions& opts);
void grouped_scalar_gemv_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                             cudaStream_t stream);

}  // namespace kbit::variants
