// The shared mainloop's epilogue: a tile's sums to C, or through the self-cleaning split-K
// workspace (variants/common/splitk.cuh) when several blocks contribute to the tile. The mainloop
// (mainloop.cuh) and variant 07's own kernel store through it.
#pragma once
#include "variants/common/dtype.cuh"
#include "variants/common/splitk.cuh"
#include "variants/hopper/config.cuh"

namespace kbit::variants::ws {

// Tile t's sums: a consumer thread's TT / 2 accumulators in the m16n8 (and wgmma) layout for
// each of its RB 16-row blocks, kRbRows rows apart (16: adjacent; 64: the two halves of a
// warpgroup's 128 rows), sum[rb][4 n8 + i] holding weight row row0 + kRbRows rb + 8 (i / 2) of
// the tile and token 8 n8 + 2 (lane % 4) + i % 2. Straight to C when the block is the tile's only
// contributor, else added into the split-K workspace, whose last contributor (is_last(counter,
// contributors): the consumers' arrival, which syncs them) converts them 16 at a time (one L2
// round trip each).
template <int TT, typename T, typename P, int RB, int kRbRows = 16, typename IsLast>
__device__ __forceinline__ void store_tile_sums(const typename P::Args& a, int t, int row0,
                                                int lane, const float (&sum)[RB][TT / 2],
                                                IsLast&& is_last) {
  constexpr int kAccRegs = TT / 2, kRegs = RB * kAccRegs;
  const TileInfo tile = P::tile(a, t);
  const int f0 = tile.nt * Config::kTileN + row0, m0 = tile.a_row + 2 * (lane & 3);
  T* C = static_cast<T*>(a.C);
  // Index into C and the workspace of accumulator r (of all RB blocks), or -1 outside the
  // tile's rows or N; M * N < 2^31.
  auto index = [&](int r) {
    const int rb = r / kAccRegs, ra = r % kAccRegs;
    const int fe = f0 + kRbRows * rb + 8 * ((ra >> 1) & 1), m = m0 + 8 * (ra >> 2) + (ra & 1);
    return m < P::row_end(a, tile) && fe < a.N ? m * a.N + fe : -1;
  };
  auto value = [&](int r) { return sum[r / kAccRegs][r % kAccRegs]; };
  const int contributors = P::contributors(a, t);
  if (contributors == 1) {
#pragma unroll
    for (int r = 0; r < kRegs; ++r)
      if (const int i = index(r); i >= 0) C[i] = dev::from_float<T>(value(r));
    return;
  }
#pragma unroll
  for (int r = 0; r < kRegs; ++r)
    if (const int i = index(r); i >= 0) dev::splitk::add(a.ws, i, value(r));
  if (!is_last(a.counters + t, contributors)) return;
  constexpr int kChunk = kRegs < 16 ? kRegs : 16;
#pragma unroll
  for (int r0 = 0; r0 < kRegs; r0 += kChunk) {
    int idx[kChunk];
#pragma unroll
    for (int r = 0; r < kChunk; ++r) idx[r] = index(r0 + r);
    dev::splitk::take_all(a.ws, idx,
                          [&](int r, float sum) { C[idx[r]] = dev::from_float<T>(sum); });
  }
}

}  // namespace kbit::variants::ws
