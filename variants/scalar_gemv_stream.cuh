// Variant 04's stream: the block's configuration and shared-memory layout, the kernel's
// arguments, the bulk-copy ring and its producer lane, and the A windows the consumers stage.
// The consumers, the split-tile ends, the kernel and its host entry points are in
// variants/04_scalar_gemv.cu, the one file that includes this (hence the anonymous namespace).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "variants/common/barrier.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cp_async.cuh"
#include "variants/common/pair_lut.cuh"
#include "variants/common/stage_ring.cuh"
#include "variants/common/wait_stats.cuh"
#include "variants/gemv_stripes.hpp"
#include "variants/scalar_gemv_kernels.hpp"
#include "variants/scalar_gemv_knobs.hpp"

namespace kbit::variants {
namespace {

constexpr bool kWaitStats = KBIT_GEMV_WAIT_STATS != 0;

struct Config {
  // Shared memory of the pair table; the stream-only diagnostic needs none (room for stages).
  static constexpr int kLutBytes = KBIT_GEMV_DIAG_NO_MATH ? 0 : dev::pair_lut::kBytes;
  // Layout, unit and block: variants/scalar_gemv_kernels.hpp (the host plan reads them too).
  static constexpr int kConsumers = scalar_gemv::kConsumers, kThreads = scalar_gemv::kThreads;
  static constexpr int kTileK = scalar_gemv::kTileK, kTileN = scalar_gemv::kTileN;
  static constexpr int kBlocksPerTile = kTileN * kTileK / 32;  // 256 blocks of 32 per tile
  static constexpr int kUnitTiles = scalar_gemv::kUnitTiles;
  static constexpr int kUnitK = kUnitTiles * kTileK;
  static constexpr int kStages = KBIT_GEMV_STAGES;  // units in flight per block (bulk-copy ring)
  static constexpr int kMaxRegs = KBIT_GEMV_MAX_REGS;
  static constexpr int kKtStride = 144;  // bytes of staged A per (row, k-tile): 2 x 16 pairs
                                         // + 16 pad, so the quads' B loads hit other banks
  static constexpr int kUnitStride = kUnitTiles * kKtStride;  // staged A per (row, unit)
  static constexpr int kWindowRowUnits = KBIT_GEMV_WINDOW;    // staged A: rows x units, 9 KB at
                                                              // 16: M = 1 stages 16 units a time
  static constexpr int kMaxRows = scalar_gemv::kMaxRows;
  static constexpr int kBarrierBytes = 128;  // the ring's mbarriers, padded
  static constexpr int kMaxCluster = scalar_gemv::kMaxCluster;
  static_assert(dev::RingBarriers<kStages, kConsumers>::kBytes <= kBarrierBytes,
                "mbarriers must fit their slot");
  static_assert(kConsumers / 32 * 16 == kTileN, "one n-tile per unit");
};

template <int K>
__host__ __device__ constexpr int tile_words() {
  return Config::kBlocksPerTile * K;
}
// One ring stage: the planes of the unit's 4 k-tiles, then their absmax codes. The k-tile
// chunks are staggered (pads below) so that the 4 lanes of a quad, which read the same column
// of 4 different k-tiles, hit different banks: with chunks 4 KB apart every plane LDS.128 was a
// 4-way conflict (a third of all shared-memory wavefronts, Nsight Compute).
__host__ __device__ constexpr int plane_pad(int t) {
  return t == 0 ? 0 : t == 1 ? 16 : t == 2 ? 64 : 80;
}
__host__ __device__ constexpr int code_pad(int t) {
  return t < 2 ? 0 : 16;
}
template <int K>
__host__ __device__ constexpr int plane_chunk(int t) {  // byte offset of k-tile t's planes
  return t * tile_words<K>() * 4 + plane_pad(t);
}
__host__ __device__ constexpr int code_chunk(int t) {  // byte offset of k-tile t's codes
  return t * Config::kBlocksPerTile + code_pad(t);
}
template <int K>
__host__ __device__ constexpr int stage_plane_bytes() {
  return plane_chunk<K>(Config::kUnitTiles);
}
template <int K>
__host__ __device__ constexpr int stage_bytes() {
  return stage_plane_bytes<K>() + code_chunk(Config::kUnitTiles);
}
// Dynamic shared memory: barriers, the pair table, the weight ring, the A window (`rows` rows).
template <int K>
__host__ __device__ constexpr int smem_bytes(int rows) {
  return Config::kBarrierBytes + Config::kLutBytes + Config::kStages * stage_bytes<K>() +
         Config::kWindowRowUnits * Config::kUnitStride;
}

using gemv::Segment;  // the host schedule: variants/gemv_stripes.hpp

struct KernelArgs {
  const void* A;
  void* C;
  const uint32_t* packed;
  const uint8_t* absmax;
  long long expert_words, expert_bytes;  // per-expert strides of the tiled weights
  int N, K_dim, n_tiles, k_tiles;
  const Segment* segs;   // every block's segments, in block order
  const int* first_seg;  // block b runs segs[first_seg[b] .. first_seg[b+1])
  float* ws;             // split-K workspace [rows of C][N], zero between calls
  int* counters;         // one per output tile, zero between calls
  int cluster;           // > 1: each split tile's contributors are one cluster of this size
  int tagged;  // > 1: each split tile's c contributors (blocks tc..tc+c-1) end through `tags`
  unsigned long long* tags;  // [tile][contributor 1..c-1][row][128] tagged sums, zero between calls
  int pdl;                   // a dependent launch (GemmArgs::pdl): see run_segment's kFirstTwo
  float cb[32];
};

// The weight ring: its barriers (common/stage_ring.cuh; the extra one is `recv`, where rank 0
// of a cluster waits for the other ranks' sums) at the start of shared memory, its stages at
// `offset`: the planes of the unit's 4 k-tiles, then their codes.
template <int K>
struct Ring : dev::RingBarriers<Config::kStages, Config::kConsumers> {
  unsigned char* stages;  // generic pointer to stage 0

