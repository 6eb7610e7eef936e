// The shared Hopper mainloop: the warp-specialized RS wgmma kernel (weights as wgmma's register
// operand, A and B swapped) over any order of output tiles and any weight format. Variant 03
// (warp_specialized.cu) runs it over a dense problem's tiles with stream-K, variant 05
// (grouped_mma.cu) over the (expert, m-tile, n-tile) tiles of an MoE layer listed on the device,
// variants 06 and 07 over the dense tiles of their own layouts. The tile order is the policy P
// (scheduler.cuh has the contract), the weights' layout and decode the format F (config.cuh has
// the contract; kbit_weights.cuh, the AWQ repack in variants/06_awq, the fragment-order layout in
// variants/07_fragment_mma); everything else is shared. README.md beside this file lists the
// pieces; variants/03_warp_specialized/README.md has the picture, the register budget and what
// each step bought.
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

#include <cstdint>

#include "variants/common/barrier.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/common/wgmma.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/epilogue.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/producer.cuh"
#include "variants/hopper/scheduler.cuh"

namespace kbit::variants::ws {

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

// ---------------------------------------------------------------- the kernel's instantiations

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

}  // namespace kbit::variants::ws
