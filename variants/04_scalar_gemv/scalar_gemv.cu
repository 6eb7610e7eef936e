// Variant 04: GEMV for M = 1..4 over the tiled layout (tile_k 64, tile_n 128). Source: seeds
// 002_16a44ede122cec4e.txt ("scalar GEMV"), reworked for the H100 twice; the registry name
// stays. README.md beside this file says what changed and what each change bought:
//
// * 288 threads per block: 8 consumer warps and one producer warp. A work unit is one n-tile
//   (128 columns) x 4 k-tiles (256 k); the producer streams each unit (4 x 4 KB of planes +
//   4 x 256 B of absmax at K = 4) with cp.async.bulk into a 2-stage mbarrier ring. The M = 3, 4
//   kernels add a window warp (320 threads), which stages the A windows (F-018).
// * Dequantize by table, multiply on tensor cores (v6): one 4x4 bit transpose of a block's
//   planes puts two codebook indices in each byte (K = 3, 4); one PRMT + one LDS of a 64 KB
//   pair table turn a byte into the two weights as an fp16/bf16 pair, an mma.m16n8k16
//   A-operand register as it stands: 2.05 thread-instructions per weight (the seed's
//   per-weight shfl + FFMA: ~15; v1-v5: 4.3). K = 2 looks up four weights a byte (LDS.64),
//   K = 5 a 10-bit pair: decode.cuh (F-034).
// * The per-block scale rides on the MMA's N dimension. Consumer warp w owns columns
//   16w..16w+15 of the unit (MMA rows g and g+8, g = lane/4); quad lane t = lane%4 owns k-tile
//   t, both of its k-blocks. B holds the activations of block (k-tile t', kb) only in MMA
//   column t' (+4 for a second row of A), so C column t' is one block's unscaled sum: one FFMA
//   per block applies the scale, and the sums stay fp32. The k order inside a block is
//   permuted alike for A and B, in the order of the K-bit decode (decode.cuh: pair (R, q) =
//   elements R + 8q, R + 8q + 4; K = 2 its quads).
// * Host-cut equal contiguous stripes of (n-tile, k-unit) units, one per resident block
//   (Marlin's), rounded to k-bands of a tile where cheap (stripes.hpp); a stripe that ends
//   inside a tile adds into the self-cleaning split-K workspace (common/splitk.cuh).
// * With GemmArgs::pdl the ring, the table and the first units are fetched while the previous
//   launch drains; A, C and the workspace wait behind griddepcontrol.wait (common/pdl.cuh).
//
// grouped_scalar_gemv runs the same segments over (expert, rows <= 4) pairs: MoE decode in
// one launch. The stage layout, the kernel's arguments, the producer and the A windows are
// stream.cuh; this file has the consumers, the ends and the kernel. The host side (setup: the
// plan; run: the checks) is plan.cpp, which sees the kernels through kernels.hpp.
#include <cuda_runtime.h>

#include <utility>

#include "variants/04_scalar_gemv/decode.cuh"
#include "variants/04_scalar_gemv/kernels.hpp"
#include "variants/04_scalar_gemv/stream.cuh"
#include "variants/04_scalar_gemv/stripes.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/bitplane.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cluster.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/dispatch.hpp"
#include "variants/common/dtype.cuh"
#include "variants/common/launch.hpp"
#include "variants/common/load.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/common/stage_ring.cuh"

