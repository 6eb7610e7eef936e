// Bit-exact IEEE binary16 and bfloat16 conversions (round to nearest, ties to even), the
// same rounding as CUDA's __float2half_rn and __float2bfloat16_rn. Written out here, not
// taken from Eigen, so that the tests can check the two against each other.
#pragma once
#include <cstdint>
#include <cstring>

#include "reference/dtype.hpp"

namespace kbit {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);
inline float bf16_to_float(std::uint16_t h) {
  return bits_float(std::uint32_t(h) << 16);
}

// Rounds f to `t` and back: the value a kernel holds after storing f as `t`.
float round_to(DType t, float f);
// Reads element i of a buffer of type `t` (fp32 floats or 16-bit patterns) as float.
float load_as_float(DType t, const void* data, std::size_t i);
// Stores f, rounded to `t`, as element i of a buffer of type `t`.
void store_from_float(DType t, void* data, std::size_t i, float f);

}  // namespace kbit
