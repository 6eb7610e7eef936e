// Variant 07's own kernel with mma.sync consumers (8..64 tokens; pipelines.cuh has what it
// shares with the wgmma one): none of the shared mainloop's wgmma machinery (double-buffered
// fragments, the phantom stage, a tile-end test and a zero fill in every stage).
//
// * Each warp of a pipeline's 8 / RB consumer warps multiplies RB 16-row blocks of the tile,
//   loading each activation fragment (ldmatrix) once for its RB MMAs.
// * Scale after the MMA (kScaleAfter): the pairs go to the MMA unscaled, each block's two k16
//   steps multiply into a zeroed set, and one FFMA an accumulator adds it scaled into the sums:
//   TT / 2 FFMA a block-row pair where the HMUL2s cost 8 (fewer at 8 tokens, equal at 16), and no
//   shared-memory wavefronts for the scales (decoded by arithmetic).
// * Group scales (W::kGroupScales, AWQ): where a row's scale spans the whole k-step (G >= 64 KT),
//   the k-step's MMAs all multiply into one zeroed set and one FFMA an accumulator a k-step adds
//   it scaled: at G = 128 and 16 tokens 8 FFMA a row block and k-step where the HMUL2s took 32.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/07_fragment_mma/pipelines.cuh"
#include "variants/common/barrier.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/epilogue.cuh"
#include "variants/hopper/launcher.cuh"

namespace kbit::variants::fragment {

template <int TT, int KT, bool kScaleAfter, typename T, typename C, typename W_>
__global__ void __launch_bounds__(C::kThreads, 1)
    fragment_sync_kernel(const __grid_constant__ ws::DenseTiles::Args a,
                         const __grid_constant__ CUtensorMap amap) {
  using L = PipelineLayout<TT, KT, C, W_>;
  static_assert(L::kFits, "a ring of two stages at least");
  static_assert(C::kRowTiles == 1, "tiles of 128 rows (the layout's n-tile)");
  using P = ws::DenseTiles;
  using W = typename L::W;
  constexpr int S = L::kStages, RB = C::kRowBlocks;
  __shared__ float s_cb[32];
  __shared__ int s_last[C::kPipelines];
  Pipeline<TT, KT, C, W_> pl(a, s_cb);  // the codebook and the barriers, then __syncthreads
  if (!pl.template consumer_start<T>(a, &amap, s_cb)) return;  // the producer's walk
  // ------------------------------------------------------------------ consumers
  const uint32_t base = pl.base;
  const int lane = pl.lane, pipe = pl.pipe;

  // This warp's row blocks are the layout's warps RB q .. RB q + RB - 1 (layout thread
  // 32 (RB q + rb) + lane: words and codes (or meta) one row block's bytes further on a block).
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
  // One scale a row over the k-step (group scales of G >= 64 KT, uniform over the grid).
  bool group_step = false;
  if constexpr (kScaleAfter && W::kGroupScales) group_step = a.group >= 64 * KT;
  for (int t, ks0, ks1; pl.pieces.next(t, ks0, ks1);) {
    // Row block rb's two k16 steps of block h against token column n8 (b: its ldmatrix
    // fragments, b0 then b1), from the unscaled pairs f into a zeroed set, added scaled into the
    // sums (kScaleAfter).
    auto scaled_mma = [&](int rb, int h, int n8, const uint32_t(&f)[RB][16],
                          const float(&scale)[RB][4], const uint32_t(&b)[4]) {
      const uint32_t(&b0)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[0]);
      const uint32_t(&b1)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[2]);
      const uint32_t(&f0)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][8 * h]);
      const uint32_t(&f1)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][8 * h + 4]);
      float(&c)[4] = *reinterpret_cast<float(*)[4]>(&acc[rb][0][4 * n8]);
      float p[4] = {0.f, 0.f, 0.f, 0.f};
      dev::mma_m16n8k16<T>(p, f0, b0);
      dev::mma_m16n8k16<T>(p, f1, b1);
      c[0] = fmaf(p[0], scale[rb][h], c[0]);  // row0: (rr 0, block h)
      c[1] = fmaf(p[1], scale[rb][h], c[1]);
      c[2] = fmaf(p[2], scale[rb][2 + h], c[2]);  // row0 + 8: (rr 1, block h)
      c[3] = fmaf(p[3], scale[rb][2 + h], c[3]);
    };
    // Row block rb's weight and scale (code or meta) tiles of k-tile j in the stage at st.
    auto weights_at = [&](uint32_t st, int j, int rb) {
      return base + st + L::kWeightsAt + j * W::kWeightBytes + W::kRowBlockWeightBytes * rb;
    };
    auto scales_at = [&](uint32_t st, int j, int rb) {
      return base + st + L::kScalesAt + j * W::kScaleBytes + W::kRowBlockScaleBytes * rb;
    };
    // The k-step's products of every k-tile into one zeroed set, added scaled by the row's
    // one scale of the k-step (k-tile 0's, block 0: rows row0 and row0 + 8).
    auto group_k_step = [&](uint32_t st) {
      float p[RB][kAccRegs];
      float scale0[RB][4];
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int r = 0; r < kAccRegs; ++r) p[rb][r] = 0.f;
#pragma unroll
      for (int j = 0; j < KT; ++j) {
        uint32_t f[RB][16];
        float scale[RB][4];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          dec.decode_unscaled(table, weights_at(st, j, rb), scales_at(st, j, rb), f[rb], scale[rb]);
          if (j == 0)
#pragma unroll
            for (int e = 0; e < 4; ++e) scale0[rb][e] = scale[rb][e];
        }