namespace kbit::variants {
namespace {

// What a consumer thread needs of one unit: its k-tile's planes of columns g and g+8 (both
// k-blocks) and the absmax codes of the blocks whose MMA sums it holds.
template <int K>
struct UnitRegs {
  uint32_t p[2][2][K];   // [column lo/hi][kb][plane]
  uint32_t codes[2][2];  // [column lo/hi][k-tile 2(t&1) + i]: kb 0 in byte 0, kb 1 in byte 1
};

// Per-thread constants of the consumer role.
struct Lane {
  int lane, g, t;                   // lane, MMA row group g = lane/4, quad lane t = lane%4
  int col_lo;                       // column of MMA row g in the unit; row g+8 is col_lo + 8
  dev::gemv_decode::LaneCols cols;  // the lane's columns of the table
  template <int K>
  __device__ static Lane make() {
    Lane l;
    l.lane = threadIdx.x & 31, l.g = l.lane >> 2, l.t = l.lane & 3;
    l.col_lo = (threadIdx.x >> 5) * 16 + l.g;
    l.cols = dev::gemv_decode::lane_cols<K>(l.lane);
    return l;
  }
};

template <int K>
__device__ __forceinline__ void read_unit(const Lane& l, const unsigned char* planes,
                                          const unsigned char* codes, UnitRegs<K>& r) {
  const int chunk = plane_chunk<K>(l.t);
  const int kt0 = 2 * (l.t & 1);  // the k-tiles whose block sums this thread scales
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = l.col_lo + 8 * h;
    const uint32_t* src = reinterpret_cast<const uint32_t*>(planes + chunk) + col * 2 * K;
    dev::load_planes<K>(src, r.p[h][0]);
    dev::load_planes<K>(src + K, r.p[h][1]);
#pragma unroll
    for (int i = 0; i < 2; ++i)
      r.codes[h][i] = *reinterpret_cast<const uint16_t*>(codes + code_chunk(kt0 + i) + col * 2);
  }
}

// The 16 B-operand registers of one k-block for MMA set s (rows 2s, 2s+1): pairs 0..15 of
// block (k-tile t', kb) of row 2s + lane/16 in the lanes of MMA column t' (+4). The other
// lanes never load: their registers keep the zeros the segment started with.
template <int K, int MV>
__device__ __forceinline__ void load_b(const Lane& l, const unsigned char* s_a, int u, int kb,
                                       int s, uint32_t (&b)[16]) {
  const int m = 2 * s + (l.lane >> 4);
  if ((l.g & 3) != l.t || m >= MV) return;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 v = *reinterpret_cast<const uint4*>(s_a + a_offset<K, MV>(m, u, l.t, kb, 4 * i));
    b[4 * i] = v.x, b[4 * i + 1] = v.y, b[4 * i + 2] = v.z, b[4 * i + 3] = v.w;
  }
}

// The 8 MMAs of one k-block: A rows g / g+8 = columns lo / hi, k-slots = the pairs the K-bit
// decode gives MMA i (decode.cuh), which the staged B pairs 2i, 2i + 1 match.
template <int K, int S, typename T>
__device__ __forceinline__ void mma_block(const Lane& l, const unsigned char* lut,
                                          const uint32_t (&plo)[K], const uint32_t (&phi)[K],
                                          const uint32_t (&b)[S][16], float (&c)[S][4]) {
  const auto blk = dev::gemv_decode::block<K>(plo, phi, l.cols);
  auto mma_i = [&](auto i_const) {
    constexpr int I = decltype(i_const)::value;
    uint32_t a[4];
    blk.template mma_a<I>(lut, l.cols, a);
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const uint32_t bb[2] = {b[s][2 * I], b[s][2 * I + 1]};
      dev::mma_m16n8k16<T>(c[s], a, bb);
    }
  };
  dev::pair_lut::for_each_index(std::make_integer_sequence<int, 8>{}, mma_i);
}

