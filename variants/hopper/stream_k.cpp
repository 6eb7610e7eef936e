// A dense problem's walks (stream_k.hpp): whole tiles and stream-K stripes over the walks that
// run at once.
#include "variants/hopper/stream_k.hpp"

#include <algorithm>

namespace kbit::variants::ws {

int stream_k_whole_tiles(int tiles, int slots, SplitMode mode) {
  // Whole tiles everywhere when they keep >= 90% of the slots busy on average over all waves
  // (tiles >= 0.9 x waves x slots): the blocks of a wave then walk K in step and share the
  // activations' k-slices in L2, which stripes starting at scattered k-offsets do not (F-033:
  // Llama3-70B down at M = 1024, 58 MB of activations). Else whole tiles for all but the last
  // two waves (the last full one and the partial one), which are split into stripes.
  const int waves = tiles / slots;
  const int all_waves = (tiles + slots - 1) / slots;
  if (mode == SplitMode::force_on) return 0;
  if (mode == SplitMode::force_off || tiles % slots == 0 ||
      (waves >= 1 && 10ll * tiles >= 9ll * all_waves * slots))
    return tiles;
  return waves >= 2 ? (waves - 1) * slots : 0;
}

StreamK stream_k_walks(int tiles, int k_steps, int slots, int pipelines, SplitMode mode,
                       int dp_tiles) {
  StreamK s;
  s.dp_tiles = dp_tiles;
  s.k_steps = k_steps;
  s.units = tiles * k_steps;
  const int rest = (tiles - dp_tiles) * k_steps;
  const int even = (rest + slots - 1) / slots;
  if (mode == SplitMode::force_on)
    s.per = k_steps < 2 ? even : std::max(1, std::min(even, k_steps - 1));
  else
    s.per = std::max(std::min(4, k_steps), even);  // a stripe pays one ring fill
  s.per = std::max(s.per, 1);
  const int sk_blocks = rest == 0 ? 0 : (rest + s.per - 1) / s.per;
  s.grid = std::max(std::min(slots, std::max(dp_tiles, 1)), sk_blocks);
  // Whole blocks of the kernel's pipelines; a walk past the work finds none (whole tiles go
  // round-robin over all walks, a stripe past the units is empty).
  s.grid = (s.grid + pipelines - 1) / pipelines * pipelines;
  // The walks with work: the stripes' and those the whole tiles reach round-robin.
  s.walks = std::max(sk_blocks, std::min(dp_tiles, s.grid));
  for (int t = dp_tiles; t < tiles; ++t) {
    const int c = tile_contributors(s, t);
    s.split_tiles += c > 1;
    s.max_contributors = std::max(s.max_contributors, c);
  }
  return s;
}

WalkGrid walk_grid(const StreamK& w, int pipelines, int resident_blocks, WalkOrder order) {
  const int block_major = w.grid / pipelines;  // the plan's grid: whole blocks
  const bool spread =
      order == WalkOrder::spread || (order == WalkOrder::by_problem && pipelines > 1 &&
                                     10ll * block_major < 9ll * resident_blocks);
  if (!spread) return {block_major, order == WalkOrder::pipeline_major};
  return {std::max(block_major, std::min(resident_blocks, w.walks)), true};
}

}  // namespace kbit::variants::ws
