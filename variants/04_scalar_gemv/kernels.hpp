// Variant 04's kernels (scalar_gemv.cu) as its host plan (plan.cpp) sees them: the kernel for a
// problem, its shared memory, and one launch as the plan cut it. Plain C++ (the host compiler).
#pragma once
#include <cuda_runtime.h>

#include "variants/04_scalar_gemv/config.hpp"
#include "variants/04_scalar_gemv/stripes.hpp"
#include "variants/variant_api.hpp"

namespace kbit::variants::scalar_gemv {

inline constexpr int kTileK = Config::kTileK, kTileN = Config::kTileN;
inline constexpr int kUnitTiles = Config::kUnitTiles;
inline constexpr int kConsumers = Config::kConsumers;
// Whether the kernel for `rows` rows (0: grouped) has a window warp, which stages the A windows
// (stream.cuh): the dense M = 3, 4 kernels, whose windows come every 4-5
// units (2 at K = 5). Elsewhere the consumers stage every window themselves: at M = 1, 2 (a window
// per 16 or 8 units) the warp cost Llama3-70B 0.4-1.0 us, and the grouped kernel's MoE decode rows
// of 8-40 tokens 5-30% under PDL (F-018).
constexpr bool has_window_warp(int rows) {
  return rows >= 3;
}
// A block: the consumers, the producer warp (one lane issues the copies) and, where the kernel
// has one, the window warp: 9 or 10 warps, both two blocks per SM at 96 registers.
inline constexpr int kWarpThreads = Config::kWarpThreads;
constexpr int threads_for(int rows) {
  return kConsumers + kWarpThreads + (has_window_warp(rows) ? kWarpThreads : 0);
}
inline constexpr int kMaxRows = Config::kMaxRows;
inline constexpr int kMaxCluster = Config::kMaxCluster;
inline constexpr int kTaggedLoads = Config::kTaggedLoads;

// The kernel for (K, rows, dtype): rows 1..4 dense, 0 the grouped kernel; whole_tiles: the plan
// splits no tile, and a kernel without the split-tile ends exists for `rows` (M = 3, 4).
const void* kernel_for(int k, int rows, DType t, bool whole_tiles);
// Whether the K-bit dense kernel for `rows` rows has the tagged end (Config::kTaggedKs).
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
