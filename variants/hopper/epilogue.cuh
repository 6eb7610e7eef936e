// The shared mainloop's epilogue: a tile's sums to C, or through the self-cleaning split-K
// workspace (variants/common/splitk.cuh) when several blocks contribute to the tile. The mainloop
// (mainloop.cuh) and variant 07's own kernel store through it.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "variants/common/barrier.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/smem_access.cuh"
#include "variants/common/splitk.cuh"
#include "variants/hopper/config.cuh"

namespace kbit::variants::ws {

// The split-K workspace is tile-local (launcher.cu sizes it tiles x TT x P::kTileRows): tile t's
// sums at ws + t TT P::kTileRows; accumulators 4 j .. 4 j + 3 of (16-row block b, lane) at ((b TT
// / 8 + j) 32 + lane) 4, so that a warp's 16-byte reductions of one j cover 512 contiguous bytes
// (4 lines). No bounds: a tile's sums past M or N are added (or stored) like the rest, never
// stored to C. The slot of a thread's accumulators j .. j + 3 of its row block rb (row0: its first
// row in the tile, kRbRows between its row blocks).
template <int TT, typename P, int kRbRows>
__device__ __forceinline__ float* workspace_slot(const typename P::Args& a, int t, int row0,
                                                 int lane, int rb, int j) {
  constexpr int kAccRegs = TT / 2;
  float* const tile_ws = a.ws + std::size_t(t) * TT * P::kTileRows;
  return tile_ws + (((row0 / 16 + kRbRows / 16 * rb) * (kAccRegs / 4) + j / 4) * 32 + lane) * 4;
}

// Whether a split tile's partial sums are stored whole rather than added: under a fixed owner
// (Split::kOwn: the owner adds nothing) a tile of two contributors has one partial, so its
// contributor stores it (no reduction at L2) and the owner leaves the slots as they are (the next
// call stores them again: nothing to clear). At 128 tokens on Llama3-70B gate/up the workspace's
// zeroes at the walks' ends cost ~3.7 us and the reductions ~2.3 (variant 07's README, build U).
// Tiles of three or more contributors add into the zeroed workspace and are cleared as before.
// Only the fixed owner (variant 07's own kernel, DenseTiles::Args) reads the flag.
template <typename Split, typename Args>
__device__ __forceinline__ bool stored_partial(const Args& a, int contributors) {
  if constexpr (std::decay_t<Split>::kOwn)
    return a.store_sole_partial != 0 && contributors == 2;
  else
    return false;
}

// A split tile's sums through the workspace, as the split policy says: which contributors add
// their sums (adds()), which one stores the tile (stores(counter, contributors): it also syncs the
// storing group), and whether the storer adds its own sums to the workspace's (kOwn): LastArrival
// and FixedOwner below. The storer loads kBatch = min(Split::kLoadFloats, RB TT / 2) sums at a time
// across row blocks (a batch's loads in flight together: one L2 round trip), hands each final sum
// to use(r, v) (accumulator r of all RB blocks) and each float4's slot to used(slot) once its four
// are used (not where the partial is stored: stored_partial). False where this group does not
// store the tile.
template <int TT, typename P, int RB, int kRbRows, typename Split, typename Use, typename Used>
__device__ __forceinline__ bool take_split_sums(const typename P::Args& a, int t, int row0,
                                                int lane, const float (&sum)[RB][TT / 2],
                                                int contributors, Split&& split, Use&& use,
                                                Used&& used) {
  constexpr int kAccRegs = TT / 2, kRegs = RB * kAccRegs;
  auto slot = [&](int rb, int j) {
    return workspace_slot<TT, P, kRbRows>(a, t, row0, lane, rb, j);
  };
  const bool stored = stored_partial<Split>(a, contributors);
  if (split.adds()) {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int j = 0; j < kAccRegs; j += 4) {
        if (stored)
          dev::splitk::store4(slot(rb, j), sum[rb][j], sum[rb][j + 1], sum[rb][j + 2],
                              sum[rb][j + 3]);
        else
          dev::splitk::add4(slot(rb, j), sum[rb][j], sum[rb][j + 1], sum[rb][j + 2],
                            sum[rb][j + 3]);
      }
  }
  if (!split.stores(a.counters + t, contributors)) return false;
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
      for (int e = 0; e < 4; ++e) {
        const float own = sum[(r + e) / kAccRegs][(r + e) % kAccRegs];
        use(r + e, S::kOwn ? f[e] + own : f[e]);
      }
      if (!stored) used(slot(r / kAccRegs, r % kAccRegs));
    }
  }
  return true;
}

