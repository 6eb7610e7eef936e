// Variant 04's stream: the block's configuration and shared-memory layout, the kernel's
// arguments, the bulk-copy ring and its producer lane, and the A windows the consumers stage.
// The consumers, the split-tile ends, the kernel and its host entry points are in
// scalar_gemv.cu, the one file that includes this (hence the anonymous namespace).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "variants/04_scalar_gemv/decode.cuh"
#include "variants/04_scalar_gemv/kernels.hpp"
#include "variants/04_scalar_gemv/stripes.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cp_async.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/stage_ring.cuh"

namespace kbit::variants {
namespace {

// The tuning values (config.hpp) and the shared-memory layout they imply.
struct Config : scalar_gemv::Config {
  static constexpr int kLutBytes = dev::gemv_decode::kBytes;   // the 64 KB table
  static constexpr int kBlocksPerTile = kTileN * kTileK / 32;  // 256 blocks of 32 per tile
  static constexpr int kUnitK = kUnitTiles * kTileK;
  static constexpr int kKtStride = 144;  // bytes of staged A per (row, k-tile): 2 x 16 pairs
                                         // + 16 pad, so the quads' B loads hit other banks
  static constexpr int kUnitStride = kUnitTiles * kKtStride;  // staged A per (row, unit)
  static constexpr int kBarrierBytes = 128;                   // the ring's mbarriers, padded
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
         Config::template kWindowRowUnitsFor<K> * Config::kUnitStride;
}

using gemv::Segment;  // the host schedule: stripes.hpp

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
// of a cluster waits for the other ranks' sums) at the start of shared memory, then, in the
// kernels with a window warp, the A window's three (`win_full`: the warp's 32 lanes have stored
// it; `win_empty`: the 256 consumers are done with it; `win_go`: below), its stages at `offset`:
// the planes of the unit's 4 k-tiles, then their codes.
template <int K>
struct Ring : dev::RingBarriers<Config::kStages, Config::kConsumers> {
  using Base = dev::RingBarriers<Config::kStages, Config::kConsumers>;
  static_assert(Base::kBytes + 24 <= Config::kBarrierBytes, "the window's barriers fit too");
  unsigned char* stages;  // generic pointer to stage 0