// One unit of a consumer thread: both k-blocks' MMAs, then `between` (the next unit's fetch:
// its barrier wait and plane loads overlap the MMAs in flight instead of stalling the warp's
// in-order issue before them; F-009), then the scale FFMAs, which wait for the MMAs.
// kBetween false (no fetch to overlap): each k-block's FFMAs follow its MMAs (fewer registers).
// acc[s][h] is this thread's share of output (row 2s + t/2, column lo / hi).
template <int K, int MV, typename T, bool kBetween, typename Between>
__device__ __forceinline__ void dot_unit(const Lane& l, const UnitRegs<K>& r,
                                         const unsigned char* lut, const unsigned char* s_a, int u,
                                         uint32_t (&b)[(MV + 1) / 2][16],
                                         float (&acc)[(MV + 1) / 2][2], Between&& between) {
  constexpr int S = (MV + 1) / 2;
  // The scale FFMAs of k-block kb: C column 2t + i of row lo/hi is the block of k-tile
  // 2(t&1) + i (for row 2s + t/2).
  auto scale_add = [&](int kb, const float(&c)[S][4]) {
    float sc[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sc[h][0] = kb == 0 ? dev::gemv_decode::scale<K, 0>(lut, r.codes[h][0], l.cols)
                         : dev::gemv_decode::scale<K, 1>(lut, r.codes[h][0], l.cols);
      sc[h][1] = kb == 0 ? dev::gemv_decode::scale<K, 0>(lut, r.codes[h][1], l.cols)
                         : dev::gemv_decode::scale<K, 1>(lut, r.codes[h][1], l.cols);
    }
#pragma unroll
    for (int s = 0; s < S; ++s) {
      acc[s][0] = fmaf(sc[0][0], c[s][0], fmaf(sc[0][1], c[s][1], acc[s][0]));
      acc[s][1] = fmaf(sc[1][0], c[s][2], fmaf(sc[1][1], c[s][3], acc[s][1]));
    }
  };
  float c[2][S][4];
#pragma unroll
  for (int kb = 0; kb < 2; ++kb) {
#pragma unroll
    for (int s = 0; s < S; ++s) load_b<K, MV>(l, s_a, u, kb, s, b[s]);
#pragma unroll
    for (int s = 0; s < S; ++s) c[kb][s][0] = c[kb][s][1] = c[kb][s][2] = c[kb][s][3] = 0.0f;
    mma_block<K, S, T>(l, lut, r.p[0][kb], r.p[1][kb], b, c[kb]);
    if (!kBetween) scale_add(kb, c[kb]);  // nothing to overlap: each k-block's C dies at once
  }
  between();
  if (kBetween) {
    scale_add(0, c[0]);
    scale_add(1, c[1]);
  }
}

// The end of a split tile: after this block's adds, the last of its contributors converts the
// fp32 sums of the tile's [rows x 128] outputs and writes C (all consumer threads take part).
template <typename T>
__device__ void finish_split(const KernelArgs& a, const Segment g) {
  if (!dev::splitk::arrive_is_last<Config::kConsumers>(a.counters + g.tile_id, g.contributors))
    return;
  // Up to kPer outputs per thread (rows 3, 4: two), all loaded before any is stored: one L2
  // round trip, where a loop of load-then-store took one per output (F-019).
  constexpr int kPer = Config::kMaxRows * Config::kTileN / Config::kConsumers;
  static_assert(kPer * Config::kConsumers == Config::kMaxRows * Config::kTileN, "whole outputs");
  const int col = g.nt * Config::kTileN + int(threadIdx.x) % Config::kTileN;
  std::int64_t idx[kPer];
#pragma unroll
  for (int r = 0; r < kPer; ++r) {
    const int i = int(threadIdx.x) + r * Config::kConsumers;
    idx[r] = i < g.rows * Config::kTileN && col < a.N
                 ? std::int64_t(g.row0 + i / Config::kTileN) * a.N + col
                 : -1;
  }
  dev::splitk::take_all(a.ws, idx, [&](int r, float v) {
    static_cast<T*>(a.C)[idx[r]] = dev::from_float<T>(v);  // (C's pointer after the loads)
  });
}

