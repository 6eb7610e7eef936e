// Variant 03's mainloop: the warp-specialized RS wgmma kernel (weights as wgmma's register
// operand, A and B swapped) over any order of output tiles. Variant 03 (warp_specialized.cu)
// runs it over a dense problem's tiles with stream-K; variant 05 (grouped_mma.cu) over the
// (expert, m-tile, n-tile) tiles of an MoE layer, listed on the device. The tile order is the
// policy P (below), the weights' layout and decode the format F (below: KbitWeights here, the AWQ
// repack in variants/06_awq); everything else is shared. README.md beside this file has the
// picture, the register budget and what each step bought.
//
// * One producer warpgroup (threads 256..383; one thread works) fills a ring of kStages stages,
//   each KT k-tiles (64 each) of one 128-row weight tile: the format's weight and scale tiles
//   (kbit: the tiled layout's planes and codes) by cp.async.bulk, the activation boxes (token tile
//   x 64) by TMA tensor copies with the 128-byte swizzle, all completing on the stage's `full`
//   mbarrier.
// * Two consumer warpgroups (threads 0..255, rows 0..63 and 64..127 of the weight tile) wait on
//   `full` and decode their A fragments for the stage's 4 KT k16 steps. On the wgmma path
//   (MmaPath) they issue them as one wgmma commit group and, once the previous group has
//   completed (wgmma.wait_group 1), free the previous stage (one `empty` arrival per consumer
//   thread); the fragments are double-buffered in registers (even and odd stages), so the decode
//   of stage i overlaps the tensor work of stage i - 1. On the mma.sync path each warp loads the
//   activations by ldmatrix, multiplies its 16 rows and frees the stage at once.
// * Per token tile (Layout): two blocks per SM at 8, 16 and 32 tokens (K <= 4), else one; in both
//   the producer warpgroup gives registers to the consumers (setmaxnreg 48 / 96 and 56 / 224).
// * Work: output tiles of token tile x 128 over K_dim in k-steps of 64 KT. Tiles [0, dp_tiles)
//   go round-robin over the blocks; the rest (dense only) split into equal stripes of
//   (tile, k-step) units (stream-K), ended through the self-cleaning split-K workspace
//   (variants/common/splitk.cuh).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "reference/dtype.hpp"
#include "reference/error.hpp"
#include "variants/03_warp_specialized/fragment_lut.cuh"
#include "variants/common/barrier.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/dispatch.hpp"
#include "variants/common/launch.hpp"
#include "variants/common/load.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/common/tensor_map.hpp"
#include "variants/common/tma_tensor.cuh"
#include "variants/common/wgmma.cuh"

