// Bit-plane packing and index extraction (docs/format.md, "Bit-planes").
#pragma once
#include <cstdint>
#include <type_traits>

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

namespace kbit::dev {

// Field width for the "residue fields" extraction of the scalar kernels: the K index bits of
// element j live in one F-bit field of a word, so that one shift puts them at bits 0..K-1.
// K = 3 uses F = 4 (bit 3 of each field is don't-care), K = 5 uses F = 8 (bits 5..7 are
// don't-care: shfl reads only bits 0..4 of its lane operand).
template <int K>
__host__ __device__ constexpr int field_width() {
  return K == 2 ? 2 : K <= 4 ? 4 : 8;
}

// Mask of the positions 0..b inside every F-bit field.
template <int F, int B>
__host__ __device__ constexpr uint32_t low_positions_mask() {
  uint32_t field = (1u << (B + 1)) - 1u, m = 0;
  for (int i = 0; i < 32; i += F) m |= field << i;
  return m;
}

// The word whose field q (bits F*q .. F*q+F-1) holds, at positions 0..K-1, the index bits of
// element F*q + r of the block: position b takes bit F*q + r of plane b. Planes are aligned
// by one shift each ((b - r) left or right; none when b == r) and merged by a chain of K-1
// LOP3 selects, lowest position last. Positions K..F-1 hold don't-care bits.
template <int K, int R>
__device__ __forceinline__ uint32_t residue_fields(const uint32_t (&p)[K]) {
  constexpr int F = field_width<K>();
  auto aligned = [&](auto b_const) {
    constexpr int b = decltype(b_const)::value;
    if constexpr (b >= R)
      return p[b] << (b - R);
    else
      return p[b] >> (R - b);
  };
  uint32_t w = aligned(std::integral_constant<int, K - 1>{});
  if constexpr (K >= 5)
    w = select_bits(low_positions_mask<F, 3>(), aligned(std::integral_constant<int, 3>{}), w);
  if constexpr (K >= 4)
    w = select_bits(low_positions_mask<F, 2>(), aligned(std::integral_constant<int, 2>{}), w);
  if constexpr (K >= 3)
    w = select_bits(low_positions_mask<F, 1>(), aligned(std::integral_constant<int, 1>{}), w);
  w = select_bits(low_positions_mask<F, 0>(), aligned(std::integral_constant<int, 0>{}), w);
  return w;
}

// The codebook spread over the lanes for shfl lookups: lane l holds cb[l mod 2^K], so any
// don't-care bits at positions K..4 of the lane operand still select cb[index].
__device__ __forceinline__ float codebook_lane_value(const float (&cb)[32], int k_bits, int lane) {
  return cb[lane & ((1 << k_bits) - 1)];
}

}  // namespace kbit::dev