// Where a consumer thread's sums go. After reduce() lanes t and t^1 hold the same two sums of
// one row (the halves of its k-tiles); lane t = 0 / 2 of a quad writes row 2s / 2s + 1.
template <int MV>
struct OutSlots {
  const Lane& l;
  const Segment& g;
  int N;
  __device__ int column(int h) const { return g.nt * Config::kTileN + l.col_lo + 8 * h; }
  __device__ int row(int s) const { return 2 * s + (l.t >> 1); }
  __device__ bool writer(int s) const { return (l.t & 1) == 0 && row(s) < MV; }
  __device__ bool owns(int s, int h) const { return writer(s) && column(h) < N; }
  __device__ long long index(int s, int h) const {
    return (long long)(g.row0 + row(s)) * N + column(h);
  }
  // fn(s, h) for every sum this thread writes out (a row < MV, a column < N).
  template <typename Fn>
  __device__ void for_each_owned(Fn&& fn) const {
#pragma unroll
    for (int s = 0; s < (MV + 1) / 2; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (owns(s, h)) fn(s, h);
  }
  static __device__ void reduce(float (&acc)[(MV + 1) / 2][2]) {
#pragma unroll
    for (int s = 0; s < (MV + 1) / 2; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) acc[s][h] += __shfl_xor_sync(dev::kFullMask, acc[s][h], 1);
  }
};

// Writes (or, split, adds) a segment's [rows x 128] output. `defer`: a split segment only adds;
// the caller finishes it later (finish_split), so that the first segment of a stripe does not
// stall the block in the middle of its stream. kWhole: the tile is never split (a whole-tile
// kernel): no workspace code.
template <int MV, typename T, bool kWhole = false>
__device__ void store_segment(const KernelArgs& a, const Lane& l, const Segment g,
                              float (&acc)[(MV + 1) / 2][2], bool defer) {
  const OutSlots<MV> o{l, g, a.N};
  o.reduce(acc);
  T* C = static_cast<T*>(a.C);
  o.for_each_owned([&](int s, int h) {
    if (kWhole || g.contributors == 1)
      C[o.index(s, h)] = dev::from_float<T>(acc[s][h]);
    else
      dev::splitk::add(a.ws, o.index(s, h), acc[s][h]);
  });
  if (!kWhole && g.contributors > 1 && !defer) finish_split<T>(a, g);
}

// The block's dynamic shared memory: barriers, the pair table, the ring, the A window. The
// regions are addressed from the symbol itself, so every table lookup's base is a uniform
// register (LDS [R+UR]) rather than one more IADD per lookup.
extern __shared__ __align__(128) unsigned char g_smem[];

template <int K>
struct Smem {
  static constexpr int kLut = Config::kBarrierBytes;
  static constexpr int kRing = kLut + Config::kLutBytes;
  static constexpr int kA = kRing + Config::kStages * stage_bytes<K>();
  static constexpr int kRecv =
      kA + Config::template kWindowRowUnitsFor<K> * Config::kUnitStride;  // clusters
  static __device__ unsigned char* lut() { return g_smem + kLut; }
  static __device__ unsigned char* s_a() { return g_smem + kA; }
};

// The end of a split tile whose contributors form one cluster (KernelArgs::cluster, F-020): no L2
// round trip. Once every block of the cluster has started (phase 0 of the cluster barrier),
// ranks 1.. push their [rows x 128] sums into rank 0's receive area with st.async, each store
// completing 4 bytes on rank 0's receive barrier, and exit; rank 0 waits there for all (c - 1) x
// rows x 512 bytes (start_block set them), adds the sums to its own in rank order (deterministic)
// and writes C. Through the workspace the same end took three L2 round trips; plain DSMEM stores
// published by a second cluster barrier phase were 0.4-0.7 us slower on 8B gate/up (F-020).
template <int K, int MV, typename T>
__device__ void combine_in_cluster(const KernelArgs& a, const Lane& l, const Segment g,
                                   float (&acc)[(MV + 1) / 2][2]) {
  const OutSlots<MV> o{l, g, a.N};
  o.reduce(acc);
  const float* recv = reinterpret_cast<const float*>(g_smem + Smem<K>::kRecv);
  const uint32_t recv_bar = Ring<K>(g_smem, Smem<K>::kRing).recv();
  auto slot = [&](int r, int s, int h) {  // float index of rank r's sum (row(s), column h)
    return ((r - 1) * MV + o.row(s)) * Config::kTileN + l.col_lo + 8 * h;
  };
  const int rank = int(dev::cluster::rank());
  if (rank != 0) {
    dev::cluster::wait();  // (phase 0) rank 0 has started: its receive barrier is initialized
    const uint32_t dst = dev::cluster::map(dev::smem_addr(recv), 0);
    const uint32_t bar = dev::cluster::map(recv_bar, 0);
#pragma unroll
    for (int s = 0; s < (MV + 1) / 2; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (o.writer(s)) dev::cluster::store_async(dst + 4 * slot(rank, s, h), acc[s][h], bar);
      }
    return;  // rank 0 waits for what this block sent: it is alive until then
  }
  dev::mbar_wait(recv_bar, 0);
  T* C = static_cast<T*>(a.C);
  o.for_each_owned([&](int s, int h) {
    float v = acc[s][h];
    for (int r = 1; r < a.cluster; ++r) v += recv[slot(r, s, h)];
    C[o.index(s, h)] = dev::from_float<T>(v);
  });
}

// The tagged end's reach: rows (M = 3, 4 spilled with it compiled in); loads in flight per
// consumer thread: scalar_gemv::kTaggedLoads.
constexpr int kTaggedMaxRows = 2;
using scalar_gemv::kTaggedLoads;
// Whether the K-bit kernel for `rows` rows has the tagged end (Config::kTaggedKs).
__host__ __device__ constexpr bool has_tagged_end(int k, int rows) {
  return rows >= 1 && rows <= kTaggedMaxRows && ((Config::kTaggedKs >> k) & 1u) != 0;
}
static_assert((Config::kMaxCluster - 1) * kTaggedMaxRows * Config::kTileN * 4 <=
                  Config::kStages * stage_bytes<2>(),
              "the other ranks' sums fit in the drained ring (the smallest: K = 2)");

// The end of a split tile whose contributors are its k-bands but cannot form a cluster (F-021):
// ranks 1.. (block index mod c) store their sums, each with a tag in one 64-bit word, into their
// slots in L2 and leave at once: no fence, no counter. Rank 0's consumer threads load the slots
// kTaggedLoads at a time each, re-read those not there yet, clear them and put the sums into the
// drained ring; then the holders add them to their own in rank order (deterministic) and write C.
// Every contributor is resident at once (one stripe per slot), so the wait ends.
template <int K, int MV, typename T>
__device__ void combine_through_tags(const KernelArgs& a, const Lane& l, const Segment g,
                                     float (&acc)[(MV + 1) / 2][2]) {
  constexpr int kOutputs = MV * Config::kTileN;
  static_assert(MV <= kTaggedMaxRows, "the host uses tagged slots for 1 or 2 rows");
  const OutSlots<MV> o{l, g, a.N};
  o.reduce(acc);
  const int c = a.tagged, rank = int(blockIdx.x) % c, words = (c - 1) * kOutputs;
  unsigned long long* slots = a.tags + (long long)g.tile_id * words;  // [rank - 1][row][col]
  auto at = [&](int r, int s, int h) {  // index of rank r's sum (row(s), column h)
    return (r - 1) * kOutputs + o.row(s) * Config::kTileN + l.col_lo + 8 * h;
  };
  if (rank != 0) {
#pragma unroll
    for (int s = 0; s < (MV + 1) / 2; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (o.writer(s)) dev::splitk::put_tagged(slots + at(rank, s, h), acc[s][h]);
    return;
  }
  float* recv = reinterpret_cast<float*>(g_smem + Smem<K>::kRing);  // same layout as the slots
  dev::sync_threads<Config::kConsumers>();  // every consumer has read its last stage
  dev::splitk::gather_tagged<Config::kConsumers, kTaggedLoads>(slots, words, recv);
  dev::sync_threads<Config::kConsumers>();
  T* C = static_cast<T*>(a.C);
  o.for_each_owned([&](int s, int h) {
    float v = acc[s][h];
    for (int r = 1; r < c; ++r) v += recv[at(r, s, h)];
    C[o.index(s, h)] = dev::from_float<T>(v);
  });
}

// One segment of a consumer thread. q is the block's ring step and wq its A window (the window
// warp's count), both carried across segments. kDense: a cluster or tagged slots may end a split
// tile; kWholeTiles: the plan splits no tile, so no split-tile end is compiled in (their code cost
// the M = 4 main loop 3%: F-022).
template <int K, int MV, typename T, bool kDense, bool kWholeTiles = false>
__device__ __forceinline__ void run_segment(const KernelArgs& a, const Segment g,
                                            const Ring<K>& ring, uint32_t& q, uint32_t& wq,
                                            bool defer) {  // g by value: registers
  constexpr int S = (MV + 1) / 2;
  const Lane l = Lane::make<K>();
  const int n = g.u1 - g.u0;
  float acc[S][2];
  uint32_t b[S][16];  // B operands; zero for good in the lanes that never load them
#pragma unroll
  for (int s = 0; s < S; ++s) {
    acc[s][0] = acc[s][1] = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) b[s][j] = 0u;
  }
  // Unit i+1 is copied to registers (and its stage freed) while unit i is computed, between its
  // MMAs and its FFMAs, so the producer keeps ~kStages units in flight however long the math
  // takes. K = 5 reads each unit just before computing it: with the 10-bit decode its dense kernels
  // have the registers for the prefetch, which measured 0-4% slower (F-034); the grouped one
  // spills.
  constexpr bool kPrefetch = K <= 4;
  auto fetch = [&](uint32_t step, UnitRegs<K>& r) {
    const int st = Ring<K>::stage(step);
    dev::mbar_wait(ring.full(st), Ring<K>::parity(step));
    read_unit<K>(l, ring.planes(st), ring.codes(st), r);
    // Every consumer thread arrives after its own reads. (One arrival per warp after
    // __syncwarp measured the same and racecheck reports it as a race: F-001.)
    dev::mbar_arrive(ring.empty(st));
  };
  UnitRegs<K> next, first;
  const bool block_first = q == 0;
  fetch(q, next);
  // Under PDL, units 0 and 1 in registers before the wait (the two sets the loop holds anyway):
  // two stages free, so the producer copies units 2 and 3 while the previous launch drains
  // (F-023: 8B gate/up -0.2 us). Not in plain launches, whose first window it delayed
  // until unit 1 had landed (+0.3-0.6 us); rows 3, 4 spilled 8-32 B with it. Not in the grouped
  // kernel (kDense false), whose segments hold 1-2 rows (F-023).
  constexpr bool kFirstTwo = kDense && kPrefetch && Config::kFirstTwoUnderPdl && MV >= 1 && MV <= 2;
  const bool two = kFirstTwo && a.pdl && n > 1;
  if (two) {
    first = next;
    fetch(q + 1, next);
  }
  // Under PDL the first unit (two: above) is already in registers and its stage free for the
  // producer when the consumers wait here for the previous launch: A, C and the split-K workspace
  // are its memory until then. (After the block's first segment the wait returns at once.)
  dev::pdl::wait();
  // The M = 3, 4 kernels' window warp stages the windows (stream.cuh), but for a dependent
  // launch's first one: its consumers, idle after the wait, stage that one, and thread 0 tells
  // the warp that A may be read. Elsewhere the consumers stage every window.
  constexpr bool kWarp = kDense && kHasWindowWarp<MV>;
  if (kWarp && a.pdl && block_first && threadIdx.x == 0) dev::mbar_arrive(ring.win_go());
  constexpr int W = window_units<K, MV>();
  auto window_at = [&](int i) {  // stages or waits for the window that starts at unit i
    if (i % W != 0) return;
    if (!kWarp || (wq == 0 && a.pdl)) {
      dev::sync_threads<Config::kConsumers>();  // nobody still reads the old window
      stage_window_by_consumers<K, MV, T>(a, g.row0, g.u0 + i, min(W, n - i), Smem<K>::s_a());
      dev::sync_threads<Config::kConsumers>();  // publishes it (the first: and the pair table)
    } else {
      if (wq == 0) dev::sync_threads<Config::kConsumers>();  // publishes the pair table
      // The warp's windows only: a dependent launch's first was the consumers'.
      dev::mbar_wait(ring.win_full(), (wq - (a.pdl ? 1u : 0u)) & 1u);
    }
  };
  auto window_done = [&](int i) {  // after unit i: the window warp may refill after its last one
    if (!kWarp || ((i + 1) % W != 0 && i + 1 != n)) return;
    dev::mbar_arrive(ring.win_empty());  // after this thread's B loads from it
    ++wq;
  };
  int i = 0;
  if constexpr (kFirstTwo) {
    if (two) {  // unit 0, whose successor is already fetched
      window_at(0);
      dot_unit<K, MV, T, true>(l, first, Smem<K>::lut(), Smem<K>::s_a(), 0, b, acc, [] {});
      window_done(0);
      ++i, ++q;
    }
  }
  for (; i < n; ++i, ++q) {
    window_at(i);
    if constexpr (kPrefetch) {
      const UnitRegs<K> r = next;
      dot_unit<K, MV, T, true>(l, r, Smem<K>::lut(), Smem<K>::s_a(), i % W, b, acc, [&] {
        if (i + 1 < n) fetch(q + 1, next);
      });
    } else {
      if (i > 0) fetch(q, next);
      dot_unit<K, MV, T, false>(l, next, Smem<K>::lut(), Smem<K>::s_a(), i % W, b, acc, [] {});
    }
    window_done(i);
  }
  // A whole-tile kernel has no split-tile end. The grouped kernel leaves the cluster and tagged
  // ends out (registers), M = 3, 4 and some K the tagged one (has_tagged_end).
  if constexpr (kWholeTiles) {
    store_segment<MV, T, true>(a, l, g, acc, defer);
  } else if (kDense && g.contributors > 1 && a.cluster > 1) {
    if constexpr (kDense) combine_in_cluster<K, MV, T>(a, l, g, acc);
  } else if (kDense && has_tagged_end(K, MV) && g.contributors > 1 && a.tagged > 1) {
    if constexpr (kDense && has_tagged_end(K, MV)) combine_through_tags<K, MV, T>(a, l, g, acc);
  } else {
    store_segment<MV, T>(a, l, g, acc, defer);
  }
}

// A segment of the grouped kernel: its row count (1..4) picks the unrolled body.
template <int K, typename T>
__device__ void run_rows(const KernelArgs& a, const Segment g, const Ring<K>& ring, uint32_t& q,
                         uint32_t& wq, bool defer) {
  switch (g.rows) {
    case 1:
      return run_segment<K, 1, T, false>(a, g, ring, q, wq, defer);
    case 2:
      return run_segment<K, 2, T, false>(a, g, ring, q, wq, defer);
    case 3:
      return run_segment<K, 3, T, false>(a, g, ring, q, wq, defer);
    default:
      return run_segment<K, 4, T, false>(a, g, ring, q, wq, defer);
  }
}

// Builds the pair table (all consumer threads; the barrier before the first A window publishes
// it).
template <int K, typename T>
__device__ void build_table(const KernelArgs& a) {
  __shared__ float s_cb[32];  // the codebook, copied once (see pair_lut::build)
  if (threadIdx.x < 32) s_cb[threadIdx.x] = a.cb[threadIdx.x];
  dev::sync_threads<Config::kConsumers>();
  dev::gemv_decode::build<K, T>(Smem<K>::lut(), s_cb, threadIdx.x, Config::kConsumers);
}

// Initializes the ring; returns true in the consumer threads, which also build the pair table
// (published by a consumer barrier before the first A window). The producer lane streams the ring
// and returns false once it has issued every copy; the rest of its warp leaves at once. The
// window warp stages the A windows and returns false. MV rows (0: the grouped kernel, which has
// no cluster end).
template <int K, int MV, typename T>
__device__ bool start_block(const KernelArgs& a, const Ring<K>& ring) {
  const bool clustered = MV > 0 && a.cluster > 1;  // combine_in_cluster's protocol
  ring.template init<kHasWindowWarp<MV>>();
  // Rank 0 expects the other ranks' sums on its receive barrier, before it tells them that it
  // has started (an arrival with the byte count: the phase ends when they have all landed).
  if (clustered && threadIdx.x == 0 && dev::cluster::rank() == 0)
    dev::mbar_arrive_expect_tx(ring.recv(), (a.cluster - 1) * MV * Config::kTileN * 4);
  if (clustered) dev::cluster::arrive_relaxed();  // phase 0: this block has started
  // The warp index through a shuffle: the compiler then knows the role branch is warp-uniform
  // and keeps block-wide constants (the table's base) in uniform registers (CUTLASS's
  // canonical_warp_idx_sync).
  const int warp = __shfl_sync(dev::kFullMask, int(threadIdx.x) / 32, 0);
  if (warp < Config::kConsumers / 32) {
    build_table<K, T>(a);
    return true;
  }
  if (threadIdx.x == Config::kConsumers) produce<K>(a, ring);
  if constexpr (kHasWindowWarp<MV>)
    if (warp == Config::kConsumers / 32 + 1)
      stage_windows<K, MV, T>(a, ring.win_full(), ring.win_empty(), ring.win_go(), Smem<K>::s_a());
  return false;
}

// MV = 1..4: dense, every segment has MV rows. MV = 0: grouped (scalar_gemv's MoE row).
// kWholeTiles: no tile is split (run_segment).
template <int K, int MV, typename T, bool kWholeTiles = false>
__global__ void __maxnreg__(Config::kMaxRegs)
    scalar_gemv_kernel(const __grid_constant__ KernelArgs a) {
  const Ring<K> ring(g_smem, Smem<K>::kRing);
  // At once: at the block's end it kept 0.2 of 1.5 us, after the block's last copy it cost
  // 1-2 us (F-023).
  dev::pdl::launch_dependents();
  if (!start_block<K, MV, T>(a, ring)) return;
  uint32_t q = 0, wq = 0;
  const int first = a.first_seg[blockIdx.x], last = a.first_seg[blockIdx.x + 1];
  for (int s = first; s < last; ++s) {
    // Only a stripe's first and last segments can be split; the first one's completion waits
    // until the stream is done.
    const bool defer = s == first && s + 1 < last;
    if constexpr (MV == 0)
      run_rows<K, T>(a, a.segs[s], ring, q, wq, defer);
    else
      run_segment<K, MV, T, true, kWholeTiles>(a, a.segs[s], ring, q, wq, defer);
  }
  if (!kWholeTiles && last - first > 1 && a.segs[first].contributors > 1)
    finish_split<T>(a, a.segs[first]);
}

// ---------------------------------------------------------------- host side
// The plan (stripes, which end, buffers) is plan.cpp; this is what it asks of the kernels
// (kernels.hpp).

// The row counts with a kernel for plans that split no tile: M = 3, 4, whose main loop the
// ends' code slowed by 3% (M = 1, 2 measured even; F-022).
constexpr bool has_whole_tile_kernel(int rows) {
  return rows >= 3;
}

// The kernel for (K, rows, dtype); rows == 0 selects the grouped kernel; `whole_tiles`: the
// plan splits no tile (where such a kernel exists).
template <typename T>
const void* kernel_for_type(int k, int rows, bool whole_tiles) {
  return with_k_bits(k, [&](auto k_const) {
    constexpr int KB = decltype(k_const)::value;
    if (rows == 0) return reinterpret_cast<const void*>(scalar_gemv_kernel<KB, 0, T>);
    return with_rows_1_to_4(rows, [&](auto r_const) {
      constexpr int R = decltype(r_const)::value;
      if constexpr (has_whole_tile_kernel(R))
        if (whole_tiles) return reinterpret_cast<const void*>(scalar_gemv_kernel<KB, R, T, true>);
      return reinterpret_cast<const void*>(scalar_gemv_kernel<KB, R, T>);
    });
  });
}

KernelArgs make_args(const scalar_gemv::Launch& l, const GemmDims& d, const GemmArgs& g) {
  KernelArgs a{};
  a.A = g.A;
  a.C = g.C;
  a.packed = g.w.packed;
  a.absmax = g.w.absmax;
  a.expert_words = g.w.expert_words;
  a.expert_bytes = g.w.expert_bytes;
  a.N = int(d.N);
  a.K_dim = int(d.K_dim);
  a.n_tiles = l.n_tiles;
  a.k_tiles = l.k_tiles;
  a.segs = l.segs;
  a.first_seg = l.first_seg;
  a.ws = l.ws;
  a.counters = l.counters;
  a.cluster = l.cluster;
  a.tagged = l.tagged;
  a.tags = l.tags;
  a.pdl = g.pdl ? 1 : 0;
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  return a;
}

}  // namespace

