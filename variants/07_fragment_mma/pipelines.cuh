// Variant 07's own kernels (sync_kernel.cuh: mma.sync consumers; wgmma_kernel.cuh: wgmma
// consumers) share this: several pipelines a block over one decode table.
//
// * A block runs kPipelines pipelines (PipelineConfig), each what a block of the shared mainloop
//   is: one producer warp (one thread works) filling a ring of stages with
//   variants/hopper/producer.cuh's fill_stage, and consumer warps over the tile's rows, over
//   its own walk of the dense problem's tiles. All read one decode table (64 KB; 128 KB at K = 5;
//   none on AWQ weights): beside 64 KB a block's pipelines share ~160 KB of ring where two blocks
//   of the shared mainloop have 2 x 48 KB.
// * A walk is a list of pieces (tile, k-steps [ks0, ks1)): whole tiles round-robin, then one
//   stream-K stripe cut at tile boundaries (pieces.hpp). The consumers' k-step loop has one
//   barrier wait, the decode and MMAs of its k-tiles and one arrival: the tile's end is the loop's
//   end, and a short last k-step needs no branch (its missing k-tile's activation box is the TMA's
//   zeros; the stale weights are table entries, always finite, so they add exact zeros).
// * Every shared-memory address comes from the dynamic array's symbol (table_address), none from
//   a converted generic pointer: ptxas then folds the table's base into each lookup, where the
//   converted base (a register with the CTA's rank bits) cost an IMAD.IADD a lookup (0.5 a weight).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "variants/07_fragment_mma/fragment_weights.cuh"
#include "variants/07_fragment_mma/pieces.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/smem_access.cuh"
#include "variants/common/wgmma.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/epilogue.cuh"
#include "variants/hopper/producer.cuh"

// The own kernels' dynamic shared memory, by a name of its own: its address is a link-time
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

// kPipelines walks a block over one table, each with kTileRows / 16 / kRowBlocks consumer warps
// of kRowBlocks 16-row blocks (the tile's 128 or 256 rows) and one producer warp. On the mma.sync
// path RB row blocks a warp load each activation fragment (ldmatrix) once for RB MMAs: the
// activations are a third of the shared-memory wavefronts at 16 tokens with one. On the wgmma path
// RB = 1 is a pipeline's two consumer warpgroups (the tile's two 64-row halves), RB = 2 one
// warpgroup. kProducerRegs_ > 0: the producer warps are one warpgroup (warp p < kPipelines:
// pipeline p's, the rest idle) that keeps kProducerRegs_ registers a thread (setmaxnreg, a
// warpgroup's instruction) and gives the rest to the consumers: 2 pipelines of one consumer
// warpgroup take 232 a thread where 10 warps share 65536 / 320 (200: build C's in-loop spill). The
// producer's fill_stage holds 32 at 1 k-tile a stage and 40 at 2 without spilling. kTileRows_ = 256
// (wgmma only): a tile is two of the layout's n-tiles (ws::DenseTilePairs), its 16 row blocks over
// twice the consumer warps, one activation box a stage feeding both.
template <int kPipelines_, int kRowBlocks_, int kProducerRegs_ = 0, int kTileRows_ = 128>
struct PipelineConfig {
  static constexpr int kPipelines = kPipelines_;
  static constexpr int kRowBlocks = kRowBlocks_;
  static constexpr bool kProducerWarpgroup = kProducerRegs_ > 0;
  static constexpr int kTileRows = kTileRows_;
  static constexpr int kRowTiles = kTileRows / ws::Config::kTileN;  // the layout's n-tiles a tile
  using Tiles = std::conditional_t<kRowTiles == 2, ws::DenseTilePairs, ws::DenseTiles>;
  static constexpr int kConsumerWarps = kTileRows / 16 / kRowBlocks;  // a pipeline's
  static constexpr int kPipeConsumers = 32 * kConsumerWarps;
  static constexpr int kConsumers = kPipelines * kPipeConsumers;
  static constexpr int kProducerWarps = kProducerWarpgroup ? 4 : kPipelines;
  static constexpr int kThreads = kConsumers + 32 * kProducerWarps;
  // The register split (common/wgmma.cuh): the consumers take the rest of the block's pool.
  static constexpr int kRegsPerThread = dev::wgmma::launch_registers(kThreads);
  static constexpr int kProducerRegs = kProducerRegs_;
  static constexpr int kConsumerRegs =
      dev::wgmma::consumer_registers(kThreads, 32 * kProducerWarps, kProducerRegs);
  static constexpr int kRegisterPool =
      kProducerWarpgroup ? 32 * kProducerWarps * kProducerRegs + kConsumers * kConsumerRegs : 0;
  static constexpr int kTableBarrier = 1;  // named barrier over all consumers (the table)
  // + pipeline: its consumers (a split tile's last-arrival test, or its fixed owner's group)
  static constexpr int kStoreBarrier = 2;
  // + pipeline: a split tile's contribution under a fixed owner (bar.arrive, one warp syncs)
  static constexpr int kReleaseBarrier = kStoreBarrier + kPipelines;
  static_assert(kRowBlocks == 1 || kRowBlocks == 2 || kRowBlocks == 4, "1, 2 or 4 row blocks");
  static_assert(kTileRows == 128 || kTileRows == 256, "tiles of one or two n-tiles");
  static_assert(kReleaseBarrier + kPipelines <= 16, "named barriers 0..15");
  static_assert(!kProducerWarpgroup || (kPipelines <= 4 && kConsumers % 128 == 0),
                "the producer warpgroup starts on a warpgroup's boundary and holds the pipelines");
  static_assert(!kProducerWarpgroup || (kProducerRegs >= 24 && kProducerRegs % 8 == 0 &&
                                        kProducerRegs <= kRegsPerThread &&
                                        kRegsPerThread <= kConsumerRegs && kConsumerRegs <= 256),
                "setmaxnreg: 24..256 in steps of 8, the producers give and the consumers take");
};

