// Codebooks: 2^K float32 reconstruction levels (docs/format.md, "Codebooks").
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kbit {

constexpr int kMinKBits = 2;
constexpr int kMaxKBits = 5;
constexpr int kBlockSize = 32;  // elements per quantization block (one warp, one ballot word)

// Throws unless 2 <= k <= 5; the message names the value and the range.
void check_k_bits(int k);

// Phi^-1(p) in double, accurate to a few ulp over (0, 1).
double inverse_normal_cdf(double p);

// float32(Phi^-1((2i+1) / 2^(K+1))), then divided in float32 by the largest magnitude.
std::vector<float> codebook_nf(int k);
// The seeds' wording: E[X | X in bin i] over 2^K equiprobable bins of N(0,1), same rounding.
std::vector<float> codebook_nf_expected(int k);
// 2^K evenly spaced values from -1 to 1 (computed in double, rounded to float32).
std::vector<float> codebook_uniform(int k);
// "nf", "nf_expected" or "uniform".
std::vector<float> make_codebook(std::string_view name, int k);
// Throws unless cb has exactly 2^k finite entries. Any order and sign pattern is valid.
void validate_codebook(const std::vector<float>& cb, int k);

// Largest distance from any v in [-1, 1] to its nearest codebook entry: half the largest
// gap between adjacent sorted entries, or the distance from an end point of [-1, 1] to
// the nearest entry when the codebook does not reach it.
double codebook_half_gap(const std::vector<float>& cb);
double codebook_max_abs(const std::vector<float>& cb);

}  // namespace kbit
