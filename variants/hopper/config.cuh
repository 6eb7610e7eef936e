// The shared Hopper kernel's configuration: the fixed tile shape (Config), the consumers' MMA
// path (MmaPath), the shared-memory plan of a (weight format, token tile) pair (Layout), what every
// kernel reads whatever its tile order (MainloopArgs) and one output tile as the kernel sees it
// (TileInfo). The mainloop (mainloop.cuh), the weight formats (kbit_weights.cuh, variant 06's
// AwqWeights, variant 07's FragmentWeightsT) and the tile orders (dense_tiles.cuh,
// grouped_tiles.cuh) all read these; README.md beside this file says what each file holds.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

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
  static constexpr int kRegsPerThread =
      dev::wgmma::launch_registers(Config::kThreads, kBlocksPerSm);
  static constexpr int kProducerRegs = kBlocksPerSm == 1 ? 56 : 48;
  static constexpr int kConsumerRegs =
      dev::wgmma::consumer_registers(Config::kThreads, 128, kProducerRegs, kBlocksPerSm);
  static constexpr int kRegisterPool = 128 * kProducerRegs + 256 * kConsumerRegs;
  static_assert(kRegisterPool == Config::kThreads * kRegsPerThread, "the block's registers");
  static_assert(kConsumerRegs == (kBlocksPerSm == 1 ? 224 : 96), "the budgets the comment states");
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

// What the kernel reads, whatever the tile order. A tile policy (scheduler.cuh) derives from it and
// adds what its tile() reads.
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
  float* ws;  // split-K workspace, tile-local (epilogue.cuh), zero between calls where added into
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

}  // namespace kbit::variants::ws
