// Random AWQ tensors for the repack tests (test_awq_repack.cpp on the CPU, test_format_gpu.cpp on
// the GPU): every word a hash of (seed, index), so every nibble value and every fp16 bit pattern
// occurs. The repack moves bits and never reads them as numbers, so no quantizer is needed.
#pragma once
#include <cstdint>

#include "reference/awq.hpp"
#include "reference/random.hpp"

namespace kbit::test {

inline AwqTensor random_awq_tensor(std::int64_t k_in, std::int64_t n_out, int group,
                                   std::uint64_t seed) {
  AwqTensor t;
  t.k_in = k_in;
  t.n_out = n_out;
  t.group = group;
  auto bits = [&](std::uint64_t stream, std::int64_t i) {
    return splitmix64(splitmix64(seed * 3 + stream) ^ std::uint64_t(i));
  };
  t.qweight.resize(std::size_t(t.k_in * t.words_per_row()));
  for (std::size_t i = 0; i < t.qweight.size(); ++i)
    t.qweight[i] = std::int32_t(std::uint32_t(bits(0, std::int64_t(i))));
  t.qzeros.resize(std::size_t(t.num_groups() * t.words_per_row()));
  for (std::size_t i = 0; i < t.qzeros.size(); ++i)
    t.qzeros[i] = std::int32_t(std::uint32_t(bits(1, std::int64_t(i))));
  t.scales.resize(std::size_t(t.num_groups() * t.n_out));
  for (std::size_t i = 0; i < t.scales.size(); ++i)
    t.scales[i] = std::uint16_t(bits(2, std::int64_t(i)));
  return t;
}

}  // namespace kbit::test