namespace kbit::variants::ws {

struct Config {
  static constexpr int kConsumerWarpgroups = 2;                 // 64 weight rows each (wgmma's M)
  static constexpr int kConsumers = 128 * kConsumerWarpgroups;  // threads 0..255
  static constexpr int kThreads = kConsumers + 128;             // + the producer warpgroup 256..383
  static constexpr int kTileN = 128;  // weight rows per tile: the tiled layout's tile_n
  static constexpr int kTileK = 64;   // k per stage: the tiled layout's tile_k, and 128-byte A
                                      // rows (the widest the 128-byte swizzle allows)
  static constexpr int kKbPerTile = kTileK / 32;
  static constexpr int kCodeBytes = kTileN * kKbPerTile;  // 256 E4M4 codes per tile
  static constexpr int kMaxStages = 12;      // enough bytes in flight at the smallest tile
  static constexpr int kSmemOptin = 232448;  // the H100's 227 KB per block
  static constexpr int kSmemPerSm = 233472;  // and 228 KB per SM
  static constexpr int kAlignSlack = 1024;   // dynamic smem rounded up to the swizzle's 1024 B
  static constexpr long long kGroupBytes = 16ll << 20;  // activations a tile group keeps in L2
};

// How the consumers multiply. wgmma: a warpgroup's m64nTTk16 (TT = 16..256), the activations
// read by the tensor cores through a shared-memory descriptor, asynchronous (commit groups,
// fences, a wait before a stage is freed). sync: each warp alone, mma.sync.m16n8k16 over its 16
// weight rows and TT / 8 token columns of 8, the activations loaded by ldmatrix from the same
// swizzled boxes (TT = 8..64): no descriptors, fences or group waits, and a stage is freed as
// soon as its reads are done. Same fragments, same accumulator layout, same store.
enum class MmaPath { wgmma, sync };
// The path a caller that does not choose takes at token tile TT: sync at 8 and 16 tokens, where
// a wgmma is a few cycles of tensor work behind ~45 instructions of descriptors, fences and
// group waits a stage; wgmma from 32 (measured on the H200: variants/07_fragment_mma/README.md).
__host__ __device__ constexpr MmaPath default_mma_path(int tt) {
  return tt <= 16 ? MmaPath::sync : MmaPath::wgmma;
}
__host__ __device__ constexpr bool has_mma_path(int tt, MmaPath p) {
  return p == MmaPath::sync ? tt <= 64 : tt >= 16;
}

// Shared memory of (weight format F, token tile TT): the format's decode table, then the ring,
// then its barriers. A stage holds KT k-tiles (a k-step of 64 KT): KT activation boxes, then KT
// weight tiles, then KT scale tiles.
template <typename F, int TT>
struct Layout {
  // Blocks per SM: two at the smallest token tiles, where a block's 8 consumer warps cannot
  // hide the decode's latency (latency-bound at ~50% issue, F-033); the budgets below follow.
  static constexpr int kBlocksPerSm = TT <= 32 && F::kTwoBlocksPerSm ? 2 : 1;
  // setmaxnreg: the producer warpgroup gives registers back, the consumers take them, to the
  // block's pool exactly (an .inc past it waits forever, which was measured as a hang). One
  // block per SM: ptxas allocates 168 a thread (65536 / 384), 384 x 168 = 128 x 56 + 256 x 224.
  // Two: 80 a thread from the launch bounds, 384 x 80 = 128 x 48 + 256 x 96. Without setmaxnreg
  // ptxas took the consumers' path for divergent and waited after every wgmma (C7518, F-037).
  static constexpr int kRegsPerThread = kBlocksPerSm == 1 ? 168 : 80;
  static constexpr int kProducerRegs = kBlocksPerSm == 1 ? 56 : 48;
  static constexpr int kConsumerRegs = kBlocksPerSm == 1 ? 224 : 96;
  static constexpr int kRegisterPool = 128 * kProducerRegs + 256 * kConsumerRegs;
  static_assert(kRegisterPool == Config::kThreads * kRegsPerThread, "the block's registers");
  static constexpr int kSmemBudget = Config::kSmemPerSm / kBlocksPerSm - 1024;  // less 1 KB each
  // k-tiles per stage: 2 at 64 tokens, whose stages are short (twice the independent decode
  // work between two barrier waits); 1 at 16 and 32 (two blocks share the SM's shared memory)
  // and from 128 tokens (tensor-bound, and the activation boxes leave room for few stages).
  // A format whose decode is short (F::kTwoTilesAtTwoBlocks: AWQ's, ~2 instructions a weight)
  // takes 2 at 16 and 32 tokens too: its stages are barrier waits with little work between.
  static constexpr int KT = TT <= 64 && (kBlocksPerSm == 1 || F::kTwoTilesAtTwoBlocks) ? 2 : 1;
  // Accumulator sets, k16 step q adding into set q % kAccSets: at small token tiles a wgmma is
  // a few cycles of tensor work, and one chain of dependent wgmmas would run at its latency.
  static constexpr int kAccSets = TT <= 64 ? 2 : 1;
  static constexpr int kLutBytes = F::kTableBytes;
  static constexpr int kABytes = TT * Config::kTileK * 2;  // one box: TT rows of 128 B, swizzled
  static constexpr int kWeightsAt = KT * kABytes;          // offset of the weight tiles
  static constexpr int kScalesAt = kWeightsAt + KT * F::kWeightBytes;  // and of the scale tiles
  static constexpr int kCopyBytes = kScalesAt + KT * F::kScaleBytes;
  static constexpr int kStageBytes = (kCopyBytes + 1023) / 1024 * 1024;  // boxes at 1024 B
  static constexpr int kBarrierBytes = 1024;
  static constexpr int kStages = std::min(
      Config::kMaxStages, (std::min(Config::kSmemOptin, kSmemBudget) - Config::kAlignSlack -
                           kLutBytes - kBarrierBytes - 1024 /* static */) /
                              kStageBytes);
  static constexpr int kRingAt = kLutBytes;
  static constexpr int kBarriersAt = kRingAt + kStages * kStageBytes;
  static constexpr int kBytes = kBarriersAt + kBarrierBytes;
  static_assert(kStages >= 2, "the consumers free stage i - 1 after issuing stage i");
  static_assert(kLutBytes % 1024 == 0 && kABytes % 1024 == 0, "boxes start 1024-byte aligned");
};

// What the kernel reads, whatever the tile order. A tile policy (below) derives from it and adds
// what its tile() reads.
struct MainloopArgs {
  void* C;
  const unsigned char* weights;  // the format's weight tiles (kbit: the tiled layout's planes)
  const unsigned char* scales;   // and its scale tiles (kbit: the E4M4 codes)
  int group;                     // AWQ: the group size G; kbit: unused
  int M, N, n_tiles, k_tiles;
  int k_steps;   // stages per tile: ceil(k_tiles / KT)
  int dp_tiles;  // tiles [0, dp_tiles) are whole, block b takes b, b + grid, ...
  int units;     // tiles x k_steps
  int per;       // the rest: block b streams units [dp_tiles * k_steps + b * per, + per)
  float* ws;     // split-K workspace [M][N] fp32, zero between calls
  int* counters;
  float cb[32];  // kbit: the codebook
};

// One output tile as the mainloop sees it: TT rows of A from a_row (the TMA box), of which rows
// [a_row, row_end) are stored; weight n-tile nt of one weight matrix's weight and scale tiles
// (the format's tiled layout: weight tile (kt, nt) at kt * n_tiles + nt).
struct TileInfo {
  int a_row, row_end, nt;
  const unsigned char* weights;
  const unsigned char* scales;
};

// A weight format F gives the kernel:
//   F::kTableBytes, F::kTwoBlocksPerSm : its decode table in shared memory (a multiple of 1 KB,
//                                        0 for none), and whether two blocks per SM fit beside it
//   F::kTwoTilesAtTwoBlocks            : 2 k-tiles a stage also at two blocks per SM (Layout)
//   F::kWeightBytes, F::kScaleBytes    : the bytes a stage reserves per k-tile
//   F::k_tile_bytes(a)                 : the bytes copy_k_tile brings (the stage's expect_tx)
//   F::copy_k_tile(w, s, a, tile, kt, bar) : issues the bulk copies of k-tile kt of the tile into
//                                        stage addresses w and s on mbarrier bar
//   F::Decoder<T>(a, lane)             : one consumer thread's decoder (consumers are threads
//                                        0..255); Decoder<T>::build_table(smem, cb, tid) fills
//                                        the table first, all consumers, then a barrier;
//                                        decode(smem, w, s, row0, f) writes the A registers of
//                                        the k-tile's 4 k16 steps, f[4 i + r] (i: the k16 step,
//                                        r: wgmma's A register: rows row0, row0 + 8 at k 2c,
//                                        then at k 2c + 8)

// The kbit tiled layout (docs/format.md): K bit planes and one E4M4 code per block of 32, decoded
// through the fragment table (fragment_lut.cuh).
template <int K>
struct KbitWeights {
  using Table = dev::fragment_lut::Table<K>;
  static constexpr int kTableBytes = Table::kBytes;
  static constexpr bool kTwoBlocksPerSm = K <= 4;      // K = 5: a 128 KB table
  static constexpr bool kTwoTilesAtTwoBlocks = false;  // F-033: 1 measured faster there
  static constexpr int kWeightBytes = Config::kTileN * Config::kKbPerTile * K * 4;
  static constexpr int kScaleBytes = Config::kCodeBytes;

