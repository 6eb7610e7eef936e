// Deterministic, thread-count-independent random data: element i depends only on (seed, i).
#pragma once
#include <cstdint>
#include <vector>

namespace kbit {

std::uint64_t splitmix64(std::uint64_t x);
// N(0, sigma^2) by Box-Muller on two hashed uniforms.
void fill_normal(float* out, std::int64_t n, std::uint64_t seed, float sigma = 1.0f);
std::vector<float> random_normal(std::int64_t n, std::uint64_t seed, float sigma = 1.0f);
// Uniform in [0, 1), from (seed, i) alone.
double hashed_uniform(std::uint64_t seed, std::uint64_t i);

}  // namespace kbit
