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

// Read probes (registry family "probe", variants/read_probe.cu): read the problem's bytes
// (tiled kbit weights + A), write C = 0, compute nothing. Their time is the shape's practical
// streaming ceiling under the same timing, never checked.
std::unique_ptr<VariantState> read_ldg_setup(const GemmDims& dims, const VariantOptions& opts);
std::unique_ptr<VariantState> read_bulk_setup(const GemmDims& dims, const VariantOptions& opts);
void read_probe_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                    cudaStream_t stream);
// read_ldg's record of what it read (synchronizes): the XOR of every 32-bit word of the planes,
// the absmax codes and A, for tests. 0 from read_bulk (nothing reads its ring).
std::uint32_t read_probe_checksum(VariantState* state);
// read_bulk with KBIT_PROBE_BULK's A_EACH 1 (synchronizes): per streaming block, the XOR of
// every 32-bit word of A that the block read (each block reads all of A); zeros without it.
std::vector<std::uint32_t> read_bulk_a_words(VariantState* state);

// read_slices (variants/read_slices_probe.cu): the weights in S-column x KT-k-tile units, each
// copied by two TMA tensor copies (planes, codes), the stream a column-slice GEMV would make;
// its checksum is the XOR of every weight word that landed in its ring (planes and codes).
std::unique_ptr<VariantState> read_slices_setup(const GemmDims& dims, const VariantOptions& opts);
void read_slices_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                     cudaStream_t stream);
std::uint32_t read_slices_checksum(VariantState* state);

// Dense fp16 tensor-core rate of this device in TFLOP/s: the median of timed cuBLAS
// n x n x n products on random data (the harness's flops ceiling).
double measure_tensor_tflops(int n, cudaStream_t stream);

}  // namespace kbit::variants