  __device__ static uint32_t k_tile_bytes(const MainloopArgs&) {
    return kWeightBytes + kScaleBytes;
  }
  __device__ static void copy_k_tile(uint32_t w, uint32_t s, const MainloopArgs& a,
                                     const TileInfo& tile, int kt, uint32_t bar) {
    const long long t = (long long)kt * a.n_tiles + tile.nt;
    dev::bulk_copy_g2s(w, tile.weights + t * kWeightBytes, kWeightBytes, bar);
    dev::bulk_copy_g2s(s, tile.scales + t * kScaleBytes, kScaleBytes, bar);
  }

  template <typename T>
  struct Decoder {
    dev::fragment_lut::Decoder<K, T> dec;
    __device__ Decoder(const MainloopArgs&, int lane) : dec(lane) {}
    __device__ static void build_table(unsigned char* smem, const float* cb, int tid) {
      dev::fragment_lut::build<K, T>(smem, cb, tid, Config::kConsumers);
    }
    // Rows row0 and row0 + 8, blocks kb = 0, 1; k16 step 2kb + h takes pairs Q = 2h (k 2c..)
    // and 2h + 1 (k 2c + 8 ..).
    __device__ __forceinline__ void decode(const unsigned char* smem, const unsigned char* w,
                                           const unsigned char* s, int row0,
                                           uint32_t (&f)[16]) const {
      const uint32_t* planes = reinterpret_cast<const uint32_t*>(w);
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int r = row0 + 8 * rr;
        const uint32_t code2 = *reinterpret_cast<const uint16_t*>(s + r * 2);
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          uint32_t p[K], out[4];
          dev::load_planes<K>(planes + (r * 2 + kb) * K, p);
          const uint32_t scale2 =
              kb == 0 ? dec.template scale<0>(smem, code2) : dec.template scale<1>(smem, code2);
          dec.decode(smem, p, scale2, out);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            f[(2 * kb + h) * 4 + rr] = out[2 * h];
            f[(2 * kb + h) * 4 + 2 + rr] = out[2 * h + 1];
          }
        }
      }
    }
  };
};

