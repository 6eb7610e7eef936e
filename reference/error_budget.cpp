#include "reference/error_budget.hpp"

#include <algorithm>
#include <cmath>

#include "reference/codebook.hpp"
#include "reference/e4m4.hpp"
#include "reference/fp16.hpp"

namespace kbit {

float expected_scale(float absmax, AbsmaxStorage storage) {
  switch (storage) {
    case AbsmaxStorage::e4m4:
      return e4m4_decode(e4m4_encode(absmax));
    case AbsmaxStorage::fp16:
      return half_to_float(float_to_half(absmax));
    case AbsmaxStorage::fp32:
      return absmax;
  }
  return absmax;
}

double quant_element_bound(double half_gap, double max_abs_cb, float absmax,
                           AbsmaxStorage storage) {
  const float scale = expected_scale(absmax, storage);
  // v = x / absmax and cb[i] * scale are each one float32 rounding: 2^-23 relative covers both.
  const double eps = 0x1p-22 * (double(absmax) + double(scale)) + 1e-30;
  return half_gap * absmax + max_abs_cb * std::fabs(double(scale) - double(absmax)) + eps;
}

QuantErrorStats quant_error_stats(const std::vector<float>& x, const QuantizedTensor& q,
                                  const std::vector<float>& cb, AbsmaxStorage storage) {
  const std::vector<float> deq = dequantize_f32(q, cb, storage);
  const double half_gap = codebook_half_gap(cb), max_cb = codebook_max_abs(cb);
  QuantErrorStats s;
  double sig = 0, noise = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t blk = std::int64_t(i / 32);
    const double err = std::fabs(double(deq[i]) - double(x[i]));
    const double bound = quant_element_bound(half_gap, max_cb, q.absmax[blk], storage);
    s.max_abs_err = std::max(s.max_abs_err, err);
    s.max_err_over_bound = std::max(s.max_err_over_bound, err / bound);
    if (err > bound) {
      if (s.violations == 0) s.first_violation = std::int64_t(i);
      ++s.violations;
    }
    sig += double(x[i]) * x[i];
    noise += err * err;
  }
  s.rms_err = x.empty() ? 0 : std::sqrt(noise / double(x.size()));
  s.sqnr_db = noise > 0 ? 10.0 * std::log10(sig / noise) : INFINITY;
  return s;
}

namespace {

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f32:
      return 0x1p-24;
    case DType::f16:
      return 0x1p-11;
    case DType::bf16:
      return 0x1p-8;
  }
  return 0;
}

double gamma_n(std::int64_t n, double u) {
  return double(n) * u / (1.0 - double(n) * u);
}

}  // namespace

GemmBound gemm_bound(DType in, DType out, std::int64_t K_dim, std::int64_t extra_additions) {
  GemmBound b;
  b.in = in;
  b.out = out;
  const double u_in = unit_roundoff(in);
  // Each weight: cb and the product rounded to `in` (the E4M4 scale is exact in fp16 and
  // bf16), against the float32 reference value: (1+u)^3 - 1 <= gamma_3(u_in).
  const double g_w = gamma_n(3, u_in);
  // fp32 accumulation; 2^-23 per addition allows for the tensor cores' truncating adders.
  const double g_acc = gamma_n(K_dim + extra_additions + 64, 0x1p-23);
  b.gamma = g_w + g_acc + g_w * g_acc;
  // A codebook entry below the normal range of fp16 loses up to 2^-25 absolute, times a
  // scale of at most 31, plus the subnormal rounding of the product: under 2^-19 per weight.
  b.eta = in == DType::f16 ? 0x1p-19 : 0x1p-120;
  return b;
}

double ulp(DType t, double x) {
  x = std::fabs(x);
  int p, emin;  // significand bits (with the implicit one) and the smallest normal exponent
  switch (t) {
    case DType::f16:
      p = 11, emin = -14;
      break;
    case DType::bf16:
      p = 8, emin = -126;
      break;
    default:
      p = 24, emin = -126;
      break;
  }
  int e = x > 0 ? std::ilogb(x) : emin;
  e = std::max(e, emin);
  return std::ldexp(1.0, e - p + 1);
}

double gemm_element_bound(const GemmBound& b, double abs_dot, double abs_a_sum, double c_ref) {
  const double u_out = b.out == DType::f16 ? 0x1p-11 : b.out == DType::bf16 ? 0x1p-8 : 0x1p-24;
  return b.gamma * abs_dot * (1.0 + u_out) + b.eta * abs_a_sum + ulp(b.out, c_ref);
}

}  // namespace kbit
