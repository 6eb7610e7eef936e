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
  static constexpr int kTileRows = Config::kTileN;  // weight rows a tile (the layout's n-tile)
  struct Args : MainloopArgs {
    int m_tiles, group_m, token_tile;
    int pipeline_major;  // a kernel of several pipelines a block: walk w is pipeline w / grid of
                         // block w % grid (else pipeline w % P of block w / P)
    int wait_hint_ns;    // variant 07's own kernel: the suspend-time hint of its ring waits
                         // (producer and consumers; 0: poll)
    int split_owner;     // variant 07's own kernel: a split tile stored by its fixed owner
                         // (epilogue.cuh's FixedOwner), else by its last arrival
    int staged_store;    // variant 07's own kernel: a walk's last piece stored through its
                         // free ring (epilogue.cuh's store_tile_staged)
    int store_sole_partial;  // variant 07's own kernel, fixed owner: a split tile's one other
                             // partial stored, not added (epilogue.cuh's stored_partial)
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

// The dense tile order over tiles of 256 weight rows (variant 07's own wgmma kernel, option
// tile_rows): n-tiles nt and nt + 1 of the layout as one tile, whose k-tiles are adjacent in
// memory (weight tile (kt, nt) at kt * n_tiles + nt), so that one activation box a stage feeds
// both. a.n_tiles stays the layout's; the last tile of an odd count holds one n-tile. TileInfo's
// nt is the first n-tile's.
struct DenseTilePairs : DenseTiles {
  static constexpr int kTileRows = 2 * Config::kTileN;
  __device__ static int pairs(const Args& a) { return (a.n_tiles + 1) >> 1; }
  __device__ static TileInfo tile(const Args& a, int t) {
    const int per_group = a.group_m * pairs(a);
    const int g = t / per_group, r = t - g * per_group;
    const int gm = min(a.group_m, a.m_tiles - g * a.group_m);
    const int np = r / gm;
    const int mt = g * a.group_m + (r - np * gm);
    return {mt * a.token_tile, a.M, 2 * np, a.weights, a.scales};
  }
};

}  // namespace kbit::variants::ws
