// CPU: variant 04's schedule (variants/04_scalar_gemv/stripes.hpp). Every unit of every tile is in
// exactly one stripe, in order; the split-K bookkeeping (contributors, split tiles) matches the
// cut; the stripe length follows the documented rule on the Llama3 shapes the variant page
// quotes (stripes of 8 / 7 / 32 / 28 units).
#include <catch2/catch.hpp>

#include <map>

#include "reference/error.hpp"
#include "variants/04_scalar_gemv/stripes.hpp"

using namespace kbit;
using namespace kbit::variants::gemv;

namespace {

// Walks the stripes block by block and checks that they cover tile-major, k-unit-minor order
// exactly once, and that contributors / split_tiles agree with the segments.
void check_cover(const std::vector<OutTile>& tiles, int k_units, int per) {
  INFO("tiles " << tiles.size() << " k_units " << k_units << " per " << per);
  const Stripes s = cut_stripes(tiles, k_units, per);
  const long long units = (long long)tiles.size() * k_units;
  REQUIRE(s.grid == int((units + per - 1) / per));
  REQUIRE(s.first.size() == std::size_t(s.grid) + 1);
  REQUIRE(s.first.front() == 0);
  REQUIRE(s.first.back() == int(s.segs.size()));
  long long next = 0;  // the next unit, tile-major
  std::map<int, int> segs_of_tile;
  for (int b = 0; b < s.grid; ++b) {
    long long in_block = 0;
    for (int i = s.first[std::size_t(b)]; i < s.first[std::size_t(b) + 1]; ++i) {
      const Segment& g = s.segs[std::size_t(i)];
      REQUIRE(g.tile_id == int(next / k_units));
      REQUIRE(g.u0 == int(next % k_units));
      REQUIRE(g.u0 < g.u1);
      REQUIRE(g.u1 <= k_units);
      REQUIRE(g.nt == tiles[std::size_t(g.tile_id)].nt);
      REQUIRE(g.row0 == tiles[std::size_t(g.tile_id)].row0);
      next += g.u1 - g.u0;
      in_block += g.u1 - g.u0;
      ++segs_of_tile[g.tile_id];
    }
    REQUIRE(in_block == std::min<long long>(per, units - (long long)b * per));
  }
  REQUIRE(next == units);
  int split = 0;
  for (const auto& [tile, n] : segs_of_tile) split += n > 1;
  CHECK(s.split_tiles == split);
  for (const Segment& g : s.segs) CHECK(g.contributors == segs_of_tile[g.tile_id]);
}

}  // namespace

TEST_CASE("stripes cover every unit once, in order", "[gemv][stripes]") {
  for (int per : {1, 2, 3, 7, 8, 16, 17, 100}) {
    check_cover(dense_tiles(1, 5), 8, per);
    check_cover(dense_tiles(1, 1), 3, per);
  }
  // grouped: tiles of several experts and row groups
  const std::vector<OutTile> g = {{0, 0, 4, 0}, {0, 0, 4, 1}, {0, 4, 2, 0}, {3, 6, 1, 0}};
  for (int per : {1, 5, 9}) check_cover(g, 9, per);
}

TEST_CASE("stripe length follows the k-band rule on the Llama3 shapes", "[gemv][stripes]") {
  const int slots = 2 * 132;  // two blocks per SM on the H100
  // 8B gate/up: 112 tiles x 16 units; 7 per block rounds up to 8, a divisor of 16
  CHECK(stripe_units(112LL * 16, 16, slots, SplitMode::automatic, 20) == 8);
  // 8B down: 32 tiles x 56 units -> 7, which divides 56
  CHECK(stripe_units(32LL * 56, 56, slots, SplitMode::automatic, 20) == 7);
  // 70B gate/up: 224 tiles x 32 units; 28 rounds up to 32 (one whole tile per block)
  CHECK(stripe_units(224LL * 32, 32, slots, SplitMode::automatic, 20) == 32);
  CHECK(cut_stripes(dense_tiles(1, 224), 32, 32).split_tiles == 0);
  // 70B down: 64 tiles x 112 units -> 28, a divisor of 112 (4 blocks per tile)
  CHECK(stripe_units(64LL * 112, 112, slots, SplitMode::automatic, 20) == 28);
  // no slack: 70B gate/up stays at 28 and splits tiles across blocks
  CHECK(stripe_units(224LL * 32, 32, slots, SplitMode::automatic, 0) == 28);
  CHECK(cut_stripes(dense_tiles(1, 224), 32, 28).split_tiles > 0);
}

