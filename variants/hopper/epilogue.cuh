// The shared mainloop's epilogue: a tile's sums to C, or through the self-cleaning split-K
// workspace (variants/common/splitk.cuh) when several blocks contribute to the tile. The mainloop
// (mainloop.cuh) and variant 07's own kernel store through it.
#pragma once
#include <type_traits>

#include "variants/common/barrier.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/splitk.cuh"
#include "variants/hopper/config.cuh"

namespace kbit::variants::ws {

// Tile t's sums: a consumer thread's TT / 2 accumulators in the m16n8 (and wgmma) layout for
// each of its RB 16-row blocks, kRbRows rows apart (16: adjacent; 64: the two halves of a
// warpgroup's 128 rows; 128: its two n-tiles on a 256-row tile), sum[rb][4 n8 + i] holding weight
// row row0 + kRbRows rb + 8 (i / 2) of the tile and token 8 n8 + 2 (lane % 4) + i % 2. Straight to
// C when the block is the tile's only contributor, else through the split-K workspace (tile-local,
// 16-byte reductions: below) as the split policy says: which contributors add their sums (adds()),
// which one stores the tile (stores(counter, contributors): it also syncs the storing group), and
// whether the storer adds its own sums to the workspace's (kOwn): LastArrival and FixedOwner below.
template <int TT, typename T, typename P, int RB, int kRbRows, typename Split>
__device__ __forceinline__ void store_tile_sums_split(const typename P::Args& a, int t, int row0,
                                                      int lane, const float (&sum)[RB][TT / 2],
                                                      Split&& split) {
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
  // The workspace is tile-local (launcher.cu sizes it tiles x TT x P::kTileRows): tile t's sums
  // at ws + t TT P::kTileRows; accumulators 4 j .. 4 j + 3 of (16-row block b, lane) at ((b TT / 8
  // + j) 32 + lane) 4, so that a warp's 16-byte reductions of one j cover 512 contiguous bytes (4
  // lines). No bounds: a tile's sums past M or N are added and cleared like the rest, never stored
  // to C.
  float* const tile_ws = a.ws + std::size_t(t) * TT * P::kTileRows;
  auto slot = [&](int rb, int j) {
    return tile_ws + (((row0 / 16 + kRbRows / 16 * rb) * (kAccRegs / 4) + j / 4) * 32 + lane) * 4;
  };
  if (split.adds()) {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int j = 0; j < kAccRegs; j += 4)
        dev::splitk::add4(slot(rb, j), sum[rb][j], sum[rb][j + 1], sum[rb][j + 2], sum[rb][j + 3]);
  }
  if (!split.stores(a.counters + t, contributors)) return;
  // The storer: its sums kBatch = min(Split::kLoadFloats, RB TT / 2) at a time across row
  // blocks, a batch's loads in flight together (one L2 round trip a batch: the stores to C and
  // the zeroes keep the next batch's loads behind them), then stored to C where inside it (with
  // its own added where kOwn) and zeroed for the next call.
  using S = std::decay_t<Split>;
  constexpr int kBatch = S::kLoadFloats < kRegs ? S::kLoadFloats : kRegs;
  static_assert(kAccRegs % 4 == 0 && kBatch % 4 == 0 && kRegs % kBatch == 0, "whole float4s");
#pragma unroll
  for (int r0 = 0; r0 < kRegs; r0 += kBatch) {
    float4 v[kBatch / 4];
#pragma unroll
    for (int q = 0; q < kBatch / 4; ++q) {
      const int r = r0 + 4 * q;
      v[q] = dev::splitk::load_sums4(slot(r / kAccRegs, r % kAccRegs));
    }
#pragma unroll
    for (int q = 0; q < kBatch / 4; ++q) {
      const int r = r0 + 4 * q;
      const float f[4] = {v[q].x, v[q].y, v[q].z, v[q].w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (const int i = index(r + e); i >= 0)
          C[i] = dev::from_float<T>(S::kOwn ? f[e] + value(r + e) : f[e]);
      dev::splitk::clear4(slot(r / kAccRegs, r % kAccRegs));
    }
  }
}

// Every contributor adds; the last to arrive (is_last(counter, contributors): the consumers'
// arrival, which syncs them) stores, loading kLoadFloats_ sums a round trip (the registers that
// hold them beside the accumulators: 16 where the kernel's budget is tight).
template <typename IsLast, int kLoadFloats_>
struct LastArrival {
  static constexpr bool kOwn = false;
  static constexpr int kLoadFloats = kLoadFloats_;
  IsLast& is_last;
  __device__ __forceinline__ bool adds() const { return true; }
  __device__ __forceinline__ bool stores(int* counter, int contributors) const {
    return is_last(counter, contributors);
  }
};

template <int TT, typename T, typename P, int RB, int kRbRows = 16, int kLoadFloats = 16,
          typename IsLast>
__device__ __forceinline__ void store_tile_sums(const typename P::Args& a, int t, int row0,
                                                int lane, const float (&sum)[RB][TT / 2],
                                                IsLast&& is_last) {
  store_tile_sums_split<TT, T, P, RB, kRbRows>(a, t, row0, lane, sum,
                                               LastArrival<IsLast, kLoadFloats>{is_last});
}

// A fixed owner (variant 07's own kernel, a group of Threads consumer threads a walk): the piece
// that covers a split tile's first k-steps (`owner`: ks0 = 0, always the last piece of its walk)
// stores the tile; every other contributor's piece is the first of its walk's stripe (after whole
// tiles, which never wait: variants/tests/test_fragment_pieces.cpp). A contributor adds its sums
// into the workspace and releases one count without waiting: its leader's warp syncs on
// `release_bar` (the group's reductions issued) and the leader releases (red.release); the other
// warps arrive and go on with their walk. The owner's leader acquires contributors - 1 counts,
// the group syncs on `owner_bar`, and each thread adds the workspace's sums to its own (no
// reduction of the owner's), stores C and clears. Each barrier is used once a walk at most (a
// walk has one piece of either kind at most), so arrivals never mix phases.
// The owner loads kLoadFloats_ sums a round trip (its accumulators stay live beside them).
template <int Threads, int kLoadFloats_>
struct FixedOwner {
  static constexpr bool kOwn = true;
  static constexpr int kLoadFloats = kLoadFloats_;
  bool owner;
  int release_bar, owner_bar, tid;
  __device__ __forceinline__ bool adds() const { return !owner; }
  __device__ __forceinline__ bool stores(int* counter, int contributors) const {
    if (!owner) {
      if (tid < 32) {
        dev::sync_named<Threads>(release_bar);
        if (tid == 0) dev::splitk::release_count(counter);
      } else {
        dev::arrive_named<Threads>(release_bar);
      }
      return false;
    }
    if (tid == 0) dev::splitk::acquire_counts(counter, contributors - 1);
    dev::sync_named<Threads>(owner_bar);
    return true;
  }
};

template <int TT, typename T, typename P, int RB, int kRbRows, int Threads, int kLoadFloats = 16>
__device__ __forceinline__ void store_tile_sums_owned(const typename P::Args& a, int t, bool owner,
                                                      int row0, int lane,
                                                      const float (&sum)[RB][TT / 2],
                                                      int release_bar, int owner_bar, int tid) {
  store_tile_sums_split<TT, T, P, RB, kRbRows>(
      a, t, row0, lane, sum, FixedOwner<Threads, kLoadFloats>{owner, release_bar, owner_bar, tid});
}

}  // namespace kbit::variants::ws