// Tile t's sums: a consumer thread's TT / 2 accumulators in the m16n8 (and wgmma) layout for
// each of its RB 16-row blocks, kRbRows rows apart (16: adjacent; 64: the two halves of a
// warpgroup's 128 rows; 128: its two n-tiles on a 256-row tile), sum[rb][4 n8 + i] holding weight
// row row0 + kRbRows rb + 8 (i / 2) of the tile and token 8 n8 + 2 (lane % 4) + i % 2. Straight to
// C by 2-byte stores when the block is the tile's only contributor, else through the split-K
// workspace (take_split_sums).
template <int TT, typename T, typename P, int RB, int kRbRows, typename Split>
__device__ __forceinline__ void store_tile_sums_split(const typename P::Args& a, int t, int row0,
                                                      int lane, const float (&sum)[RB][TT / 2],
                                                      Split&& split) {
  constexpr int kAccRegs = TT / 2, kRegs = RB * kAccRegs;
  const TileInfo tile = P::tile(a, t);
  const int f0 = tile.nt * Config::kTileN + row0, m0 = tile.a_row + 2 * (lane & 3);
  T* C = static_cast<T*>(a.C);
  // Index into C of accumulator r (of all RB blocks), or -1 outside the tile's rows or N;
  // M * N < 2^31.
  auto index = [&](int r) {
    const int rb = r / kAccRegs, ra = r % kAccRegs;
    const int fe = f0 + kRbRows * rb + 8 * ((ra >> 1) & 1), m = m0 + 8 * (ra >> 2) + (ra & 1);
    return m < P::row_end(a, tile) && fe < a.N ? m * a.N + fe : -1;
  };
  auto put = [&](int r, float v) {
    if (const int i = index(r); i >= 0) C[i] = dev::from_float<T>(v);
  };
  const int contributors = P::contributors(a, t);
  if (contributors == 1) {
#pragma unroll
    for (int r = 0; r < kRegs; ++r) put(r, sum[r / kAccRegs][r % kAccRegs]);
    return;
  }
  // Each float4 zeroed for the next call once stored (the stores to C and the zeroes keep the
  // next batch's loads behind them).
  take_split_sums<TT, P, RB, kRbRows>(a, t, row0, lane, sum, contributors, split, put,
                                      [](float* slot) { dev::splitk::clear4(slot); });
}

template <typename T>
__device__ __forceinline__ unsigned short bits_of(T v) {
  static_assert(sizeof(T) == 2, "a 16-bit output type");
  unsigned short b;
  memcpy(&b, &v, 2);
  return b;
}

