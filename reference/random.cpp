#include "reference/random.hpp"

#include <cmath>

namespace kbit {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double hashed_uniform(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t h = splitmix64(splitmix64(seed) ^ (i * 0xD1B54A32D192ED03ull));
  return double(h >> 11) * 0x1p-53;  // [0, 1)
}

void fill_normal(float* out, std::int64_t n, std::uint64_t seed, float sigma) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const double u1 = 1.0 - hashed_uniform(seed, 2 * std::uint64_t(i));  // (0, 1]
    const double u2 = hashed_uniform(seed, 2 * std::uint64_t(i) + 1);
    out[i] = float(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  }
}

std::vector<float> random_normal(std::int64_t n, std::uint64_t seed, float sigma) {
  std::vector<float> v(std::size_t(n > 0 ? n : 0));
  fill_normal(v.data(), n, seed, sigma);
  return v;
}

}  // namespace kbit