// Shared memory: the table, pipeline 0's ring, pipeline 1's ring, ..., the barriers. A stage
// holds KT k-tiles: KT activation boxes (TT x 64, 128-byte swizzled), KT weight tiles, KT code
// (or meta) tiles. W_: the weight format (an own-kernel format: FragmentWeightsT, or
// AwqFragmentWeights in awq_fragment_weights.cuh; its table may be 0 bytes).
template <int TT, int KT, typename C, typename W_ = FragmentWeightsT<4, true>>
struct PipelineLayout {
  using W = W_;
  static_assert(TT >= 8 && TT <= 128 && KT >= 1 && KT <= 2, "8..128 tokens, 1 or 2 k-tiles");
  static constexpr int kTableBytes = W::kTableBytes;
  static constexpr int kABytes = TT * ws::Config::kTileK * 2;
  // A k-tile's weight and code (or meta) bytes: C::kRowTiles n-tiles', side by side.
  static constexpr int kTileWeightBytes = C::kRowTiles * W::kWeightBytes;
  static constexpr int kTileScaleBytes = C::kRowTiles * W::kScaleBytes;
  static constexpr int kWeightsAt = KT * kABytes;
  static constexpr int kScalesAt = kWeightsAt + KT * kTileWeightBytes;
  static constexpr int kCopyBytes = kScalesAt + KT * kTileScaleBytes;
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
  // Accumulator sets (mma.sync), k16 step q adding into set q % kAccSets: at 8 and 16 tokens a
  // warp's HMMAs are one or two chains, which would run at the HMMA's latency.
  static constexpr int kAccSets = TT <= 16 ? 2 : 1;
  static constexpr bool kFits = kStages >= 2;  // a ring of two stages at least
  static_assert(kTableBytes % 1024 == 0 && kABytes % 1024 == 0, "boxes start 1024-byte aligned");
  static_assert(16 * C::kPipelines * kStages <= kBarrierBytes, "the barriers");
};

// One thread's view of its pipeline: its ring (stage s at base + ring + s * kStageBytes), the
// ring's barriers and its walk. The constructor stores the codebook into s_cb (the kernel's
// shared array) and initializes every pipeline's barriers, and ends with __syncthreads: all of the
// block's threads construct it.
template <int TT, int KT, typename C, typename W_ = FragmentWeightsT<4, true>>
struct Pipeline {
  using L = PipelineLayout<TT, KT, C, W_>;
  static constexpr int S = L::kStages;
  uint32_t base;  // the table's (and the dynamic array's) shared-window address
  uint32_t ring;  // this pipeline's ring, from base
  uint32_t bars;  // its barriers: full(s) at bars + 8 s, empty(s) at bars + 8 (S + s)
  uint32_t hint;  // a ring wait's suspend-time hint in ns, 0: poll (wait_hint_ns)
  int warp, lane, pipe;
  bool producer;  // this pipeline's producer warp (or an idle warp of the producer warpgroup)
  Pieces pieces;

