// Variant 07's own kernel at 8..64 tokens: mma.sync consumers on the fragment-order layout, with
// none of the shared mainloop's wgmma machinery (double-buffered fragments, the phantom stage,
// a tile-end test and a zero fill in every stage), and several pipelines a block over one table.
//
// * A block runs 2..4 pipelines (SyncConfig), each what a block of the shared mainloop is: one
//   producer warp (one thread works) filling a ring of stages with variants/hopper/producer.cuh's
//   fill_stage, and consumer warps (the tile's 128 rows, 1, 2 or 4 16-row blocks a warp) over its
//   own walk of the dense problem's tiles. All read one 64 KB decode table: a block has 160 KB of
//   ring where two blocks of the shared mainloop have 2 x 48 KB.
// * A walk is a list of pieces (tile, k-steps [ks0, ks1)): whole tiles round-robin, then one
//   stream-K stripe cut at tile boundaries (the plan of variants/hopper/launcher.cu, walks counted
//   as blocks). The k-step loop has one barrier wait, the decode and MMAs of its k-tiles and one
//   arrival: the tile's end is the loop's end, and a short last k-step needs no branch (its
//   missing k-tile's activation box is the TMA's zeros; the stale weights are table entries,
//   always finite, so they add exact zeros).
// * Every shared-memory address comes from the dynamic array's symbol (table_address), none from
//   a converted generic pointer: ptxas then folds the table's base into each lookup, where the
//   converted base (a register with the CTA's rank bits) cost an IMAD.IADD a lookup (0.5 a weight).
// * Scale after the MMA (kScaleAfter): the pairs go to the MMA unscaled, each block's two k16
//   steps multiply into a zeroed set, and one FFMA an accumulator adds it scaled into the sums:
//   TT / 2 FFMA a block-row pair where the HMUL2s cost 8 (fewer at 8 tokens, equal at 16), and no
//   shared-memory wavefronts for the scales (decoded by arithmetic).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "variants/07_fragment_mma/fragment_weights.cuh"
#include "variants/07_fragment_mma/pieces.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/epilogue.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/producer.cuh"

// The own kernel's dynamic shared memory, by a name of its own: its address is a link-time
// constant (table_address), so the table lookups take no add (common/smem_access.cuh).
extern "C" __shared__ __align__(16) unsigned char kbit_fragment_sync_smem[];

