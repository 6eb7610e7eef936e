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

// (a & mask) | (b & ~mask): one LOP3. Written in PTX because nvcc otherwise splits it into an
// AND and an OR-AND when an operand is shifted (two instructions per merge in the hot loops).
__device__ __forceinline__ uint32_t select_bits(uint32_t mask, uint32_t a, uint32_t b) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(d) : "r"(a), "r"(b), "r"(mask));  // c ? a : b
  return d;
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
// LOP3 selects, lowest position last. Positions K..F-1 hold don't-care bits. F defaults to the
// narrowest width that fits K; the MMA-lookup kernels ask for F = 4 at K = 2 too, so that a
// byte always holds two indices.
template <int K, int R, int F = field_width<K>()>
__device__ __forceinline__ uint32_t residue_fields(const uint32_t (&p)[K]) {
  static_assert(F >= K && 32 % F == 0 && R < F, "a field holds one index");
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

// The four F = 4 residue words of a block at once (K = 3, 4): w[r] = residue_fields<K, r, 4>.
// Inside each nibble column group the planes form a 4x4 bit matrix (row b = plane b, column r
// = element 4q + r) and the residue words are its transpose, which two rounds of masked swaps
// build: 4 swaps of 1 shift + 1 LOP3 per output word, 16 instructions for 32 indices where
// residue_fields takes 28. K = 3 reads plane 2 again as its don't-care plane 3.
template <int K>
__device__ __forceinline__ void residue_nibbles(const uint32_t (&p)[K], uint32_t (&w)[4]) {
  static_assert(K == 3 || K == 4, "the transpose needs 3 or 4 planes");
  uint32_t x[4] = {p[0], p[1], p[2], p[K - 1]};
  // Round 1: columns 2,3 of rows 0,1 <-> columns 0,1 of rows 2,3.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t lo = select_bits(0x33333333u, x[i], x[i + 2] << 2);
    const uint32_t hi = select_bits(0x33333333u, x[i] >> 2, x[i + 2]);
    x[i] = lo, x[i + 2] = hi;
  }
  // Round 2: columns 1,3 of rows 0,2 <-> columns 0,2 of rows 1,3.
#pragma unroll
  for (int i = 0; i < 4; i += 2) {
    const uint32_t lo = select_bits(0x55555555u, x[i], x[i + 1] << 1);
    const uint32_t hi = select_bits(0x55555555u, x[i] >> 1, x[i + 1]);
    x[i] = lo, x[i + 1] = hi;
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) w[r] = x[r];
}

// The codebook spread over the lanes for shfl lookups: lane l holds cb[l mod 2^K], so any
// don't-care bits at positions K..4 of the lane operand still select cb[index].
__device__ __forceinline__ float codebook_lane_value(const float (&cb)[32], int k_bits, int lane) {
  return cb[lane & ((1 << k_bits) - 1)];
}

}  // namespace kbit::dev