// A tile's sums to C through shared memory (variant 07's own kernel, the last piece of a walk:
// its pipeline's ring is free once the group has synced after the piece, every stage it filled
// consumed). Each thread converts its sums (with the workspace's where the tile is split and its
// group stores it, by `split` as in store_tile_sums_split) to T into a [token][row] tile at
// `stage` (a shared-window address; a token's P::kTileRows rows padded by 16 bytes, so that a
// warp's 2-byte writes to 4 tokens fall in different banks), the group syncs on `bar`, and each
// thread stores 16 bytes of one token's rows: a warp writes whole 128-byte lines, where
// store_tile_sums_split's 2-byte stores cover 16 bytes of 4 lines an instruction.
template <int TT, typename T, typename P, int RB, int kRbRows, int Threads, typename Split>
__device__ __forceinline__ void store_tile_staged(const typename P::Args& a, int t, int row0,
                                                  int lane, const float (&sum)[RB][TT / 2],
                                                  Split&& split, uint32_t stage, int tid, int bar) {
  constexpr int kAccRegs = TT / 2, kRegs = RB * kAccRegs, kRows = P::kTileRows;
  constexpr int kPitch = 2 * kRows + 16;  // bytes a token's row run, padded
  static_assert(sizeof(T) == 2, "a 16-bit output type");
  const TileInfo tile = P::tile(a, t);
  auto value = [&](int r) { return sum[r / kAccRegs][r % kAccRegs]; };
  // Accumulator r's element in the staged tile: row row0 + kRbRows rb (+ 8), token 2 (lane % 4)
  // (+ 1, + 8 n8), the layout of store_tile_sums_split's index.
  auto put = [&](int r, float v) {
    const int rb = r / kAccRegs, ra = r % kAccRegs;
    const int row = row0 + kRbRows * rb + 8 * ((ra >> 1) & 1);
    const int token = 2 * (lane & 3) + 8 * (ra >> 2) + (ra & 1);
    dev::smem::store16(stage, uint32_t(token * kPitch + 2 * row), bits_of(dev::from_float<T>(v)));
  };
  const int contributors = P::contributors(a, t);
  if (contributors == 1) {
    dev::sync_named<Threads>(bar);  // the group's reads of the ring are done: it is free
#pragma unroll
    for (int r = 0; r < kRegs; ++r) put(r, value(r));
  } else {
    // The storer's stores() synced its group after the piece: the ring is free. Zeroes for the
    // next call once every sum is read (no load waits behind them).
    if (!take_split_sums<TT, P, RB, kRbRows>(a, t, row0, lane, sum, contributors, split, put,
                                             [](float*) {}))
      return;
    if (!stored_partial<Split>(a, contributors))
#pragma unroll
      for (int r = 0; r < kRegs; r += 4)
        dev::splitk::clear4(
            workspace_slot<TT, P, kRbRows>(a, t, row0, lane, r / kAccRegs, r % kAccRegs));
  }
  dev::sync_named<Threads>(bar);  // the tile is staged
  T* C = static_cast<T*>(a.C);
  constexpr int kChunks = kRows / 8;  // 16-byte runs of 8 rows a token
  const int f0 = tile.nt * Config::kTileN, tokens = P::row_end(a, tile) - tile.a_row;
  const bool whole_runs = a.N % 8 == 0 && (reinterpret_cast<std::uintptr_t>(C) & 15) == 0;
  for (int i = tid; i < TT * kChunks; i += Threads) {
    const int m = i / kChunks, f = f0 + 8 * (i % kChunks);
    if (m >= tokens || f >= a.N) continue;
    const uint4 v = dev::smem::load128(stage, uint32_t(m * kPitch + 16 * (i % kChunks)));
    T* const out = C + std::size_t(tile.a_row + m) * a.N + f;
    if (whole_runs) {
      *reinterpret_cast<uint4*>(out) = v;
    } else {
      const T* e = reinterpret_cast<const T*>(&v);
      for (int j = 0; j < 8 && f + j < a.N; ++j) out[j] = e[j];
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
// into the workspace (stores them, where it is the tile's one other contributor: stored_partial)
// and releases one count without waiting: its leader's warp syncs on `release_bar` (the group's
// reductions or stores issued) and the leader releases (red.release); the other
// warps arrive and go on with their walk. The owner's leader acquires contributors - 1 counts,
// the group syncs on `owner_bar`, and each thread adds the workspace's sums to its own (no
// reduction of the owner's), stores C and clears. release_bar is used once a walk at most (a walk
// has one contributor's piece at most); owner_bar once, or (store_tile_staged) two or three times
// in a row, each a sync of the whole group: arrivals never mix phases.
// compute-sanitizer's racecheck (CUDA 13.0) reports RAW hazards on the staged store's tile in a
// group that released a count this way earlier in its walk: it misreads bar.sync ordering after a
// bar.arrive on another barrier (harness/tools/racecheck_probe.cu, mode 2: a correct program).
// Every warp syncing, or each warp releasing its own count, kept racecheck quiet and showed no
// gain (F-064); harness/gpu_batch.sh's sanitize step checks the two halves apart (the owner's
// store through the ring after a release is the one path it cannot check).
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
    // bar.sync is .aligned: the leader's warp reconverged first, so that it arrives once (a
    // second arrival of its lanes would count toward the barrier's next use: the staged store's).
    __syncwarp();
    dev::sync_named<Threads>(owner_bar);
    return true;
  }
};

}  // namespace kbit::variants::ws