// Fills one ring stage at st (KT k-tiles of k-step ks of `tile`, completing on mbarrier
// `full`): every activation box, even one past K_dim (the TMA fills it with zeros), so that the
// consumers multiply with no branch; the format's weight and scale tiles only for the k-tiles
// that exist. One producer thread calls it; the mainloop here and variant 07's kernel share it.
template <typename F, int KT, int kABytes, int kWeightsAt, int kScalesAt>
__device__ __forceinline__ void fill_stage(uint32_t st, uint32_t full, const CUtensorMap* amap,
                                           const MainloopArgs& a, const TileInfo& tile, int ks) {
  const int kt0 = ks * KT, n_kt = min(KT, a.k_tiles - kt0);
  dev::mbar_arrive_expect_tx(full, KT * kABytes + n_kt * F::k_tile_bytes(a));
  for (int j = 0; j < KT; ++j)
    dev::tma_load_2d(st + j * kABytes, amap, (kt0 + j) * Config::kTileK, tile.a_row, full);
  for (int j = 0; j < n_kt; ++j)
    F::copy_k_tile(st + kWeightsAt + j * F::kWeightBytes, st + kScalesAt + j * F::kScaleBytes, a,
                   tile, kt0 + j, full);
}

// A tile policy P gives the kernel:
//   P::Args                                 : MainloopArgs plus what P reads
//   int P::whole_tiles(const Args&)         : the round-robin tiles (dp_tiles); called after the
//                                             PDL wait, so it may read what the previous kernel
//                                             wrote
//   TileInfo P::tile(const Args&, int t)    : tile t
//   int P::contributors(const Args&, int t) : blocks that add into tile t (1: stored directly)
//   int P::row_end(const Args&, TileInfo)   : the tile's row_end, as the store compares it (a
//                                             dense problem's a.M from the parameter bank: kept
//                                             in a register it made ptxas spill at TT = 256)
// A block's walk over its (tile, k-step) units, one step at a time (no division in the loop):
// the producer and the consumers each make the same one.
struct Walk {
  int k_steps, dp_steps, sk0, steps;
  int i = 0, t = 0, ks = 0;  // step i is tile t, k-step ks
  // Stages the walk takes: the steps, and one phantom stage first when the steps are odd. The
  // consumers then run the steps two at a time (fragment sets 0 and 1) with no odd step after
  // the loop: a wgmma in that conditional tail made ptxas wait after every wgmma of the kernel
  // (C7518, F-037). The phantom stage loads and multiplies step 0's data into the accumulators,
  // which step 0 then overwrites; it stores nothing.
  int stages, n = 0;  // stage n of the ring (n = i + phantom once past the phantom)
  __device__ Walk(const MainloopArgs& a, int dp_tiles) : k_steps(a.k_steps) {
    const int b = int(blockIdx.x), grid = int(gridDim.x);
    const int dp_tiles_here = b < dp_tiles ? (dp_tiles - 1 - b) / grid + 1 : 0;
    dp_steps = dp_tiles_here * k_steps;
    sk0 = dp_tiles * k_steps + b * a.per;
    steps = dp_steps + max(0, min(a.units, sk0 + a.per) - sk0);
    stages = steps + (steps & 1);
    if (dp_steps > 0)
      t = b;
    else
      enter_stripe();
  }
  __device__ void enter_stripe() {
    t = sk0 / k_steps;
    ks = sk0 - t * k_steps;
  }
  __device__ __forceinline__ bool phantom() const { return n < stages - steps; }
  __device__ __forceinline__ bool ends_tile() const {
    return !phantom() && (ks == k_steps - 1 || i == steps - 1);
  }
  __device__ __forceinline__ void advance() {
    if (phantom()) {
      ++n;
      return;
    }
    ++n;
    ++i;
    if (i == dp_steps) {
      enter_stripe();
    } else if (++ks == k_steps) {
      ks = 0;
      t += i < dp_steps ? int(gridDim.x) : 1;
    }
  }
};

