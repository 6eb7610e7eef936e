#include "reference/e4m4.hpp"

#include <cmath>
#include <string>

#include "reference/error.hpp"

namespace kbit {

float e4m4_decode(std::uint8_t code) {
  const int e = code >> 4, m = code & 0xF;
  if (e == 0) return std::ldexp(float(m), -10 - 4);
  return std::ldexp(float(16 + m), e - kE4M4Bias - 4);
}

std::uint8_t e4m4_encode(float value, bool* saturated) {
  if (saturated) *saturated = false;
  if (!std::isfinite(value) || value < 0.0f) {
    throw Error("e4m4_encode: absmax " + std::to_string(value) +
                " is negative or not finite (the format stores 0 .. 31)");
  }
  if (value == 0.0f) return 0;
  int exp2;
  const float frac = std::frexp(value, &exp2);  // value = frac * 2^exp2, frac in [0.5, 1): exact
  const int e = exp2 + 10;                      // value = 2^(e-11) * (2*frac), 2*frac in [1, 2)
  int code;
  if (e >= 1) {
    // 32*frac - 16 is exact (power-of-two scaling, then a subtraction inside one binade).
    int m = int(std::nearbyint(32.0f * frac - 16.0f));  // ties to even (default rounding mode)
    int ee = e;
    if (m == 16) {
      m = 0;
      ++ee;
    }
    code = (ee << 4) | m;
  } else {
    // Subnormal: value = m * 2^-14; m == 16 lands exactly on the smallest normal, 0x10.
    code = int(std::nearbyint(std::ldexp(value, 14)));
  }
  if (code > 0xFF) {
    if (saturated) *saturated = true;
    return 0xFF;
  }
  return std::uint8_t(code);
}

}  // namespace kbit