#pragma unroll
        for (int h = 0; h < 2; ++h)
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
              float(&q)[4] = *reinterpret_cast<float(*)[4]>(&p[rb][4 * n8]);
              dev::mma_m16n8k16<T>(q, f0, b0);
              dev::mma_m16n8k16<T>(q, f1, b1);
            }
          }
      }
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int n8 = 0; n8 < TT / 8; ++n8) {
          float(&c)[4] = *reinterpret_cast<float(*)[4]>(&acc[rb][0][4 * n8]);
          const float(&q)[4] = *reinterpret_cast<const float(*)[4]>(&p[rb][4 * n8]);
          c[0] = fmaf(q[0], scale0[rb][0], c[0]);  // row0
          c[1] = fmaf(q[1], scale0[rb][0], c[1]);
          c[2] = fmaf(q[2], scale0[rb][2], c[2]);  // row0 + 8
          c[3] = fmaf(q[3], scale0[rb][2], c[3]);
        }
    };
#pragma unroll 1
    for (int ks = ks0; ks < ks1; ++ks) {
      pl.wait(pl.full(s), phase);
      const uint32_t st = pl.stage(s);
      if (group_step) {  // a constant false where the format has no group scales
        if constexpr (kScaleAfter && W::kGroupScales) group_k_step(st);
      } else {
#pragma unroll
        for (int j = 0; j < KT; ++j) {
          uint32_t f[RB][16];
          float scale[RB][4];
#pragma unroll
          for (int rb = 0; rb < RB; ++rb) {
            const uint32_t w = weights_at(st, j, rb), sc = scales_at(st, j, rb);
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
#pragma unroll
              for (int rb = 0; rb < RB; ++rb) {
                if constexpr (kScaleAfter) {
                  scaled_mma(rb, h, n8, f, scale, b);
                } else {
                  const uint32_t(&b0)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[0]);
                  const uint32_t(&b1)[2] = *reinterpret_cast<const uint32_t(*)[2]>(&b[2]);
                  const uint32_t(&f0)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][8 * h]);
                  const uint32_t(&f1)[4] =
                      *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][8 * h + 4]);
                  float(&c)[4] = *reinterpret_cast<float(*)[4]>(&acc[rb][0][4 * n8]);
                  float(&c1)[4] = *reinterpret_cast<float(*)[4]>(&acc[rb][kSets - 1][4 * n8]);
                  dev::mma_m16n8k16<T>(c, f0, b0);
                  dev::mma_m16n8k16<T>(c1, f1, b1);
                }
              }
            }
          }
        }
      }
      // Every read of the stage is in a register now (the MMAs consumed them). Each thread
      // arrives: one elected arrival a warp after __syncwarp measured within noise, and
      // racecheck cannot order the other lanes' reads through it.
      dev::mbar_arrive(pl.empty(s));
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
    // The storer's sums a round trip: all of them to 16 tokens (RB TT / 2: 8 or 32 by default),
    // else 16 (at 32 and 64 tokens, `mma = 2` only, 32 spilled more in ptxas's report).
    constexpr int kLoadFloats = TT <= 16 ? RB * kAccRegs : 16;
    // From the registers (through the ring measured -2% to +3% here: README.md, build T).
    store_piece<TT, T, P, RB, 16, C::kPipeConsumers, kLoadFloats>(
        a, t, ks0 == 0, /*staged=*/false, row0, lane, sum, 0, tid, C::kStoreBarrier + pipe,
        C::kReleaseBarrier + pipe, &s_last[pipe]);
    zero_acc();
  }
}

// The kernel of token tile TT (8..64), KT k-tiles a stage, scale after the MMA or not, on
// configuration C (pipelines, row blocks a warp), over weight format W.
template <int TT, int KT, bool kScaleAfter, typename T, typename C,
          typename W = FragmentWeightsT<4, true>>
ws::Kernel sync_kernel() {
  using L = PipelineLayout<TT, KT, C, W>;
  ws::Kernel k{};
  // A configuration without two ring stages beside the format's table (K = 5's is 128 KB) is
  // not compiled: no kernel (fn null), which the setup refuses by name.
  if constexpr (L::kFits) {
    k.fn = reinterpret_cast<const void*>(fragment_sync_kernel<TT, KT, kScaleAfter, T, C, W>);
    k.smem_bytes = L::kBytes + ws::Config::kAlignSlack;
    k.stages = L::kStages;
    k.k_tiles_per_stage = KT;
    k.register_pool = 0;  // no setmaxnreg
    k.sync = true;
    k.threads = C::kThreads;
    k.pipelines = C::kPipelines;
  }
  return k;
}

}  // namespace kbit::variants::fragment