// Tile t's sums: a consumer thread's TT / 2 accumulators in the m16n8 (and wgmma) layout for
// each of its RB 16-row blocks, sum[rb][4 n8 + i] holding weight row row0 + 16 rb + 8 (i / 2) of
// the tile and token 8 n8 + 2 (lane % 4) + i % 2. Straight to C when the block is the tile's only
// contributor, else added into the split-K workspace, whose last contributor (is_last(counter,
// contributors): the consumers' arrival, which syncs them) converts them 16 at a time (one L2
// round trip each).
template <int TT, typename T, typename P, int RB, typename IsLast>
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
    const int fe = f0 + 16 * rb + 8 * ((ra >> 1) & 1), m = m0 + 8 * (ra >> 2) + (ra & 1);
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

template <typename F, int TT, typename T, typename P, MmaPath Path>
__global__ void __launch_bounds__(Config::kThreads, Layout<F, TT>::kBlocksPerSm)
    warp_specialized_kernel(const __grid_constant__ typename P::Args a,
                            const __grid_constant__ CUtensorMap amap) {
  using L = Layout<F, TT>;
  constexpr int S = L::kStages;
  extern __shared__ __align__(16) unsigned char smem[];
  // The table at the start of shared memory; the ring after it on a 1024-byte boundary, where
  // the 128-byte swizzle repeats (the dynamic base need not be 1024-aligned: the offset is a
  // runtime value). ptxas still adds the table's base to every table address (IMAD.IADD, 0.36
  // instructions a weight; README.md).
  const uint32_t base = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t ring_off = ((base + L::kRingAt + 1023) & ~1023u) - base;
  auto stage_a = [&](int s) { return base + ring_off + s * L::kStageBytes; };
  auto full = [&](int s) { return base + ring_off + L::kBarriersAt - L::kRingAt + 8 * s; };
  auto empty = [&](int s) { return base + ring_off + L::kBarriersAt - L::kRingAt + 8 * (S + s); };

  __shared__ float s_cb[32];
  if (threadIdx.x < 32) s_cb[threadIdx.x] = a.cb[threadIdx.x];
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      dev::mbar_init(full(s), 1);
      dev::mbar_init(empty(s), Config::kConsumers);
    }
    dev::fence_barrier_init();
  }
  __syncthreads();

  if (threadIdx.x >= Config::kConsumers) {  // the producer warpgroup
    dev::wgmma::release_registers<L::kProducerRegs>();
    if (threadIdx.x != Config::kConsumers) return;
    dev::pdl::wait();  // A is the previous kernel's output
    TileInfo tile{};
    int tile_t = -1;  // the tile `tile` describes
    for (Walk w(a, P::whole_tiles(a)); w.n < w.stages; w.advance()) {
      const int s = w.n % S;
      if (w.n >= S) {
        dev::mbar_wait(empty(s), uint32_t(w.n / S - 1) & 1u);
        dev::fence_proxy_async_shared();  // the consumers' reads before the refill
      }
      if (w.t != tile_t) {
        tile = P::tile(a, w.t);
        tile_t = w.t;
      }
      fill_stage<F, L::KT, L::kABytes, L::kWeightsAt, L::kScalesAt>(stage_a(s), full(s), &amap, a,
                                                                    tile, w.ks);
    }
    return;
  }

  // ------------------------------------------------------------------ consumers
  dev::wgmma::claim_registers<L::kConsumerRegs>();
  using Decoder = typename F::template Decoder<T>;
  Decoder::build_table(smem, s_cb, int(threadIdx.x));
  dev::sync_threads<Config::kConsumers>();
  dev::pdl::wait();  // C and the workspace: the previous kernel may still use them

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = (warp >> 2) * 64 + (warp & 3) * 16 + (lane >> 2);  // and row0 + 8
  const Decoder dec(a, lane);
  static_assert(has_mma_path(TT, Path), "no such token tile on this path");
  constexpr bool kSync = Path == MmaPath::sync;
  constexpr int kAccRegs = TT / 2;     // fp32 accumulators a thread holds (either path)
  constexpr int kSteps16 = 4 * L::KT;  // k16 steps per stage
  float acc[L::kAccSets][kAccRegs];
  uint32_t frag[2][kSteps16 * 4] = {};  // even / odd stages: the A registers of each k16 step
  int pending = -1;                     // the stage to free once its wgmma group has completed
  bool first = true;                    // the next wgmma starts a tile (overwrites acc)

  // Every consumer thread arrives once it has read a stage (racecheck cannot follow one
  // arrival per warp after __syncwarp: F-001).
  auto free_stage = [&](int s) { dev::mbar_arrive(empty(s)); };

  // Decodes k-tile j of stage s into f's registers of k16 steps 4j .. 4j + 3.
  auto decode = [&](int s, int j, uint32_t(&f)[kSteps16 * 4]) {
    const unsigned char* st = smem + ring_off + s * L::kStageBytes;
    dec.decode(smem, st + L::kWeightsAt + j * F::kWeightBytes,
               st + L::kScalesAt + j * F::kScaleBytes, row0,
               *reinterpret_cast<uint32_t(*)[16]>(&f[16 * j]));
  };

  // Tile t's sums: straight to C when this block is its only contributor, else added into the
  // workspace, whose last contributor converts them 16 at a time (one L2 round trip each).
  auto store = [&](int t) {
    // The accumulator sets' sum, in registers of its own: adding set 1 into set 0, registers
    // that wgmma defines, in this branch made ptxas wait after every wgmma of the kernel
    // (C7518, F-037).
    float sum[1][kAccRegs];
#pragma unroll
    for (int r = 0; r < kAccRegs; ++r) {
      sum[0][r] = acc[0][r];
#pragma unroll
      for (int set = 1; set < L::kAccSets; ++set) sum[0][r] += acc[set][r];
    }
    store_tile_sums<TT, T, P, 1>(a, t, row0, lane, sum, [](int* counter, int contributors) {
      return dev::splitk::arrive_is_last<Config::kConsumers>(counter, contributors);
    });
  };

  // sync path: lane l's ldmatrix row in a box, for k16 steps 2h, 2h + 1: token l % 8 of the n8
  // column (rows of 128 B), 16-byte chunk 4h + l / 8 (matrices 0..3: b0, b1 of step 2h, then of
  // 2h + 1), which the 128-byte swizzle stores at chunk ^ (token % 8).
  auto zero_acc = [&] {
#pragma unroll
    for (int set = 0; set < L::kAccSets; ++set)
#pragma unroll
      for (int r = 0; r < kAccRegs; ++r) acc[set][r] = 0.f;
  };
  if constexpr (kSync) zero_acc();
  uint32_t b_lane[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
    b_lane[h] = uint32_t((lane & 7) * 128 + ((((4 * h) + (lane >> 3)) ^ (lane & 7)) << 4));

  Walk w(a, P::whole_tiles(a));
  // f: this stage's fragments; prev: the previous stage's, which its wgmmas may still read.
  auto step = [&](uint32_t(&f)[kSteps16 * 4], uint32_t(&prev)[kSteps16 * 4]) {
    const int s = w.n % S;
    dev::mbar_wait(full(s), uint32_t(w.n / S) & 1u);
    // The last k-step of a tile may be short: its missing k-tile's weights are zeros (and its
    // activations, the TMA's fill). No branch between the wgmmas of a group: ptxas serializes
    // wgmmas across control flow (a wait after each, F-033).
    const int n_kt = min(L::KT, a.k_tiles - w.ks * L::KT);
#pragma unroll
    for (int j = 0; j < L::KT; ++j) {
      if (j < n_kt) {
        decode(s, j, f);
      } else {
#pragma unroll
        for (int q = 0; q < 16; ++q) f[16 * j + q] = 0u;
      }
    }
    if constexpr (kSync) {
      // The accumulators are zero here at a tile's first step: zeroed at the start and after
      // each tile's store or the phantom step (a test of `first` in every step cost a select
      // per accumulator).
#pragma unroll
      for (int j = 0; j < L::KT; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // k16 steps 2h, 2h + 1 of k-tile j
#pragma unroll
          for (int n8 = 0; n8 < TT / 8; ++n8) {
            uint32_t b[4];
            dev::ldmatrix_x4(b, stage_a(s) + j * L::kABytes + n8 * 1024 + b_lane[h]);
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int q = 4 * j + 2 * h + e;
              const uint32_t(&fa)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[4 * q]);
              const uint32_t(&fb)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[2 * e]);
              dev::mma_m16n8k16<T>(*reinterpret_cast<float(*)[4]>(&acc[q % L::kAccSets][4 * n8]),
                                   fa, fb);
            }
          }
        }
      }
      free_stage(s);  // every read of the stage is in a register now
      if (w.ends_tile() || w.phantom()) {
        if (!w.phantom()) store(w.t);
        zero_acc();
      }
    } else {
      using Mma = dev::wgmma::MmaRS<TT, T>;
      const uint64_t desc = dev::wgmma::desc_k_major_sw128(stage_a(s));
      dev::wgmma::fence();
#pragma unroll
      for (int j = 0; j < L::KT; ++j) {
#pragma unroll
        for (int k16 = 0; k16 < 4; ++k16) {
          const int q = 4 * j + k16;
          const uint32_t(&fa)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[4 * q]);
          // + 32 B per k16 step inside a 128-byte row, + one box per k-tile
          Mma::run(acc[q % L::kAccSets], fa, desc + uint64_t((j * L::kABytes + k16 * 32) >> 4),
                   !(first && q < L::kAccSets));
        }
      }
      dev::wgmma::commit();
      first = w.phantom();    // the step after the phantom starts the tile again
      dev::wgmma::wait<1>();  // the previous stage's group has completed
      // Its fragments are live until here: without this the register allocator may give the
      // next decode a register the previous group still reads, and ptxas then waits after
      // every wgmma (F-033).
      dev::wgmma::fence_operands(prev);
      if (pending >= 0) free_stage(pending);
      pending = s;
      if (w.ends_tile()) {  // tile t ends here for this block: all its wgmmas done, then the store
        dev::wgmma::wait<0>();
        dev::wgmma::fence_operands(f);
#pragma unroll
        for (int set = 0; set < L::kAccSets; ++set) dev::wgmma::fence_operands(acc[set]);
        free_stage(s);
        pending = -1;
        first = true;
        store(w.t);
      }
    }
    w.advance();
  };

  while (w.n < w.stages) {  // an even number of stages (Walk)
    step(frag[0], frag[1]);
    step(frag[1], frag[0]);
  }
}

