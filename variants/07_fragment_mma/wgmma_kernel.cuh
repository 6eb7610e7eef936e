// Variant 07's own kernel with wgmma consumers (32..128 tokens; pipelines.cuh has what it shares
// with the mma.sync one). At 64 and 128 tokens a warp's mma.sync reloads every activation
// fragment by ldmatrix (a warp's 16 or 32 rows share them: the activations outweigh the table in
// shared-memory wavefronts), where a wgmma reads them once per 64 rows; the shared mainloop's
// wgmma runs one block of 8 consumer warps an SM there, which leaves the decode's latency
// exposed (one consumer warpgroup pair over one ring).
//
// * A pipeline's consumers are two warpgroups, rows 0..63 and 64..127 of the tile (warp q: the
//   layout's warp q, rows 16 q ..), or one (RB = 2: warp q holds rows 16 q .. and 64 + 16 q ..,
//   two m64 wgmmas a k16 step over the same activations), which spreads a k-step's barrier
//   wait, addresses and descriptors over twice the weights. One warpgroup a pipeline runs beside
//   a producer warpgroup that gives it its registers (PipelineConfig's kProducerRegs: 232 a
//   thread on 2 pipelines, 152-160 on 3, the default at 32 and 64 tokens).
// * Tiles of 256 rows (C::kTileRows, option tile_rows): two of the layout's n-tiles, 16 row
//   blocks over twice the warps (four warpgroups, or two of two row blocks), so that a stage's
//   activation box (TT x 64, the stage's largest copy from 64 tokens) feeds 256 rows: half the
//   TMA writes of activations and half their L2 reads a weight.
// * A k-step (kPending = false): the barrier wait, the decode of its KT k-tiles (scales before the
//   MMA: wgmma cannot scale a block's products apart), one commit group of 4 KT RB wgmmas, its
//   wait, one arrival: while one warpgroup waits for its group, the SM's others decode. kPending
//   (option group_in_flight, KT = 2): a group a k-tile with one left in flight, each k-tile's
//   decode under the previous k-tile's wgmmas in the same two fragment buffers (measured -2% at
//   128 tokens on one pipeline, no gain on one warpgroup of two row blocks: README.md).
// * A piece's first wgmma overwrites the accumulators (no zero fill); the store is the mma.sync
//   kernel's (the accumulator layouts are the same).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/07_fragment_mma/pipelines.cuh"
#include "variants/common/barrier.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/common/wgmma.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/epilogue.cuh"
#include "variants/hopper/launcher.cuh"