  __device__ Pipeline(const ws::DenseTiles::Args& a, float (&s_cb)[32])
      : base(table_address()),
        hint(uint32_t(a.wait_hint_ns)),
        warp(int(threadIdx.x) >> 5),
        lane(int(threadIdx.x) & 31),
        pipe(warp < C::kPipelines * C::kConsumerWarps ? warp / C::kConsumerWarps
             : warp - C::kPipelines * C::kConsumerWarps < C::kPipelines
                 ? warp - C::kPipelines * C::kConsumerWarps
                 : C::kPipelines - 1),  // an idle producer warp: the last pipeline's view
        producer(warp >= C::kPipelines * C::kConsumerWarps),
        // The walk: block-major (a block's pipelines take consecutive walks: neighbouring
        // stripes) or pipeline-major (consecutive walks on different SMs); walks past the work
        // find none.
        pieces(a,
               a.pipeline_major ? pipe * int(gridDim.x) + int(blockIdx.x)
                                : int(blockIdx.x) * C::kPipelines + pipe,
               int(gridDim.x) * C::kPipelines) {
    if (threadIdx.x < 32) s_cb[threadIdx.x] = a.cb[threadIdx.x];  // the codebook, for the table
    // The rings start on a 1024-byte boundary, where the 128-byte swizzle repeats.
    const uint32_t ring_off = ((base + L::kRingAt + 1023) & ~1023u) - base;
    ring = ring_off + uint32_t(pipe * L::kRingBytes);
    const uint32_t bars0 = base + ring_off + (L::kBarriersAt - L::kRingAt);
    bars = bars0 + 16 * S * pipe;
    if constexpr (W_::kZeroRing && KT > 1) {
      // A format whose never-filled scale tiles may decode to Inf or NaN: a short last k-step
      // multiplies its missing k-tiles' stale weights by the TMA's zero activations, and only a
      // stage's k-tiles 1..KT - 1 can be missing (k-tile 0 is always copied). Their scale (meta)
      // tiles start zeroed (scale 0: finite products); a refill brings only real tiles, and
      // stale real tiles are finite. Zeroing every ring whole (192 KB at 8 tokens) delayed the
      // producers' first copies on every layer.
      constexpr uint32_t kChunks = L::kTileScaleBytes / 16;  // 16-byte stores a scale tile
      constexpr uint32_t kTiles = uint32_t(C::kPipelines * S * (KT - 1));
      for (uint32_t i = threadIdx.x; i < kTiles * kChunks; i += blockDim.x) {
        const uint32_t tile = i / kChunks, stage_index = tile / (KT - 1);
        const uint32_t j = 1 + tile % (KT - 1);
        dev::smem::store128(base,
                            ring_off + stage_index * L::kStageBytes + L::kScalesAt +
                                j * L::kTileScaleBytes + 16 * (i % kChunks),
                            make_uint4(0, 0, 0, 0));
      }
      dev::fence_proxy_async_shared();  // before the producers' first copies over them
    }
    if (threadIdx.x == 0) {
      for (int p = 0; p < C::kPipelines; ++p)
        for (int s = 0; s < S; ++s) {
          dev::mbar_init(bars0 + 16 * S * p + 8 * s, 1);
          dev::mbar_init(bars0 + 16 * S * p + 8 * (S + s), C::kPipeConsumers);
        }
      dev::fence_barrier_init();
    }
    __syncthreads();
  }
  __device__ uint32_t full(int s) const { return bars + 8 * s; }
  __device__ uint32_t empty(int s) const { return bars + 8 * (S + s); }
  __device__ uint32_t stage(int s) const { return ring + s * L::kStageBytes; }  // from base
  // A ring barrier's wait: re-polling with try_wait's own short limit (wait_hint_ns = 0, the
  // default), or asleep until the phase completes or wait_hint_ns pass (measured slower: the
  // wake-up comes late). The test stays outside mbar_wait's retry loop, as measured.
  __device__ void wait(uint32_t bar, uint32_t parity) const {
    if (hint != 0)
      dev::mbar_wait(bar, parity, hint);
    else
      dev::mbar_wait(bar, parity);
  }

  // The block's start past the constructor: the producer warp streams its walk into the ring and
  // returns false; the consumers build the decode table from the codebook cb (all of them; a
  // format without a table skips it), sync, and wait for the previous kernel to end (PDL: C and the
  // workspace), then return true.
  template <typename T>
  __device__ __forceinline__ bool consumer_start(const ws::DenseTiles::Args& a,
                                                 const CUtensorMap* amap, const float* cb) {
    if (producer) {
      if constexpr (C::kProducerWarpgroup) {
        dev::wgmma::release_registers<C::kProducerRegs>();
        if (warp - C::kPipelines * C::kConsumerWarps >= C::kPipelines) return false;  // idle
      }
      produce(a, amap);
      return false;
    }
    if constexpr (C::kProducerWarpgroup) dev::wgmma::claim_registers<C::kConsumerRegs>();
    if constexpr (L::kTableBytes > 0) {
      W_::template build_own_table<T>(base, cb, int(threadIdx.x), C::kConsumers);
      dev::sync_named<C::kConsumers>(C::kTableBarrier);
    }
    dev::pdl::wait();
    return true;
  }