// ---------------------------------------------------------------- host side

// The kernel of (weight format, token tile, element type, tile policy) and what its launch needs.
struct Kernel {
  const void* fn;
  int smem_bytes, stages, k_tiles_per_stage;
  int register_pool;  // registers the block's setmaxnreg trades: 384 x what ptxas must allocate
  bool sync = false;  // MmaPath::sync (for describe())
  int threads = Config::kThreads;  // a block's threads
  int pipelines = 1;  // walks a block runs (variant 07: two over one table), each a "block" of
                      // the plan: the launch has grid / pipelines blocks
};

inline constexpr int kTokenTiles[] = {8, 16, 32, 64, 128, 256};

// Maps a token tile to its constant; `who` names the caller in the refusal.
template <typename Fn>
decltype(auto) with_token_tile(int tt, const char* who, Fn&& fn) {
  return with_one_of<8, 16, 32, 64, 128, 256>(tt, std::forward<Fn>(fn), [&] {
    return std::string(who) + ": token_tile = " + std::to_string(tt) +
           " is not one of 8, 16, 32, 64, 128, 256 (or 0: chosen by the rows)";
  });
}

// The MMA path a row asks for: its `mma` option (0: default_mma_path, 1: wgmma, 2: sync),
// where that path has a kernel for token tile tt (sync 8..64, wgmma 16..256), else the other.
inline MmaPath mma_path_of(std::int64_t option, int tt) {
  const MmaPath want = option == 1   ? MmaPath::wgmma
                       : option == 2 ? MmaPath::sync
                                     : default_mma_path(tt);
  if (has_mma_path(tt, want)) return want;
  return want == MmaPath::sync ? MmaPath::wgmma : MmaPath::sync;
}

