// Host side of the self-cleaning split-K end (variants/common/splitk.cuh): the fp32 workspace
// ([M][N], or tile-local for variants/hopper/epilogue.cuh) and one arrival counter per output tile,
// zeroed once when a variant's setup finds a split tile; every call leaves them zero again, so runs
// need no memset (graph-capturable). One exception: the slots of a tile whose one other partial
// variant 07's fixed owner takes stored whole (epilogue.cuh's stored_partial) keep that partial;
// the next call overwrites them before the owner reads them, and nothing adds into them.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"

namespace kbit::variants {

struct SplitKWorkspace {
  DeviceBuffer<float> sums;  // [M][N] (store_tile_sums: tile-local, TT x 128 a tile), zero between
                             // calls where added into (a stored sole partial is overwritten
                             // instead: epilogue.cuh's stored_partial)
  DeviceBuffer<int> counters;  // one per output tile, zero between calls
  int split_tiles = 0;         // tiles with more than one contributor (plan)
  int max_contributors = 1;    // the most blocks that add into one tile: the error bound's
                               // extra additions (VariantState::extra_additions)
  // Allocates and zeroes both (synchronizes: setup only).
  void allocate(std::int64_t elems, std::int64_t tiles) {
    sums = DeviceBuffer<float>(std::size_t(elems));
    counters = DeviceBuffer<int>(std::size_t(tiles));
    sums.fill_bytes(0);
    counters.fill_bytes(0);
    KBIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  // A plan's split: counts the tiles t in [first, tiles) that contributors(t) blocks add into,
  // and allocates the workspace ([elems] sums, `tiles` counters) when one tile has two or more.
  // The stream-K plans pass variants/common/splitk.cuh's stripe_contributors.
  template <typename Contributors>
  void plan(std::int64_t elems, int first, int tiles, Contributors&& contributors) {
    split_tiles = 0;
    max_contributors = 1;
    for (int t = first; t < tiles; ++t) {
      const int c = contributors(t);
      split_tiles += c > 1;
      max_contributors = c > max_contributors ? c : max_contributors;
    }
    if (split_tiles > 0) allocate(elems, tiles);
  }
};

}  // namespace kbit::variants