namespace scalar_gemv {

const void* kernel_for(int k, int rows, DType t, bool whole_tiles) {
  return t == DType::f16 ? kernel_for_type<__half>(k, rows, whole_tiles)
                         : kernel_for_type<__nv_bfloat16>(k, rows, whole_tiles);
}

bool has_tagged_end(int k, int rows) {
  return variants::has_tagged_end(k, rows);
}

int smem_bytes(int k, int rows) {
  return with_k_bits(k, [&](auto k_const) {
    return variants::smem_bytes<decltype(k_const)::value>(rows == 0 ? Config::kMaxRows : rows);
  });
}

void launch(const Launch& l, const GemmDims& d, const GemmArgs& g, cudaStream_t stream) {
  KernelArgs a = make_args(l, d, g);
  void* params[] = {&a};
  // A dependent launch whose blocks stage one A window each runs without the window warp (the
  // consumers stage that window; the warp would only wait for them and leave, which cost the
  // small Qwen3 layers 0.05-0.19 us at M = 3, 4: F-018). The kernel's consumers arrive on
  // the window barriers all the same; with one window nobody waits on them.
  const int threads = g.pdl && l.one_window ? l.threads - kWarpThreads : l.threads;
  launch_kernel(l.kernel, dim3(l.grid), dim3(threads), l.smem_bytes, stream, params, g.pdl,
                unsigned(l.cluster));
}

}  // namespace scalar_gemv
}  // namespace kbit::variants