template <typename F, int TT, typename T, typename P, MmaPath Path>
Kernel kernel_with() {
  using L = Layout<F, TT>;
  return Kernel{reinterpret_cast<const void*>(warp_specialized_kernel<F, TT, T, P, Path>),
                L::kBytes + Config::kAlignSlack,
                L::kStages,
                L::KT,
                L::kRegisterPool,
                Path == MmaPath::sync};
}

// The kernel of token tile tt. A row with the `mma` option (kMmaOption) has both paths compiled
// where both exist and takes mma_path_of(mma_option, tt); the others compile and take the default
// path alone.
template <typename F, typename T, typename P, bool kMmaOption = false>
Kernel kernel_of(int tt, const char* who, std::int64_t mma_option = 0) {
  return with_token_tile(tt, who, [&](auto tt_const) {
    constexpr int TT = decltype(tt_const)::value;
    if constexpr (kMmaOption && has_mma_path(TT, MmaPath::sync) &&
                  has_mma_path(TT, MmaPath::wgmma)) {
      if (mma_path_of(mma_option, TT) == MmaPath::sync)
        return kernel_with<F, TT, T, P, MmaPath::sync>();
      return kernel_with<F, TT, T, P, MmaPath::wgmma>();
    } else {
      return kernel_with<F, TT, T, P, default_mma_path(TT)>();
    }
  });
}
// The kbit kernel of K = k.
template <typename T, typename P, bool kMmaOption = false>
Kernel kernel_for(int k, int tt, const char* who, std::int64_t mma_option = 0) {
  return with_k_bits(k, [&](auto k_const) {
    return kernel_of<KbitWeights<decltype(k_const)::value>, T, P, kMmaOption>(tt, who, mma_option);
  });
}

