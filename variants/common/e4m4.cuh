// E4M4 absmax on the device. Must agree bit for bit with reference/e4m4.cpp.
#pragma once
#include <cstdint>

namespace kbit::dev {

// Branchless and exact, subnormal codes included: the code's bits placed at float bit 19
// read as float32 with exponent field e and mantissa m; for e >= 1 that is
// 2^(e-127)(1+m/16), for e == 0 the float32 subnormal m * 2^-130. Both are the E4M4 value
// times 2^-116, so one multiply by 2^116 finishes (2 instructions: SHL, FMUL). Requires
// denormals not flushed (no --use_fast_math / -ftz=true), which this project never sets.
__device__ __forceinline__ float decode_e4m4(uint32_t code) {
  return __uint_as_float(code << 19) * 0x1p116f;
}

// Two codes at once, as fp16 and divided by 16: bytes 0 and 2 of `codes` (odd = false) or 1 and
// 3 (odd = true) placed at half bit 6 read as fp16 with exponent field e and mantissa m, i.e.
// 2^(e-15)(1+m/16), or for e == 0 the fp16 subnormal m * 2^-18: the E4M4 value / 16, exactly
// (2 instructions for two codes, then one conversion each where fp32 is needed).
__device__ __forceinline__ uint32_t decode_e4m4_pair_div16(uint32_t codes, bool odd) {
  return (odd ? codes >> 2 : codes << 6) & 0x3FC03FC0u;
}

// Round to nearest even on the 4-bit mantissa with carry, saturating at 0xFF (31.0); the
// same steps as kbit::e4m4_encode. Input must be finite and >= 0 (callers check first).
__device__ __forceinline__ uint32_t encode_e4m4(float a, bool* saturated) {
  *saturated = false;
  if (a == 0.0f) return 0;
  int e2;
  const float frac = frexpf(a, &e2);  // a = frac * 2^e2, frac in [0.5, 1)
  const int e = e2 + 10;
  int code;
  if (e >= 1) {
    int m = __float2int_rn(32.0f * frac - 16.0f);  // exact operands; rn = ties to even
    int ee = e;
    if (m == 16) {
      m = 0;
      ++ee;
    }
    code = (ee << 4) | m;
  } else {
    code = __float2int_rn(ldexpf(a, 14));  // subnormal: m * 2^-14
  }
  if (code > 0xFF) {
    *saturated = true;
    return 0xFF;
  }
  return uint32_t(code);
}

}  // namespace kbit::dev
