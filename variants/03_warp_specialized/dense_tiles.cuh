// Variant 03's dense problems on the mainloop (mainloop.cuh), whatever the weight format: the
// tile order (DenseTiles), the plan (token tile, stream-K stripes, m-tile groups) and the launch.
// Variant 03 runs it on kbit weights, variant 06's awq_gemm on the AWQ repack.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "variants/03_warp_specialized/mainloop.cuh"
#include "variants/03_warp_specialized/stream_k.hpp"
#include "variants/common/splitk_workspace.hpp"
#include "variants/variant_api.hpp"

namespace kbit::variants::ws {

// A dense problem's tiles: (m-tile, n-tile) in groups of group_m m-tiles, n-tiles outer inside a
// group, so that a wave shares its activations in L2; tiles from dp_tiles on are split into
// stream-K stripes.
struct DenseTiles {
  struct Args : MainloopArgs {
    int m_tiles, group_m, token_tile;
    int pipeline_major;  // a kernel of several pipelines a block: walk w is pipeline w / grid of
                         // block w % grid (else pipeline w % P of block w / P)
  };
  __device__ static int whole_tiles(const Args& a) { return a.dp_tiles; }
  __device__ static TileInfo tile(const Args& a, int t) {
    const int per_group = a.group_m * a.n_tiles;
    const int g = t / per_group, r = t - g * per_group;
    const int gm = min(a.group_m, a.m_tiles - g * a.group_m);
    const int nt = r / gm;
    const int mt = g * a.group_m + (r - nt * gm);
    return {mt * a.token_tile, a.M, nt, a.weights, a.scales};
  }
  __device__ static int row_end(const Args& a, const TileInfo&) { return a.M; }
  __device__ static int contributors(const Args& a, int t) { return tile_contributors(a, t); }
};

// The token tile by M: the smallest that holds M up to 128 (the weights are read once per
// m-tile, so fewer m-tiles win while the tensor work is small), 256 from there (tensor-bound:
// the widest wgmma halves the activation traffic per weight).
int token_tile_for(std::int64_t m);

// A dense problem's plan: set token_tile and kernel, then plan_dense fills the rest.
struct DensePlan : VariantState {
  int token_tile = 16, m_tiles = 0, n_tiles = 0, k_tiles = 0, k_steps = 0, group_m = 1, tiles = 0;
  int dp_tiles = 0, units = 0, per = 0, grid = 0, split_tiles = 0, max_contributors = 1;
  bool pipeline_major = false;  // DenseTiles::Args::pipeline_major
  Kernel kernel{};
  SplitKWorkspace split;  // allocated when a tile is split
  std::string describe() const override;
  // Split-K partial sums and the accumulator sets' sum on top of the K_dim additions.
  std::int64_t extra_additions() const override { return max_contributors + 2; }
};
// Tiles, whole tiles and stripes over the blocks that run at once (prepares the kernel);
// allocates the split-K workspace when a tile is split. Throws, naming `who`, past the limits.
void plan_dense(DensePlan& s, const GemmDims& d, const VariantOptions& o, const char* who);
// Launches the planned kernel on the format's weight and scale tiles (`group`: AWQ's G).
void launch_dense(const DensePlan& s, const GemmDims& d, const GemmArgs& g, const void* weights,
                  const void* scales, int group, cudaStream_t stream);

}  // namespace kbit::variants::ws