  __device__ Ring(unsigned char* smem, int offset)
      : dev::RingBarriers<Config::kStages, Config::kConsumers>(dev::smem_addr(smem)),
        stages(smem + offset) {}
  __device__ uint32_t recv() const { return this->extra(); }
  __device__ unsigned char* planes(int s) const { return stages + s * stage_bytes<K>(); }
  __device__ unsigned char* codes(int s) const { return planes(s) + stage_plane_bytes<K>(); }
};

// The producer (one lane of the last warp): walks the block's segments in the consumers' order
// and copies each unit's planes and codes (per k-tile: one contiguous chunk of each) into the
// next free stage. k-tiles past the end of K are not copied: their A is zero.
template <int K>
__device__ void produce(const KernelArgs& a, const Ring<K>& ring) {
  constexpr uint32_t kPlaneBytes = tile_words<K>() * 4, kCodeBytes = Config::kBlocksPerTile;
  uint32_t q = 0;
  dev::wait_stats::Stopwatch<kWaitStats> empty_wait;
  for (int s = a.first_seg[blockIdx.x]; s < a.first_seg[blockIdx.x + 1]; ++s) {
    const Segment g = a.segs[s];
    const uint32_t* planes = a.packed + g.expert * a.expert_words;
    const uint8_t* codes = a.absmax + g.expert * a.expert_bytes;
    for (int u = g.u0; u < g.u1; ++u, ++q) {
      const int st = Ring<K>::stage(q);
      const int kt0 = u * Config::kUnitTiles;
      const int nk = min(Config::kUnitTiles, a.k_tiles - kt0);
      if (KBIT_GEMV_DIAG_NO_MATH == 5) {  // no consumers: refill once the last copy landed
        if (q >= Config::kStages) dev::mbar_wait(ring.full(st), Ring<K>::parity(q) ^ 1u);
      } else {
        empty_wait.start();
        dev::mbar_wait(ring.empty(st), Ring<K>::parity(q) ^ 1u);  // fresh barrier: passes at once
        empty_wait.stop();
      }
      dev::fence_proxy_async_shared();  // the consumers' reads of this stage come first
      constexpr bool kCodes = KBIT_GEMV_DIAG_NO_MATH != 2;
      dev::mbar_arrive_expect_tx(ring.full(st),
                                 uint32_t(nk) * (kPlaneBytes + (kCodes ? kCodeBytes : 0)));
      for (int i = 0; i < nk; ++i) {
        const long long tile = (long long)(kt0 + i) * a.n_tiles + g.nt;
        dev::bulk_copy_g2s(dev::smem_addr(ring.planes(st) + plane_chunk<K>(i)),
                           planes + tile * tile_words<K>(), kPlaneBytes, ring.full(st));
        if (kCodes)
          dev::bulk_copy_g2s(dev::smem_addr(ring.codes(st) + code_chunk(i)),
                             codes + tile * Config::kBlocksPerTile, kCodeBytes, ring.full(st));
      }
    }
  }
  if (kWaitStats) dev::wait_stats::add(dev::wait_stats::kProducerEmpty, empty_wait.total);
  if (KBIT_GEMV_DIAG_NO_MATH == 5)  // nobody else waits for the last copies: drain them
    for (uint32_t r = q > Config::kStages ? q - Config::kStages : 0; r < q; ++r)
      dev::mbar_wait(ring.full(Ring<K>::stage(r)), Ring<K>::parity(r));
}

// Units of A staged at a time for MV rows: one window barrier per 16 / MV units (each one
// stalls the consumers on a global load while the ring can only run kStages units ahead).
template <int MV>
__host__ __device__ constexpr int window_units() {
  static_assert(Config::kWindowRowUnits >= Config::kMaxRows, "a window holds a unit of 4 rows");
  return Config::kWindowRowUnits / MV;
}

// Byte offset of pair p of (row m, unit u, k-tile kt, k-block kb) in the staged A window.
template <int MV>
__device__ __forceinline__ int a_offset(int m, int u, int kt, int kb, int p) {
  return (m * window_units<MV>() + u) * Config::kUnitStride + kt * Config::kKtStride + kb * 64 +
         p * 4;
}

// Stages rows [row0, row0 + MV) of A, units [u, u + nunits), into shared memory as 16-bit
// pairs in the MMA's k order: pair (R, q) of a block = elements (R + 8q, R + 8q + 4), stored
// at p = 4R + q. Elements past K_dim are zero (they meet the unit's uncopied k-tiles).
template <int MV, typename T>
__device__ void stage_a(const KernelArgs& a, int row0, int u, int nunits, unsigned char* s_a) {
  const T* A = static_cast<const T*>(a.A);
  constexpr int kGroups = Config::kUnitK / 8;  // 8 elements (one uint4) per group
  // A full window is kIters groups per consumer thread (2), all loaded before any is stored:
  // one L2 round trip per window, where load-then-store took one per group (session 15).
  constexpr int kIters = Config::kWindowRowUnits * kGroups / Config::kConsumers;
  static_assert(kIters * Config::kConsumers == Config::kWindowRowUnits * kGroups, "whole groups");
  const int groups = MV * nunits * kGroups;
  auto place = [&](int gi, int& m, int& un, int& e0) {  // row, unit and element of group gi
    m = gi / (nunits * kGroups);
    const int rem = gi % (nunits * kGroups);
    un = rem / kGroups, e0 = (rem % kGroups) * 8;
  };
  uint4 v[kIters];
#pragma unroll
  for (int r = 0; r < kIters; ++r) {
    const int gi = int(threadIdx.x) + r * Config::kConsumers;
    int m, un, e0;
    place(gi, m, un, e0);
    const long long k = (long long)(u + un) * Config::kUnitK + e0;
    v[r] = make_uint4(0, 0, 0, 0);
    if (gi < groups && k < a.K_dim)  // K_dim is a multiple of 32: a group is all in or all out
      v[r] = __ldg(reinterpret_cast<const uint4*>(A + (long long)(row0 + m) * a.K_dim + k));
  }
#pragma unroll
  for (int r = 0; r < kIters; ++r) {
    const int gi = int(threadIdx.x) + r * Config::kConsumers;
    if (gi >= groups) break;
    int m, un, e0;
    place(gi, m, un, e0);
    const int kt = e0 / 64, kb = (e0 / 32) % 2, q = (e0 % 32) / 8;
    // Elements e0 + r and e0 + 4 + r form pair R = r: low halves of (x, z), then high halves.
    const uint32_t pr[4] = {
        __byte_perm(v[r].x, v[r].z, 0x5410), __byte_perm(v[r].x, v[r].z, 0x7632),
        __byte_perm(v[r].y, v[r].w, 0x5410), __byte_perm(v[r].y, v[r].w, 0x7632)};
#pragma unroll
    for (int i = 0; i < 4; ++i)
      *reinterpret_cast<uint32_t*>(s_a + a_offset<MV>(m, un, kt, kb, 4 * i + q)) = pr[i];
  }
}

}  // namespace
}  // namespace kbit::variants