  __device__ Ring(unsigned char* smem, int offset)
      : Base(dev::smem_addr(smem)), stages(smem + offset) {}
  // Thread 0 initializes the barriers (the window's where the kernel has a window warp); every
  // thread of the block must call (one __syncthreads).
  template <bool kWindowBarriers>
  __device__ void init() const {
    if (kWindowBarriers && threadIdx.x == 0) {
      dev::mbar_init(win_full(), 32);
      dev::mbar_init(win_empty(), Config::kConsumers);
      dev::mbar_init(win_go(), 1);
    }
    Base::init();
  }
  __device__ uint32_t recv() const { return this->extra(); }
  __device__ uint32_t win_full() const { return this->base + Base::kBytes; }
  __device__ uint32_t win_empty() const { return this->base + Base::kBytes + 8; }
  // In a dependent launch thread 0 arrives once the consumers have passed griddepcontrol.wait.
  __device__ uint32_t win_go() const { return this->base + Base::kBytes + 16; }
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
  for (int s = a.first_seg[blockIdx.x]; s < a.first_seg[blockIdx.x + 1]; ++s) {
    const Segment g = a.segs[s];
    const uint32_t* planes = a.packed + g.expert * a.expert_words;
    const uint8_t* codes = a.absmax + g.expert * a.expert_bytes;
    for (int u = g.u0; u < g.u1; ++u, ++q) {
      const int st = Ring<K>::stage(q);
      const int kt0 = u * Config::kUnitTiles;
      const int nk = min(Config::kUnitTiles, a.k_tiles - kt0);
      dev::mbar_wait(ring.empty(st), Ring<K>::parity(q) ^ 1u);  // fresh barrier: passes at once
      dev::fence_proxy_async_shared();  // the consumers' reads of this stage come first
      dev::mbar_arrive_expect_tx(ring.full(st), uint32_t(nk) * (kPlaneBytes + kCodeBytes));
      for (int i = 0; i < nk; ++i) {
        const long long tile = (long long)(kt0 + i) * a.n_tiles + g.nt;
        dev::bulk_copy_g2s(dev::smem_addr(ring.planes(st) + plane_chunk<K>(i)),
                           planes + tile * tile_words<K>(), kPlaneBytes, ring.full(st));
        dev::bulk_copy_g2s(dev::smem_addr(ring.codes(st) + code_chunk(i)),
                           codes + tile * Config::kBlocksPerTile, kCodeBytes, ring.full(st));
      }
    }
  }
}

// Units of A staged at a time for MV rows in the K-bit kernel: one window barrier per 16 / MV
// units (8 / MV at K = 5; each one stalls the consumers on a global load while the ring can only
// run kStages units ahead).
template <int K, int MV>
__host__ __device__ constexpr int window_units() {
  static_assert(Config::template kWindowRowUnitsFor<K> >= Config::kMaxRows,
                "a window holds 4 rows' unit");
  return Config::template kWindowRowUnitsFor<K> / MV;
}

// Byte offset of pair p of (row m, unit u, k-tile kt, k-block kb) in the staged A window.
template <int K, int MV>
__device__ __forceinline__ int a_offset(int m, int u, int kt, int kb, int p) {
  return (m * window_units<K, MV>() + u) * Config::kUnitStride + kt * Config::kKtStride + kb * 64 +
         p * 4;
}

// A window through the window warp's registers: lane l holds group l (elements 8l .. 8l + 7) of
// every (row m, unit un) of the window, in v[m * W + un] (W = window_units<K, MV>()): 16 groups of
// 16 bytes per lane in a full window at every MV (8 at K = 5), addressed from one pointer per row.
constexpr int kWindowIters = Config::kWindowRowUnits;
static_assert(Config::kUnitK / 8 == 32, "a lane's group per (row, unit)");

// Loads rows [row0, row0 + MV) of A, units [u, u + nunits), into the lane's registers; groups
// past K_dim are zero (they meet the unit's uncopied k-tiles; K_dim is a multiple of 32, so a
// group is all in or all out). All loads are in flight together.
template <int K, int MV, typename T>
__device__ __forceinline__ void load_window(const KernelArgs& a, int row0, int u, int nunits,
                                            int lane, uint4 (&v)[kWindowIters]) {
  constexpr int W = window_units<K, MV>();
  const T* A = static_cast<const T*>(a.A);
  const long long k0 = (long long)u * Config::kUnitK + 8 * lane;  // element of unit 0's group
  // Units of this window whose group lies inside K_dim: min(nunits, ceil((K_dim - k0) / 256)).
  const int inside =
      k0 >= a.K_dim ? 0 : min(nunits, int((a.K_dim - k0 + Config::kUnitK - 1) / Config::kUnitK));
#pragma unroll
  for (int m = 0; m < MV; ++m) {
    const uint4* src = reinterpret_cast<const uint4*>(A + (long long)(row0 + m) * a.K_dim + k0);
#pragma unroll
    for (int un = 0; un < W; ++un)
      v[m * W + un] = un < inside ? __ldg(src + un * (Config::kUnitK / 8)) : make_uint4(0, 0, 0, 0);
  }
}

// Stores group `lane` (elements e0 = 8 * lane .. e0 + 7) of (row m, unit un) as 16-bit pairs in
// the MMA's k order of the K-bit decode (decode.cuh): pair (R, q) of a block = elements
// (R + 8q, R + 8q + 4), at p = 4R + q; K = 2 (kQuadOrder): elements (8q + z + 4j, + 2) at
// p = 4q + 2z + j, one 16-byte store.
template <int K, int MV>
__device__ __forceinline__ void store_group(unsigned char* s_a, int m, int un, int lane,
                                            const uint4 x) {
  const int e0 = 8 * lane, kt = e0 / 64, kb = (e0 / 32) % 2, q = (e0 % 32) / 8;
  if constexpr (dev::gemv_decode::kQuadOrder<K>) {
    const uint4 pr = make_uint4(__byte_perm(x.x, x.y, 0x5410), __byte_perm(x.z, x.w, 0x5410),
                                __byte_perm(x.x, x.y, 0x7632), __byte_perm(x.z, x.w, 0x7632));
    *reinterpret_cast<uint4*>(s_a + a_offset<K, MV>(m, un, kt, kb, 4 * q)) = pr;
  } else {
    // Elements e0 + r and e0 + 4 + r form pair R = r: low halves of (x, z), then high halves.
    const uint32_t pr[4] = {__byte_perm(x.x, x.z, 0x5410), __byte_perm(x.x, x.z, 0x7632),
                            __byte_perm(x.y, x.w, 0x5410), __byte_perm(x.y, x.w, 0x7632)};
#pragma unroll
    for (int i = 0; i < 4; ++i)
      *reinterpret_cast<uint32_t*>(s_a + a_offset<K, MV>(m, un, kt, kb, 4 * i + q)) = pr[i];
  }
}

// Stores what load_window loaded.
template <int K, int MV>
__device__ __forceinline__ void store_window(int nunits, int lane, const uint4 (&v)[kWindowIters],
                                             unsigned char* s_a) {
  constexpr int W = window_units<K, MV>();
#pragma unroll
  for (int m = 0; m < MV; ++m)
#pragma unroll
    for (int un = 0; un < W; ++un) {
      if (un >= nunits) break;
      store_group<K, MV>(s_a, m, un, lane, v[m * W + un]);
    }
}

// The same window staged by the 256 consumer threads at once: every window of the kernels
// without a window warp (M = 1, 2, grouped), and the first window of a dependent launch in the
// dense kernels with one (the consumers are idle then, and the window warp alone took ~1 us longer,
// F-017). A full window is two groups per thread (one at K = 5), all loaded before any is stored:
// one L2 round trip (F-017). The caller's barriers publish it.
template <int K, int MV, typename T>
__device__ void stage_window_by_consumers(const KernelArgs& a, int row0, int u, int nunits,
                                          unsigned char* s_a) {
  const T* A = static_cast<const T*>(a.A);
  constexpr int kGroups = Config::kUnitK / 8;  // 8 elements (one uint4) per group
  constexpr int kIters = Config::template kWindowRowUnitsFor<K> * kGroups / Config::kConsumers;
  static_assert(kIters * Config::kConsumers == Config::template kWindowRowUnitsFor<K> * kGroups,
                "whole groups");
  const int groups = MV * nunits * kGroups;
  auto place = [&](int gi, int& m, int& un) {  // row and unit of group gi
    m = gi / (nunits * kGroups);
    un = (gi % (nunits * kGroups)) / kGroups;
  };
  const int lane = int(threadIdx.x) % kGroups;  // the group within its (row, unit)
  uint4 v[kIters];
#pragma unroll
  for (int r = 0; r < kIters; ++r) {
    const int gi = int(threadIdx.x) + r * Config::kConsumers;
    int m, un;
    place(gi, m, un);
    const long long k = (long long)(u + un) * Config::kUnitK + 8 * lane;
    v[r] = make_uint4(0, 0, 0, 0);
    if (gi < groups && k < a.K_dim)  // K_dim is a multiple of 32: a group is all in or all out
      v[r] = __ldg(reinterpret_cast<const uint4*>(A + (long long)(row0 + m) * a.K_dim + k));
  }
#pragma unroll
  for (int r = 0; r < kIters; ++r) {
    const int gi = int(threadIdx.x) + r * Config::kConsumers;
    if (gi >= groups) break;
    int m, un;
    place(gi, m, un);
    store_group<K, MV>(s_a, m, un, lane, v[r]);
  }
}

// Whether the kernel for MV rows (0: grouped) has the window warp below (a constant the device
// code can read; scalar_gemv::has_window_warp is a host function).
template <int MV>
constexpr bool kHasWindowWarp = scalar_gemv::has_window_warp(MV);

// The window warp of the M = 3, 4 kernels (F-017): stages the block's A windows, in the
// order the consumers use them, so that no consumer waits on a global load or a staging barrier.
// Window w is loaded into the warp's registers as soon as window w - 1 is published, stored once
// the consumers have released w - 1 (`win_empty`) and published on `win_full`: its loads are in
// flight while the consumers compute w - 1. In a dependent launch the warp starts once the
// consumers have passed griddepcontrol.wait (`win_go`), not waiting there from the block's
// start, and the consumers stage the first window themselves (they are idle then, and this warp
// alone took ~1 us longer); `win_full` then counts this warp's windows only.
// Not inlined: its 64 registers of window (32 at K = 5) then cannot push the consumers' code into
// spills.
template <int K, int MV, typename T>
__device__ __noinline__ void stage_windows(const KernelArgs& a, uint32_t win_full,
                                           uint32_t win_empty, uint32_t win_go,
                                           unsigned char* s_a) {
  static_assert(kHasWindowWarp<MV>, "only the kernels with a window warp");
  constexpr int W = window_units<K, MV>();
  const int lane = int(threadIdx.x) & 31;
  if (a.pdl) dev::mbar_wait(win_go, 0);  // the consumers passed griddepcontrol.wait
  dev::pdl::wait();  // A is the previous launch's memory until then (at once after win_go)
  uint32_t w = 0;
  for (int s = a.first_seg[blockIdx.x]; s < a.first_seg[blockIdx.x + 1]; ++s) {
    const Segment g = a.segs[s];
    const int n = g.u1 - g.u0;
    for (int i = 0; i < n; i += W, ++w) {
      if (w == 0 && a.pdl) continue;  // the consumers stage it
      const int nunits = min(W, n - i);
      uint4 v[kWindowIters];
      load_window<K, MV, T>(a, g.row0, g.u0 + i, nunits, lane, v);
      if (w > 0) dev::mbar_wait(win_empty, (w - 1) & 1u);
      store_window<K, MV>(nunits, lane, v, s_a);
      dev::mbar_arrive(win_full);  // releases this lane's stores to the consumers' acquire
    }
  }
}

}  // namespace
}  // namespace kbit::variants