namespace kbit::variants::fragment {

// The shared-window address of the table (the start of kbit_fragment_sync_smem).
__device__ __forceinline__ uint32_t table_address() {
  uint32_t a;
  asm volatile("" ::"l"(kbit_fragment_sync_smem));  // a C++ use: the PTX declares the symbol
  asm("mov.u32 %0, kbit_fragment_sync_smem;" : "=r"(a));
  return a;
}

// kPipelines walks a block over one table, each with 8 / kRowBlocks consumer warps of
// kRowBlocks 16-row blocks (the tile's 128 rows) and one producer warp. RB row blocks a warp
// load each activation fragment (ldmatrix) once for RB MMAs: the activations are a third of
// the shared-memory wavefronts at 16 tokens with one (the kernel is bound by them there).
template <int kPipelines_, int kRowBlocks_>
struct SyncConfig {
  static constexpr int kPipelines = kPipelines_;
  static constexpr int kRowBlocks = kRowBlocks_;
  static constexpr int kConsumerWarps = 8 / kRowBlocks;  // a pipeline's
  static constexpr int kPipeConsumers = 32 * kConsumerWarps;
  static constexpr int kConsumers = kPipelines * kPipeConsumers;
  static constexpr int kThreads = kConsumers + 32 * kPipelines;  // + a producer warp each
  static constexpr int kTableBarrier = 1;  // named barrier over all consumers (the table)
  static constexpr int kStoreBarrier = 2;  // + pipeline: its consumers (the split-K arrival)
  static_assert(kRowBlocks == 1 || kRowBlocks == 2 || kRowBlocks == 4, "1, 2 or 4 row blocks");
  static_assert(kStoreBarrier + kPipelines <= 16, "named barriers 0..15");
};

// Shared memory: the table, pipeline 0's ring, pipeline 1's ring, the barriers. A stage holds KT
// k-tiles: KT activation boxes (TT x 64, 128-byte swizzled), KT weight tiles, KT code tiles.
template <int TT, int KT, typename C>
struct SyncLayout {
  using W = FragmentWeightsT<true>;
  static_assert(TT >= 8 && TT <= 64 && KT >= 1 && KT <= 2, "8..64 tokens, 1 or 2 k-tiles");
  static constexpr int kTableBytes = W::kTableBytes;
  static constexpr int kABytes = TT * ws::Config::kTileK * 2;
  static constexpr int kWeightsAt = KT * kABytes;
  static constexpr int kScalesAt = kWeightsAt + KT * W::kWeightBytes;
  static constexpr int kCopyBytes = kScalesAt + KT * W::kScaleBytes;
  static constexpr int kStageBytes = (kCopyBytes + 1023) / 1024 * 1024;  // boxes at 1024 B
  static constexpr int kBarrierBytes = 1024;
  static constexpr int kStages =
      std::min(ws::Config::kMaxStages, (ws::Config::kSmemOptin - ws::Config::kAlignSlack -
                                        kTableBytes - kBarrierBytes - 1024 /* static */) /
                                           (C::kPipelines * kStageBytes));
  static constexpr int kRingBytes = kStages * kStageBytes;  // one pipeline's
  static constexpr int kRingAt = kTableBytes;
  static constexpr int kBarriersAt = kRingAt + C::kPipelines * kRingBytes;
  static constexpr int kBytes = kBarriersAt + kBarrierBytes;
  // Accumulator sets, k16 step q adding into set q % kAccSets: at 8 and 16 tokens a warp's
  // HMMAs are one or two chains, which would run at the HMMA's latency.
  static constexpr int kAccSets = TT <= 16 ? 2 : 1;
  static constexpr bool kFits = kStages >= 2;  // a ring of two stages at least
  static_assert(kTableBytes % 1024 == 0 && kABytes % 1024 == 0, "boxes start 1024-byte aligned");
  static_assert(16 * C::kPipelines * kStages <= kBarrierBytes, "the barriers");
};

template <int TT, int KT, bool kScaleAfter, typename T, typename C>
__global__ void __launch_bounds__(C::kThreads, 1)
    fragment_sync_kernel(const __grid_constant__ ws::DenseTiles::Args a,
                         const __grid_constant__ CUtensorMap amap) {
  using L = SyncLayout<TT, KT, C>;
  static_assert(L::kFits, "a ring of two stages at least");
  using P = ws::DenseTiles;
  using W = typename L::W;
  constexpr int S = L::kStages, RB = C::kRowBlocks;
  // Every shared address from the array's symbol (table_address), none from a converted generic
  // pointer. The rings start on a 1024-byte boundary, where the 128-byte swizzle repeats.
  const uint32_t base = table_address();
  const uint32_t ring_off = ((base + L::kRingAt + 1023) & ~1023u) - base;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  const bool producer = warp >= C::kPipelines * C::kConsumerWarps;
  const int pipe = producer ? warp - C::kPipelines * C::kConsumerWarps : warp / C::kConsumerWarps;
  const uint32_t ring = ring_off + uint32_t(pipe * L::kRingBytes);  // from base
  const uint32_t bars0 = base + ring_off + (L::kBarriersAt - L::kRingAt);
  const uint32_t bars = bars0 + 16 * S * pipe;
  auto full = [&](int s) { return bars + 8 * s; };
  // A ring barrier's wait: re-polling with try_wait's own short limit (wait_hint_ns = 0, the
  // default), or asleep until the phase completes or wait_hint_ns pass (measured slower: the
  // wake-up comes late). The test stays outside mbar_wait's retry loop, as measured.
  const uint32_t hint = uint32_t(a.wait_hint_ns);
  auto ring_wait = [hint](uint32_t bar, uint32_t parity) {
    if (hint != 0)
      dev::mbar_wait(bar, parity, hint);
    else
      dev::mbar_wait(bar, parity);
  };
  auto empty = [&](int s) { return bars + 8 * (S + s); };

  __shared__ float s_cb[32];
  __shared__ int s_last[C::kPipelines];
  if (threadIdx.x < 32) s_cb[threadIdx.x] = a.cb[threadIdx.x];
  if (threadIdx.x == 0) {
    for (int p = 0; p < C::kPipelines; ++p)
      for (int s = 0; s < S; ++s) {
        dev::mbar_init(bars0 + 16 * S * p + 8 * s, 1);
        dev::mbar_init(bars0 + 16 * S * p + 8 * (S + s), C::kPipeConsumers);
      }
    dev::fence_barrier_init();
  }
  __syncthreads();
  // The walk: block-major (a block's pipelines take consecutive walks: neighbouring stripes) or
  // pipeline-major (consecutive walks on different SMs); walks past the work find none.
  const int walk = a.pipeline_major ? pipe * int(gridDim.x) + int(blockIdx.x)
                                    : int(blockIdx.x) * C::kPipelines + pipe;
  Pieces pieces(a, walk, int(gridDim.x) * C::kPipelines);  // pieces.hpp

  if (producer) {
    if (lane != 0) return;
    dev::pdl::wait();  // A is the previous kernel's output
    int s = 0;
    uint32_t phase = 0;
    for (int t, ks0, ks1; pieces.next(t, ks0, ks1);) {
      const ws::TileInfo tile = P::tile(a, t);
      for (int ks = ks0; ks < ks1; ++ks) {
        // Parity phase ^ 1 of a fresh barrier counts as completed: the first lap does not wait.
        ring_wait(empty(s), phase ^ 1u);
        dev::fence_proxy_async_shared();  // the consumers' reads before the refill
        ws::fill_stage<W, KT, L::kABytes, L::kWeightsAt, L::kScalesAt>(
            base + ring + s * L::kStageBytes, full(s), &amap, a, tile, ks);
        if (++s == S) {
          s = 0;
          phase ^= 1u;
        }
      }
    }
    return;
  }

  // ------------------------------------------------------------------ consumers
  dev::fragment_lut::build<4, T>(base, s_cb, int(threadIdx.x), C::kConsumers);
  dev::sync_named<C::kConsumers>(C::kTableBarrier);
  dev::pdl::wait();  // C and the workspace: the previous kernel may still use them

  // This warp's row blocks are the layout's warps RB q .. RB q + RB - 1 (layout thread
  // 32 (RB q + rb) + lane: words 512 rb and codes 32 rb further on).
  const int tid = int(threadIdx.x) % C::kPipeConsumers;
  const int q = tid >> 5;
  const int row0 = 16 * RB * q + (lane >> 2);  // rows row0 + 16 rb and + 8
  const typename W::template Decoder<T> dec(a, lane, 32 * RB * q + lane);
  const uint32_t table = base;
  constexpr int kAccRegs = TT / 2;
  // Accumulator sets (scale before the MMA): k16 step 2h + e adds into set e, two chains.
  constexpr int kSets = kScaleAfter ? 1 : L::kAccSets;  // after: the FFMAs end each chain
  float acc[RB][kSets][kAccRegs];
  auto zero_acc = [&] {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int set = 0; set < kSets; ++set)
#pragma unroll
        for (int r = 0; r < kAccRegs; ++r) acc[rb][set][r] = 0.f;
  };
  zero_acc();
  // Lane l's ldmatrix row for k16 steps 2h, 2h + 1 (block h of a k-tile): token l % 8 of an n8
  // column (rows of 128 B), 16-byte chunk 4h + l / 8 (matrices 0..3: b0, b1 of step 2h, then
  // of 2h + 1), which the 128-byte swizzle stores at chunk ^ (token % 8).
  uint32_t b_lane[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
    b_lane[h] = uint32_t((lane & 7) * 128 + ((((4 * h) + (lane >> 3)) ^ (lane & 7)) << 4));

  int s = 0;
  uint32_t phase = 0;
  for (int t, ks0, ks1; pieces.next(t, ks0, ks1);) {
#pragma unroll 1
    for (int ks = ks0; ks < ks1; ++ks) {
      ring_wait(full(s), phase);
      const uint32_t st = ring + s * L::kStageBytes;
#pragma unroll
      for (int j = 0; j < KT; ++j) {
        uint32_t f[RB][16];
        float scale[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          const uint32_t w = base + st + L::kWeightsAt + j * W::kWeightBytes + 512 * rb;
          const uint32_t sc = base + st + L::kScalesAt + j * W::kScaleBytes + 32 * rb;
          if constexpr (kScaleAfter)
            dec.decode_unscaled(table, w, sc, f[rb], scale[rb]);
          else
            dec.decode(table, w, sc, row0, f[rb]);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // block h: k16 steps 2h, 2h + 1
#pragma unroll
          for (int n8 = 0; n8 < TT / 8; ++n8) {
            uint32_t b[4];
            dev::ldmatrix_x4(b, base + st + j * L::kABytes + n8 * 1024 + b_lane[h]);
            const uint32_t(&b0)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[0]);
            const uint32_t(&b1)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[2]);
#pragma unroll
            for (int rb = 0; rb < RB; ++rb) {
              const uint32_t(&f0)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][8 * h]);
              const uint32_t(&f1)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][8 * h + 4]);
              float(&c)[4] = *reinterpret_cast<float(*)[4]>(&acc[rb][0][4 * n8]);
              if constexpr (kScaleAfter) {
                float p[4] = {0.f, 0.f, 0.f, 0.f};
                dev::mma_m16n8k16<T>(p, f0, b0);
                dev::mma_m16n8k16<T>(p, f1, b1);
                c[0] = fmaf(p[0], scale[rb][h], c[0]);  // row0: (rr 0, block h)
                c[1] = fmaf(p[1], scale[rb][h], c[1]);
                c[2] = fmaf(p[2], scale[rb][2 + h], c[2]);  // row0 + 8: (rr 1, block h)
                c[3] = fmaf(p[3], scale[rb][2 + h], c[3]);
              } else {
                float(&c1)[4] = *reinterpret_cast<float(*)[4]>(&acc[rb][kSets - 1][4 * n8]);
                dev::mma_m16n8k16<T>(c, f0, b0);
                dev::mma_m16n8k16<T>(c1, f1, b1);
              }
            }
          }
        }
      }
      // Every read of the stage is in a register now (the MMAs consumed them). Each thread
      // arrives: one elected arrival a warp after __syncwarp measured within noise, and
      // racecheck cannot order the other lanes' reads through it.
      dev::mbar_arrive(empty(s));
      if (++s == S) {
        s = 0;
        phase ^= 1u;
      }
    }
    float sum[RB][kAccRegs];
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int r = 0; r < kAccRegs; ++r) {
        sum[rb][r] = acc[rb][0][r];
#pragma unroll
        for (int set = 1; set < kSets; ++set) sum[rb][r] += acc[rb][set][r];
        if constexpr (kScaleAfter) sum[rb][r] *= W::kUnscaledFactor;  // the scales were / 16
      }
    ws::store_tile_sums<TT, T, P, RB>(a, t, row0, lane, sum, [&](int* counter, int contributors) {
      return dev::splitk::group_arrive_is_last<C::kPipeConsumers>(
          counter, contributors, C::kStoreBarrier + pipe, tid == 0, &s_last[pipe]);
    });
    zero_acc();
  }
}

// The kernel of token tile TT (8..64), KT k-tiles a stage, scale after the MMA or not, on
// configuration C (pipelines, row blocks a warp).
template <int TT, int KT, bool kScaleAfter, typename T, typename C>
ws::Kernel sync_kernel() {
  using L = SyncLayout<TT, KT, C>;
  ws::Kernel k{};
  k.fn = reinterpret_cast<const void*>(fragment_sync_kernel<TT, KT, kScaleAfter, T, C>);
  k.smem_bytes = L::kBytes + ws::Config::kAlignSlack;
  k.stages = L::kStages;
  k.k_tiles_per_stage = KT;
  k.register_pool = 0;  // no setmaxnreg
  k.sync = true;
  k.threads = C::kThreads;
  k.pipelines = C::kPipelines;
  return k;
}

}  // namespace kbit::variants::fragment