  // The producer warp's work (lane 0 alone): the walk's stages into the ring.
  __device__ void produce(const ws::DenseTiles::Args& a, const CUtensorMap* amap) {
    using W = typename L::W;
    if (lane != 0) return;
    dev::pdl::wait();  // A is the previous kernel's output
    int s = 0;
    uint32_t phase = 0;
    for (int t, ks0, ks1; pieces.next(t, ks0, ks1);) {
      const ws::TileInfo tile = C::Tiles::tile(a, t);
      // The tile's n-tiles (the last tile of an odd count holds one: its other half of the stage
      // keeps stale, finite tiles whose rows are never stored).
      const int row_tiles = C::kRowTiles == 1 ? 1 : min(C::kRowTiles, a.n_tiles - tile.nt);
      for (int ks = ks0; ks < ks1; ++ks) {
        // Parity phase ^ 1 of a fresh barrier counts as completed: the first lap does not wait.
        wait(empty(s), phase ^ 1u);
        dev::fence_proxy_async_shared();  // the consumers' reads before the refill
        if constexpr (C::kRowTiles == 1)
          ws::fill_stage<W, KT, L::kABytes, L::kWeightsAt, L::kScalesAt>(base + stage(s), full(s),
                                                                         amap, a, tile, ks);
        else
          fill_stage_rows(base + stage(s), full(s), amap, a, tile, ks, row_tiles);
        if (++s == S) {
          s = 0;
          phase ^= 1u;
        }
      }
    }
  }

  // fill_stage (variants/hopper/producer.cuh) for a tile of row_tiles n-tiles: KT activation
  // boxes, and per k-tile one bulk copy of the n-tiles' weight tiles and one of their code tiles
  // (adjacent in memory: tile (kt, nt) at kt * n_tiles + nt).
  __device__ static void fill_stage_rows(uint32_t st, uint32_t full, const CUtensorMap* amap,
                                         const ws::DenseTiles::Args& a, const ws::TileInfo& tile,
                                         int ks, int row_tiles) {
    using W = typename L::W;
    const int kt0 = ks * KT, n_kt = min(KT, a.k_tiles - kt0);
    const uint32_t weight_bytes = uint32_t(row_tiles * W::kWeightBytes);
    const uint32_t scale_bytes = uint32_t(row_tiles * W::kScaleBytes);
    dev::mbar_arrive_expect_tx(full, KT * L::kABytes + n_kt * (weight_bytes + scale_bytes));
    for (int j = 0; j < KT; ++j)
      dev::tma_load_2d(st + j * L::kABytes, amap, (kt0 + j) * ws::Config::kTileK, tile.a_row, full);
    for (int j = 0; j < n_kt; ++j) {
      const long long t = (long long)(kt0 + j) * a.n_tiles + tile.nt;
      dev::bulk_copy_g2s(st + L::kWeightsAt + j * L::kTileWeightBytes,
                         tile.weights + t * W::kWeightBytes, weight_bytes, full);
      dev::bulk_copy_g2s(st + L::kScalesAt + j * L::kTileScaleBytes,
                         tile.scales + t * W::kScaleBytes, scale_bytes, full);
    }
  }
};

// A piece's sums to C (both own kernels; a consumer group of Threads threads a pipeline): a
// split tile by its fixed owner (a.split_owner) or its last arrival, 2-byte stores from the
// registers (epilogue.cuh's store_tile_sums_split) or, where `staged` (the wgmma kernel's walk's
// last piece with a.staged_store: the ring is free), through the pipeline's ring at `stage`
// (store_tile_staged). kLoadFloats: the storer's workspace sums a round trip.
template <int TT, typename T, typename P, int RB, int kRbRows, int Threads, int kLoadFloats>
__device__ __forceinline__ void store_piece(const ws::DenseTiles::Args& a, int t, bool owner,
                                            bool staged, int row0, int lane,
                                            const float (&sum)[RB][TT / 2], uint32_t stage, int tid,
                                            int store_bar, int release_bar,
                                            volatile int* last_flag) {
  auto store = [&](auto&& split) {
    if (staged)
      ws::store_tile_staged<TT, T, P, RB, kRbRows, Threads>(a, t, row0, lane, sum, split, stage,
                                                            tid, store_bar);
    else
      ws::store_tile_sums_split<TT, T, P, RB, kRbRows>(a, t, row0, lane, sum, split);
  };
  if (a.split_owner) {
    store(ws::FixedOwner<Threads, kLoadFloats>{owner, release_bar, store_bar, tid});
    return;
  }
  auto is_last = [&](int* counter, int contributors) {
    return dev::splitk::group_arrive_is_last<Threads>(counter, contributors, store_bar, tid == 0,
                                                      last_flag);
  };
  store(ws::LastArrival<decltype(is_last), kLoadFloats>{is_last});
}

}  // namespace kbit::variants::fragment
