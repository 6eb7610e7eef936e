// Variant 04's kernels (variants/04_scalar_gemv.cu) as its host plan
// (variants/scalar_gemv_plan.cpp) sees them. Plain C++: the plan is compiled by the host compiler,
// which a -D in CMAKE_CUDA_FLAGS never reaches, so the plan reads the KBIT_GEMV_* knobs only
// through knobs(): the values the kernels were compiled with (a knob build cannot plan for one
// kernel and launch another).
#pragma once
#include <cuda_runtime.h>

#include "variants/gemv_stripes.hpp"
#include "variants/variant_api.hpp"

namespace kbit::variants::scalar_gemv {

// The tiled layout the kernels read, their work unit and their block.
inline constexpr int kTileK = 64, kTileN = 128;
inline constexpr int kUnitTiles = 4;    // k-tiles per unit: quad lane t owns k-tile t
inline constexpr int kConsumers = 256;  // 8 warps x 16 columns = one n-tile
// Whether the kernel for `rows` rows (0: grouped) has a window warp, which stages the A windows
// (variants/scalar_gemv_stream.cuh): the dense M = 3, 4 kernels, whose windows come every 4-5
// units. Elsewhere the consumers stage every window themselves: at M = 1, 2 (a window per 16 or
// 8 units) the warp cost Llama3-70B 0.4-1.0 us, and the grouped kernel's MoE decode rows of
// 8-40 tokens 5-30% under PDL (session 19).
constexpr bool has_window_warp(int rows) {
  return rows >= 3;
}
// A block: the consumers, the producer warp (one lane issues the copies) and, where the kernel
// has one, the window warp: 9 or 10 warps, both two blocks per SM at 96 registers.
inline constexpr int kWarpThreads = 32;
constexpr int threads_for(int rows) {
  return kConsumers + kWarpThreads + (has_window_warp(rows) ? kWarpThreads : 0);
}
inline constexpr int kMaxRows = 4;     // rows of A per segment (M = 1..4)
inline constexpr int kMaxCluster = 8;  // the portable cluster size
// Loads in flight per consumer thread in the tagged end's gather: the plan uses tagged slots
// only where one round of them gathers every slot.
inline constexpr int kTaggedLoads = 4;

// The plan's knobs (variants/scalar_gemv_knobs.hpp) as 04_scalar_gemv.cu was compiled with them.
struct Knobs {
  int stages;              // KBIT_GEMV_STAGES: units in flight per block
  int align_slack;         // KBIT_GEMV_ALIGN_SLACK: % more units per block to align k-bands
  bool cluster_split;      // KBIT_GEMV_CLUSTER_SPLIT: split tiles may end in clusters
  bool tagged_end;         // KBIT_GEMV_TAGGED_END: ... or through tagged L2 slots
  bool whole_tiles;        // KBIT_GEMV_WHOLE_TILES: M = 3, 4 plans without a split run kWholeTiles
  bool no_ends;            // KBIT_GEMV_DIAG_NO_ENDS: no split-tile end compiled in (wrong results)
  bool no_consumers;       // KBIT_GEMV_DIAG_NO_MATH == 5: the consumers skip every end too
  bool wait_stats;         // KBIT_GEMV_WAIT_STATS: launch() prints where the blocks' time goes
  int window_row_units;    // KBIT_GEMV_WINDOW: rows x units of A per window
  bool no_ends_clustered;  // KBIT_GEMV_DIAG_NO_ENDS == 2: ... split tiles still in clusters
  bool skip_ends;          // KBIT_GEMV_DIAG_NO_ENDS == 3, 4: ends compiled in, every segment stores
  bool diagnostic;         // any KBIT_GEMV_DIAG_*: a timing-only build whose results are wrong
};
Knobs knobs();

// The kernel for (K, rows, dtype): rows 1..4 dense, 0 the grouped kernel; whole_tiles: the plan
// splits no tile, and a kernel without the split-tile ends exists for `rows` (M = 3, 4).
const void* kernel_for(int k, int rows, DType t, bool whole_tiles);
// Whether the K-bit dense kernel for `rows` rows has the tagged end (KBIT_GEMV_TAGGED_KS).
bool has_tagged_end(int k, int rows);
// Dynamic shared memory of the K-bit kernel for `rows` rows (the grouped kernel: kMaxRows),
// without the receive area that rank 0 of a cluster adds (cluster_recv_bytes).
int smem_bytes(int k, int rows);
inline int cluster_recv_bytes(int c, int rows) {
  return (c - 1) * rows * kTileN * 4;
}

// One launch as the plan cut it. segs / first_seg: the stripes (gemv::Stripes on the device);
// ws / counters: the split-K workspace, tags: the tagged slots, each zero between launches
// where the plan ends split tiles through it (else null).
struct Launch {
  const void* kernel = nullptr;
  int grid = 0, smem_bytes = 0;
  int threads = 0;  // threads_for(the kernel's rows)
  // Every block stages one A window. A dependent launch's consumers stage their block's first
  // window themselves, so then a window warp would have nothing to do: launch() leaves it out.
  bool one_window = false;
  int cluster = 1;  // > 1: each split tile's contributors are one cluster of this size
  int tagged = 1;   // > 1: each split tile's contributors end through tagged slots
  int n_tiles = 0, k_tiles = 0;
  const gemv::Segment* segs = nullptr;
  const int* first_seg = nullptr;
  float* ws = nullptr;
  int* counters = nullptr;
  unsigned long long* tags = nullptr;
};
// Launches it over g's operands (checked; with g.pdl as a dependent launch).
void launch(const Launch& l, const GemmDims& d, const GemmArgs& g, cudaStream_t stream);

}  // namespace kbit::variants::scalar_gemv