namespace kbit::variants::fragment {

template <int TT, int KT, typename T, typename C, bool kPending, typename W_>
__global__ void __launch_bounds__(C::kThreads, 1)
    fragment_wgmma_kernel(const __grid_constant__ ws::DenseTiles::Args a,
                          const __grid_constant__ CUtensorMap amap) {
  using L = PipelineLayout<TT, KT, C, W_>;
  static_assert(L::kFits, "a ring of two stages at least");
  constexpr int RB = C::kRowBlocks;
  static_assert(RB == 1 || RB == 2, "a warpgroup a 64-row half of the tile, or two halves");
  static_assert(!kPending || KT == 2,
                "a k-tile's group in flight: the stage's two k-tiles' "
                "fragments are the two buffers");
  using P = typename C::Tiles;  // 128-row tiles, or 256 (two n-tiles, C::kTileRows)
  using W = typename L::W;
  using Mma = dev::wgmma::MmaRS<TT, T>;
  constexpr int S = L::kStages;
  __shared__ float s_cb[32];
  __shared__ int s_last[C::kPipelines];
  Pipeline<TT, KT, C, W_> pl(a, s_cb);  // the codebook and the barriers, then __syncthreads
  if (!pl.template consumer_start<T>(a, &amap, s_cb)) return;  // the producer's walk
  // ------------------------------------------------------------------ consumers
  const uint32_t base = pl.base;  // the table's shared-window address, every address's origin

  // Warp q of the pipeline's consumers holds row block q (rows 16 q ..) and, with two row
  // blocks, q + W too (W = its consumer warps: 4, or 8 on a 256-row tile): the layout's warps
  // q + W rb, whose words and codes (or meta) lie W row blocks' bytes further on; wgmma's m64
  // rows are the warpgroup's 4 warps.
  constexpr int kRbRows = 16 * C::kConsumerWarps;  // rows between a warp's row blocks (RB = 2)
  const int tid = int(threadIdx.x) % C::kPipeConsumers;
  const int q = tid >> 5;
  const int row0 = 16 * q + (pl.lane >> 2);  // rows row0 + kRbRows rb and + 8
  const typename W::template Decoder<T> dec(a, pl.lane, tid);
  float acc[RB][TT / 2];
  using Frag = uint32_t[RB][KT][16];  // a k-step's A registers: f[rb][j][4 k16 + r]

  // Decodes k-tile j of stage s (after its barrier wait) into f[.][j].
  int s = 0;
  uint32_t phase = 0;
  auto decode_tile = [&](Frag& f, int j) {
    const uint32_t st = pl.stage(s);
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
      dec.decode(base,
                 base + st + L::kWeightsAt + j * L::kTileWeightBytes +
                     W::kRowBlockWeightBytes * kRbRows / 16 * rb,
                 base + st + L::kScalesAt + j * L::kTileScaleBytes +
                     W::kRowBlockScaleBytes * kRbRows / 16 * rb,
                 row0, f[rb][j]);
  };
  // The stage's start-address field of the wgmma descriptors, through a shuffle from lane 0:
  // warp-uniform as ptxas sees it, so the descriptors are built in uniform registers (no R2UR a
  // wgmma).
  auto stage_field = [&] {
    return __shfl_sync(0xffffffffu, ((base + pl.stage(s)) & 0x3FFFF) >> 4, 0);
  };
  // Issues k-tile j's 4 RB wgmmas of the stage whose field is given (no commit); the first of a
  // piece overwrites the sums.
  auto multiply_tile = [&](const Frag& f, uint32_t field, int j, bool first) {
#pragma unroll
    for (int k16 = 0; k16 < 4; ++k16)
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        const uint32_t(&fa)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&f[rb][j][4 * k16]);
        // + 32 B per k16 step inside a 128-byte row, + one box per k-tile
        Mma::run(acc[rb], fa,
                 dev::wgmma::desc_k_major_sw128_at(field + ((j * L::kABytes + k16 * 32) >> 4)),
                 !(first && j == 0 && k16 == 0));
      }
  };
  auto next_stage = [&] {
    if (++s == S) {
      s = 0;
      phase ^= 1u;
    }
  };
  // The ring as a [token][row] tile of T for the walk's last piece (store_tile_staged).
  static_assert(TT * (2 * C::kTileRows + 16) <= L::kRingBytes, "the staged tile fits the ring");
  auto store = [&](int t, bool owner) {  // the accumulators are the sums (one set); 16 sums a
                                         // round trip (32 measured level or slower: F-062)
    store_piece<TT, T, P, RB, kRbRows, C::kPipeConsumers, 16>(
        a, t, owner, a.staged_store && pl.pieces.last(), row0, pl.lane, acc, base + pl.stage(0),
        tid, C::kStoreBarrier + pl.pipe, C::kReleaseBarrier + pl.pipe, &s_last[pl.pipe]);
  };
  auto fence_tile = [](Frag& f, int j) {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) dev::wgmma::fence_operands(f[rb][j]);
  };
  auto fence_acc = [&] {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) dev::wgmma::fence_operands(acc[rb]);
  };

  for (int t, ks0, ks1; pl.pieces.next(t, ks0, ks1);) {
    if constexpr (!kPending) {
      // A k-step: its KT k-tiles' wgmmas as one group, waited for before the arrival.
#pragma unroll 1
      for (int ks = ks0; ks < ks1; ++ks) {
        Frag f;
        dev::mbar_wait(pl.full(s), phase);  // polling (wait_hint_ns: the producer's waits only)
#pragma unroll
        for (int j = 0; j < KT; ++j) decode_tile(f, j);
        const uint32_t field = stage_field();
        dev::wgmma::fence();
#pragma unroll
        for (int j = 0; j < KT; ++j) multiply_tile(f, field, j, ks == ks0);
        dev::wgmma::commit();
        dev::wgmma::wait<0>();
        // The group has read the fragments and written the accumulators: keep both in their
        // registers until here (the next decode must not reuse a register the group reads).
        fence_acc();
#pragma unroll
        for (int j = 0; j < KT; ++j) fence_tile(f, j);
        dev::mbar_arrive(pl.empty(s));  // every thread: its reads of the stage are done
        next_stage();
      }
    } else {
      // A group a k-tile, one left in flight: k-tile 1's decode runs under k-tile 0's wgmmas and
      // the next k-step's k-tile 0 under k-tile 1's. A wait<1> before each decode retires the
      // group that read the buffer it fills (f[.][j], two k-tiles back); the stage's arrival
      // follows the retirement of its last group, in the next k-step.
      Frag f;
      int last = -1;  // the stage whose arrival is pending (a piece has a k-step at least: Pieces)
#pragma unroll 1
      for (int ks = ks0; ks < ks1; ++ks) {
        dev::mbar_wait(pl.full(s), phase);
        const uint32_t field = stage_field();
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          dev::wgmma::wait<1>();
          fence_tile(f, j);
          if (j == 1 && last >= 0) dev::mbar_arrive(pl.empty(last));
          decode_tile(f, j);
          dev::wgmma::fence();
          multiply_tile(f, field, j, ks == ks0);
          dev::wgmma::commit();
        }
        last = s;
        next_stage();
      }
      dev::wgmma::wait<0>();
      fence_acc();
      fence_tile(f, 0);
      fence_tile(f, 1);
      dev::mbar_arrive(pl.empty(last));
    }
    store(t, ks0 == 0);
  }
}

// The kernel of token tile TT (32..128), KT k-tiles a stage, on configuration C (pipelines, row
// blocks a warp: 1 or 2), over weight format W.
template <int TT, int KT, typename T, typename C, bool kPending = false,
          typename W = FragmentWeightsT<4, true>>
ws::Kernel wgmma_kernel() {
  using L = PipelineLayout<TT, KT, C, W>;
  ws::Kernel k{};
  // A configuration without two ring stages beside the format's table (K = 5's is 128 KB) is
  // not compiled: no kernel (fn null), which the setup refuses by name.
  if constexpr (L::kFits) {
    k.fn = reinterpret_cast<const void*>(fragment_wgmma_kernel<TT, KT, T, C, kPending, W>);
    k.smem_bytes = L::kBytes + ws::Config::kAlignSlack;
    k.stages = L::kStages;
    k.k_tiles_per_stage = KT;
    k.register_pool = C::kRegisterPool;  // 0: no setmaxnreg
    k.sync = false;                      // RS wgmma (describe())
    k.threads = C::kThreads;
    k.pipelines = C::kPipelines;
    k.tile_rows = C::kTileRows;
  }
  return k;
}

}  // namespace kbit::variants::fragment
