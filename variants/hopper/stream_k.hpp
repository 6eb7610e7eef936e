// A dense problem's walks (launcher.cu's plan_dense, run by the mainloop and by variant 07's own
// kernel): whole tiles round-robin over the walks, the rest in equal stripes of (tile, k-step)
// units, stream-K. Plain C++ (host and device) so that a CPU test checks the arithmetic the plan
// runs.
#pragma once
#include "variants/common/host_device.hpp"
#include "variants/common/splitk_stripes.hpp"
#include "variants/variant_api.hpp"

namespace kbit::variants::ws {

// The walks of `tiles` output tiles of `k_steps` k-steps each. A walk is a block of the mainloop,
// or a pipeline of a block of variant 07's kernel: walk b takes whole tiles b, b + grid, ... below
// dp_tiles, then the stripe of units [dp_tiles k_steps + b per, + per) (past `units`: none).
struct StreamK {
  int dp_tiles = 0;          // tiles [0, dp_tiles) whole
  int k_steps = 1;           // k-steps a tile
  int units = 0;             // tiles x k_steps
  int per = 1;               // units a stripe
  int grid = 0;              // walks: a multiple of the kernel's pipelines
  int walks = 0;             // the walks with work (stripes, whole tiles): at most grid
  int split_tiles = 0;       // tiles with more than one contributor
  int max_contributors = 1;  // the most walks that add into one tile
};

// The whole tiles over `slots` walks that run at once (SMs x blocks per SM x pipelines): all of
// them when they fill whole waves, keep >= 90% of the slots busy over all waves or split-K is
// forced off; none when it is forced on; else all but the last two waves' worth.
int stream_k_whole_tiles(int tiles, int slots, SplitMode mode);

// The stripes after dp_tiles whole tiles (any 0..tiles) and the walks, rounded up to whole blocks
// of `pipelines` (a walk past the work finds none).
StreamK stream_k_walks(int tiles, int k_steps, int slots, int pipelines, SplitMode mode,
                       int dp_tiles);

// The plan: stream_k_walks after stream_k_whole_tiles.
inline StreamK plan_stream_k(int tiles, int k_steps, int slots, int pipelines, SplitMode mode) {
  return stream_k_walks(tiles, k_steps, slots, pipelines, mode,
                        stream_k_whole_tiles(tiles, slots, mode));
}

// How a kernel of several pipelines a block (variant 07's own kernel) lays its walks on blocks:
// block-major (walk w is pipeline w % P of block w / P: a block's pipelines take neighbouring
// stripes, mostly of one tile), pipeline-major on the same blocks (walk w is pipeline w / B of
// block w % B), or spread: pipeline-major on min(resident blocks, walks) blocks (never fewer
// than the plan's), so that a problem of fewer walks than slots takes every resident block (one
// an SM for variant 07) before a second pipeline of one. by_problem:
// spread where block-major would leave more than a tenth of the resident blocks idle, else
// block-major (measured faster when the blocks fill the GPU).
enum class WalkOrder { by_problem = 0, pipeline_major = 1, block_major = 2, spread = 3 };
struct WalkGrid {
  int blocks = 0;               // the launch's blocks: walks [0, blocks x pipelines) exist
  bool pipeline_major = false;  // DenseTiles::Args::pipeline_major
};
WalkGrid walk_grid(const StreamK& w, int pipelines, int resident_blocks, WalkOrder order);

// Walks that add into tile t (what split-K's last-arriver test, or a fixed owner, counts): 1 for
// a whole tile, else
// the stripes that meet it. `a`: the plan's dp_tiles, k_steps and per (a StreamK, or the kernel's
// MainloopArgs, read where the kernel reads them).
template <typename Args>
KBIT_HOST_DEVICE_INLINE int tile_contributors(const Args& a, int t) {
  return t < a.dp_tiles ? 1
                        : kbit::dev::splitk::stripe_contributors(t - a.dp_tiles, a.k_steps, a.per);
}

}  // namespace kbit::variants::ws
