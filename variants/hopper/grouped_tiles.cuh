// The grouped tile order of the shared mainloop (a tile policy: scheduler.cuh): every active
// expert's (m-tile, n-tile) tiles of an MoE layer, from a list of m-tiles that a kernel before the
// GEMM wrote on the device (variant 05's list_mtiles), all whole and round-robin over the blocks.
#pragma once
#include <cuda_runtime.h>

#include "variants/hopper/config.cuh"

namespace kbit::variants::ws {

// The grouped problem's tiles: t = g x n_tiles + nt over the listed m-tiles g (entry g: expert,
// first row, end row), all whole.
struct GroupedTiles {
  static constexpr int kTileRows = Config::kTileN;  // weight rows a tile (the layout's n-tile)
  struct Args : MainloopArgs {
    const int4* mtiles;                                 // list_mtiles's entries
    const int* count;                                   // and their number
    long long expert_weight_bytes, expert_scale_bytes;  // one expert's planes and codes
  };
  // Read at L2 (ld.cg): list_mtiles wrote them, and this grid may have started before it ended.
  __device__ static int whole_tiles(const Args& a) { return __ldcg(a.count) * a.n_tiles; }
  __device__ static TileInfo tile(const Args& a, int t) {
    const int g = t / a.n_tiles, nt = t - g * a.n_tiles;
    const int4 m = __ldcg(a.mtiles + g);
    return {m.y, m.z, nt, a.weights + m.x * a.expert_weight_bytes,
            a.scales + m.x * a.expert_scale_bytes};
  }
  __device__ static int row_end(const Args&, const TileInfo& t) { return t.row_end; }
  __device__ static int contributors(const Args&, int) { return 1; }
};

}  // namespace kbit::variants::ws