// Launches kernel k over `grid` blocks with its Args and the activations A [M][K_dim] (dtype t) as
// a TMA tensor of boxes of token_tile rows x 64 elements (128 B, the 128-byte swizzle wgmma's
// descriptor names); rows past M and k past K_dim land as zeros.
template <typename Args>
void launch_mainloop(const Kernel& k, int grid, Args& a, const void* A, DType t, std::int64_t M,
                     std::int64_t K_dim, int token_tile, cudaStream_t stream, bool pdl) {
  CUtensorMap amap = encode_tensor_map(
      A, t == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
      {{std::uint64_t(K_dim), 0, std::uint32_t(Config::kTileK)},
       {std::uint64_t(M), std::uint64_t(K_dim) * 2, std::uint32_t(token_tile)}},
      CU_TENSOR_MAP_SWIZZLE_128B);
  void* params[] = {&a, &amap};
  launch_kernel(k.fn, dim3(unsigned(grid)), dim3(unsigned(k.threads)), k.smem_bytes, stream, params,
                pdl);
}

// Throws (naming `who` and what the device or build lacks) unless the current device is
// compute capability 9.0 and this build's device code is sm_90a (wgmma, setmaxnreg).
void require_wgmma_device(const char* who);

// Makes the kernel launchable (its shared memory opted in) and returns the walks that run at
// once (SMs x blocks per SM x the kernel's pipelines). Throws, naming `who`, when the device lacks
// the shared memory or the kernel's registers cannot cover its warpgroups' setmaxnreg.
int prepare_kernel(const Kernel& k, const char* who);

}  // namespace kbit::variants::ws
