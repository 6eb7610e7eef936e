// The dense tile order of the shared mainloop (a tile policy: scheduler.cuh): (m-tile, n-tile)
// tiles in groups of m-tiles, whole tiles round-robin and the rest in stream-K stripes, whatever
// the weight format. Variants 03, 06 (awq_gemm) and 07 run it; launcher.cuh's plan_dense plans
// it and launch_dense launches it.
#pragma once
#include <cuda_runtime.h>

#include "variants/common/splitk.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/stream_k.hpp"

namespace kbit::variants::ws {

// A dense problem's tiles: (m-tile, n-tile) in groups of group_m m-tiles, n-tiles outer inside a
// group, so that a wave shares its activations in L2; tiles from dp_tiles on are split into
// stream-K stripes.
struct DenseTiles {
  struct Args : MainloopArgs {
    int m_tiles, group_m, token_tile;
    int pipeline_major;  // a kernel of several pipelines a block: walk w is pipeline w / grid of
                         // block w % grid (else pipeline w % P of block w / P)
    int wait_hint_ns;    // variant 07's own kernel: the suspend-time hint of its ring waits
                         // (producer and consumers; 0: poll)
    int split_owner;     // variant 07's own kernel: a split tile stored by its fixed owner
                         // (epilogue.cuh's store_tile_sums_owned), else by its last arrival
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

}  // namespace kbit::variants::ws
