// Bit-plane packing and index extraction (docs/format.md, "Bit-planes").
#pragma once
#include <cstdint>

namespace kbit::dev {

constexpr uint32_t kFullMask = 0xFFFFFFFFu;

// Warp-collective: lane j contributes the K-bit index `idx` of element j; returns in lane b
// (b < K) plane word b, whose bit j is bit b of element j's index. Other lanes get 0.
template <int K>
__device__ __forceinline__ uint32_t ballot_planes(uint32_t idx, int lane) {
  uint32_t mine = 0;
#pragma unroll
  for (int b = 0; b < K; ++b) {
    const uint32_t w = __ballot_sync(kFullMask, (idx >> b) & 1u);
    if (lane == b) mine = w;
  }
  return mine;
}

// The index of element j (0..31) of a block: bit j of each plane, as a K-bit number.
template <int K>
__device__ __forceinline__ uint32_t extract_index(const uint32_t (&planes)[K], int j) {
  uint32_t idx = 0;
#pragma unroll
  for (int b = 0; b < K; ++b) idx |= ((planes[b] >> j) & 1u) << b;
  return idx;
}

// (a & mask) | (b & ~mask): one LOP3.
__device__ __forceinline__ uint32_t select_bits(uint32_t mask, uint32_t a, uint32_t b) {
  return (a & mask) | (b & ~mask);
}

}  // namespace kbit::dev
