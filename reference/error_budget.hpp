// Error budgets (derived in docs/format.md, "Error budgets").
#pragma once
#include <cstdint>
#include <vector>

#include "reference/dtype.hpp"
#include "reference/quantize.hpp"

namespace kbit {

// ---- 1. Quantization: |deq - x| <= half_gap * absmax + max|cb| * |scale - absmax| + eps ----
struct QuantErrorStats {
  double max_abs_err = 0;
  double rms_err = 0;
  double sqnr_db = 0;
  double max_err_over_bound = 0;  // <= 1 when every element is inside its bound
  std::int64_t violations = 0;
  std::int64_t first_violation = -1;
};

// The scale a correct encoder stores for `absmax` (E4M4 round trip, fp16 rounding, or exact).
float expected_scale(float absmax, AbsmaxStorage storage);
// Per-element bound for an element of a block with exact absmax `absmax`, stored as
// `storage`. The bound uses the scale a correct encoder produces, not the stored byte, so a
// corrupted scale is caught. eps covers the float32 products and divisions.
double quant_element_bound(double half_gap, double max_abs_cb, float absmax, AbsmaxStorage storage);

// Compares the dequantized values (float32) of q against the original x, element by element.
QuantErrorStats quant_error_stats(const std::vector<float>& x, const QuantizedTensor& q,
                                  const std::vector<float>& codebook, AbsmaxStorage storage);

// ---- 2. GEMM: |C - C_ref| <= gamma * (|A| |deq(W)|^T) + eta * sum|A| + ulp_out(|C_ref|) ----
struct GemmBound {
  DType in = DType::f16, out = DType::f16;
  double gamma = 0;  // relative: weight rounding to `in` (3u) and fp32 accumulation of n terms
  double eta = 0;    // absolute per |a|: weights that round into the subnormal range of `in`
};

// `additions` is the longest chain of fp32 roundings one output sees (K_dim plus split-K
// partial sums plus per-block scale steps; gemm_bound adds a margin of 64 of its own).
GemmBound gemm_bound(DType in, DType out, std::int64_t K_dim, std::int64_t extra_additions = 0);
// The spacing of `t` at |x| (the subnormal spacing below the normal range).
double ulp(DType t, double x);
double gemm_element_bound(const GemmBound& b, double abs_dot, double abs_a_sum, double c_ref);

}  // namespace kbit
