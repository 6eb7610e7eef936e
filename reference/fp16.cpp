#include "reference/fp16.hpp"

namespace kbit {

std::uint16_t float_to_half(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan (nan stays a quiet nan)
    return std::uint16_t(sign | 0x7C00u |
                         (abs > 0x7F800000u ? 0x0200u | ((abs >> 13) & 0x3FFu) : 0u));
  }
  if (abs >= 0x477FF000u) return std::uint16_t(sign | 0x7C00u);  // rounds to >= 65520: inf
  const int exp = int(abs >> 23) - 127;
  if (exp >= -14) {  // normal half
    std::uint32_t mant = abs & 0x7FFFFFu;
    std::uint32_t h = (std::uint32_t(exp + 15) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent
    return std::uint16_t(sign | h);
  }
  if (exp < -25) return sign;  // below half of the smallest subnormal: +-0
  // Subnormal half: value = m * 2^-24; shift the 24-bit significand into place.
  const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24 : mant * 2^(exp-23) / 2^-24 = mant >> (-exp-1)
  std::uint32_t h = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return std::uint16_t(sign | h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  int e = -1;  // normalize the subnormal
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return bits_float(sign | (std::uint32_t(112 - e) << 23) | ((mant & 0x3FFu) << 13));
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((u >> 16) | 0x40u);  // quiet nan
  u += 0x7FFFu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

float round_to(DType t, float f) {
  switch (t) {
    case DType::f32:
      return f;
    case DType::f16:
      return half_to_float(float_to_half(f));
    case DType::bf16:
      return bf16_to_float(float_to_bf16(f));
  }
  return f;
}

float load_as_float(DType t, const void* data, std::size_t i) {
  if (t == DType::f32) return static_cast<const float*>(data)[i];
  const std::uint16_t h = static_cast<const std::uint16_t*>(data)[i];
  return t == DType::f16 ? half_to_float(h) : bf16_to_float(h);
}

void store_from_float(DType t, void* data, std::size_t i, float f) {
  if (t == DType::f32) {
    static_cast<float*>(data)[i] = f;
  } else {
    static_cast<std::uint16_t*>(data)[i] = t == DType::f16 ? float_to_half(f) : float_to_bf16(f);
  }
}

}  // namespace kbit