TEST_CASE("split tiles combine in clusters where the stripes are k-bands", "[gemv][stripes]") {
  // the Llama3 stripes above: 8B gate/up 2 blocks per tile, 8B down 8, 70B down 4
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 112), 16, 8), 8) == 2);
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 32), 56, 7), 8) == 8);
  CHECK(cluster_size(cut_stripes(dense_tiles(4, 64), 112, 28), 8) == 4);
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 32), 56, 7), 4) == 1);  // 8 > the limit
  // no split tile, stripes across tiles, an uneven last stripe: the workspace
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 224), 32, 32), 8) == 1);
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 224), 32, 28), 8) == 1);
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 5), 10, 4), 8) == 1);
  CHECK(cluster_size(cut_stripes(dense_tiles(1, 5), 10, 20), 8) == 1);
  // the contributors of every cluster are one tile's, ranks in k order
  const Stripes s = cut_stripes(dense_tiles(2, 6), 9, 3);
  REQUIRE(cluster_size(s, 8) == 3);
  for (int b = 0; b < s.grid; ++b) {
    CHECK(s.segs[std::size_t(b)].tile_id == b / 3);
    CHECK(s.segs[std::size_t(b)].u0 == 3 * (b % 3));
  }
}

TEST_CASE("A windows per block", "[gemv][stripes]") {
  // Qwen3 q_proj at M = 4 (windows of 4 units): 32 tiles x 8 units over 264 slots, one unit
  // per block, one window each
  const int slots = 264;
  const int per = stripe_units(32LL * 8, 8, slots, SplitMode::automatic, 20);
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(4, 32), 8, per), 4) == 1);
  // Llama3-8B gate/up at M = 4: stripes of 8 units, two windows; at M = 1 (16 units) one
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(4, 112), 16, 8), 4) == 2);
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(1, 112), 16, 8), 16) == 1);
  // a window starts at each segment: a stripe of 4 units across two tiles stages two
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(4, 5), 10, 4), 4) == 2);
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(4, 5), 10, 5), 5) == 1);
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(3, 5), 10, 5), 5) == 1);
  CHECK(max_windows_per_block(cut_stripes(dense_tiles(3, 5), 10, 6), 5) == 2);
  CHECK_THROWS_WITH(max_windows_per_block(cut_stripes(dense_tiles(1, 5), 10, 5), 0),
                    Catch::Contains("window_units 0 < 1"));
}

TEST_CASE("forced split-K modes", "[gemv][stripes]") {
  // off: whole tiles, however few blocks that leaves
  for (int tiles : {1, 7, 300}) {
    const int per = stripe_units(tiles * 10LL, 10, 264, SplitMode::force_off, 20);
    CHECK(per % 10 == 0);
    CHECK(cut_stripes(dense_tiles(1, tiles), 10, per).split_tiles == 0);
  }
  // on: every tile of two or more units is split
  const int per = stripe_units(4 * 10LL, 10, 264, SplitMode::force_on, 20);
  CHECK(cut_stripes(dense_tiles(1, 4), 10, per).split_tiles == 4);
  CHECK(stripe_units(4, 1, 264, SplitMode::force_on, 20) == 1);  // one unit: nothing to split
}

TEST_CASE("cut_stripes refuses an empty stripe length", "[gemv][stripes]") {
  CHECK_THROWS_AS(cut_stripes(dense_tiles(1, 2), 4, 0), Error);
  CHECK_THROWS_WITH(cut_stripes(dense_tiles(1, 2), 0, 3), Catch::Contains("k_units = 0"));
}

TEST_CASE("tiles of dense and grouped problems", "[gemv][stripes]") {
  const auto dense = dense_tiles(3, 5);
  REQUIRE(dense.size() == 5);
  CHECK((dense[4].expert == 0 && dense[4].row0 == 0 && dense[4].rows == 3 && dense[4].nt == 4));
  // experts 0..3 own rows [0,6), [6,6), [6,7), [7,16): 2 + 0 + 1 + 3 row groups of <= 4 rows
  const auto g = grouped_tiles({0, 6, 6, 7, 16}, 4, 16, 2, 4, "t");
  REQUIRE(g.size() == 6 * 2);
  CHECK((g[0].expert == 0 && g[0].row0 == 0 && g[0].rows == 4));
  CHECK((g[2].expert == 0 && g[2].row0 == 4 && g[2].rows == 2));
  CHECK((g[4].expert == 2 && g[4].row0 == 6 && g[4].rows == 1));
  CHECK((g[10].expert == 3 && g[10].row0 == 15 && g[10].rows == 1 && g[10].nt == 0));
}

TEST_CASE("grouped_tiles refuses malformed expert offsets", "[gemv][stripes]") {
  CHECK_THROWS_WITH(grouped_tiles({0, 2}, 2, 4, 1, 4, "who"),
                    Catch::Contains("who: expert_offsets has 2 entries; 2 experts need 3"));
  CHECK_THROWS_WITH(grouped_tiles({1, 2, 3}, 2, 4, 1, 4, "who"),
                    Catch::Contains("expert_offsets[0] = 1 must be 0"));
  CHECK_THROWS_WITH(grouped_tiles({0, 3, 2}, 2, 4, 1, 4, "who"),
                    Catch::Contains("not monotonic at expert 1 (3 then 2)"));
  CHECK_THROWS_WITH(grouped_tiles({0, 2, 5}, 2, 4, 1, 4, "who"),
                    Catch::Contains("ends at row 5, past the end of A (4 rows)"));
}
