// The baselines every speedup is measured against (registry family "baseline").
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// cuBLAS (cublasGemmEx, fp32 accumulation) on the dequantized weight in fp16/bf16. For a
// grouped problem, one cuBLAS call per expert that has rows.
std::unique_ptr<VariantState> cublas_fp16_setup(const GemmDims& dims, const VariantOptions& opts);
void cublas_fp16_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                     cudaStream_t stream);

// The GPU dequantize kernel into a scratch fp16/bf16 weight, then the same cuBLAS call: what a
// user without a fused kernel does today. Its time includes both steps.
std::unique_ptr<VariantState> dequant_cublas_setup(const GemmDims& dims,
                                                   const VariantOptions& opts);
void dequant_cublas_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                        cudaStream_t stream);

// Grouped problems only: one cublasGemmGroupedBatchedEx call over the experts that have rows
// (one group of size 1 each), on the dequantized weights.
std::unique_ptr<VariantState> cublas_grouped_setup(const GemmDims& dims,
                                                   const VariantOptions& opts);
void cublas_grouped_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                        cudaStream_t stream);

}  // namespace kbit::variants
