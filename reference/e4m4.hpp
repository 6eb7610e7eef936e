// E4M4 absmax byte: 4-bit exponent, 4-bit mantissa, bias 11 (docs/format.md, "E4M4").
#pragma once
#include <cstdint>

namespace kbit {

constexpr int kE4M4Bias = 11;
constexpr float kE4M4Max = 31.0f;           // code 0xFF
constexpr double kE4M4MinNormal = 0x1p-10;  // code 0x10
// Worst relative error of encode for inputs in [kE4M4MinNormal, kE4M4Max]: half a mantissa
// step over the smallest significand, 2^-5 / 1.
constexpr double kE4M4RelError = 1.0 / 32.0;

// Normal (e > 0): 2^(e-11) * (1 + m/16). Subnormal (e == 0): 2^-10 * m/16. 0x00 is 0.
float e4m4_decode(std::uint8_t code);

// Round to nearest, ties to even, on the 4-bit mantissa with carry into the exponent;
// saturates at 0xFF (31.0) and sets *saturated when it does. Throws for negative or
// non-finite input.
std::uint8_t e4m4_encode(float value, bool* saturated = nullptr);

}  // namespace kbit
