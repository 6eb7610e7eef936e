// Variant 04's schedule (scalar_gemv.cu), host side: output tiles cut into equal contiguous
// stripes of (tile, k-unit) work units, one stripe per resident block (Marlin's stripes). Plain
// C++ so that a CPU test checks the cut; the kernel reads the Segments.
#pragma once
#include <cstdint>
#include <vector>

#include "variants/variant_api.hpp"

namespace kbit::variants::gemv {

// A segment of one block's stripe: rows [row0, row0 + rows) of expert `expert` (0 when dense),
// n-tile nt, k-units [u0, u1). Its output tile is tile_id; contributors > 1 means other
// blocks' stripes cover the rest of its k-range (split-K through the workspace).
struct Segment {
  int expert, row0, rows, nt, u0, u1, tile_id, contributors;
};

// An output tile before striping: rows of one expert, one n-tile.
struct OutTile {
  int expert, row0, rows, nt;
};

struct Stripes {
  std::vector<Segment> segs;  // every block's segments, in block order
  std::vector<int> first;     // block b runs segs[first[b] .. first[b + 1])
  int grid = 0;               // blocks (stripes)
  int split_tiles = 0;        // tiles with more than one contributor
};

// The output tiles of a dense problem: `rows` rows, one tile per n-tile.
std::vector<OutTile> dense_tiles(int rows, int n_tiles);

// The output tiles of a grouped (MoE) problem: per expert, its rows of A (expert e owns rows
// [offsets[e], offsets[e + 1])) in groups of at most max_rows, each one tile per n-tile; experts
// with no rows have none. Throws (naming `who`, the value and the limit) when offsets does not
// have num_experts + 1 entries, does not start at 0, is not monotonic or ends past row M.
std::vector<OutTile> grouped_tiles(const std::vector<std::int64_t>& offsets, int num_experts,
                                   std::int64_t M, int n_tiles, int max_rows, const char* who);

// Cuts tiles.size() x k_units units (tile-major, k-unit minor) into stripes of `per` units.
Stripes cut_stripes(const std::vector<OutTile>& tiles, int k_units, int per);

// Stripe length for `units` units over `slots` resident blocks: one stripe per slot (balanced,
// no tail wave). Split-K forced off keeps whole tiles; forced on splits every tile of 2 or more
// units. Automatic: rounded up to a divisor of k_units when that costs at most `slack_pct`
// percent more units per block, so that every stripe is one k-band of one tile (the blocks walk
// the same k-rows together and no stripe spans two tiles).
int stripe_units(long long units, int k_units, int slots, SplitMode mode, int slack_pct);

// The cluster size whose blocks can combine every split tile in shared memory: c in
// [2, max_cluster] when every stripe is one segment (one k-band of one tile), every tile has
// the same c contributors, and tile t's are blocks t x c .. t x c + c - 1 (one cluster of
// consecutive blocks); 1 otherwise (split tiles, if any, end through the L2 workspace).
int cluster_size(const Stripes& s, int max_cluster);

// The most A windows one block stages: a segment of n units stages ceil(n / window_units) of
// them (the kernel stages a window at each multiple of window_units from the segment's start).
int max_windows_per_block(const Stripes& s, int window_units);

}  // namespace kbit::variants::gemv
