// CPU: variant 07's walks (variants/07_fragment_mma/pieces.hpp) over the dense plan's stream-K
// arithmetic (variants/hopper/stream_k.hpp, what plan_dense runs after the kernel's
// slot count). Over many plans: every (tile, k-step) unit is in exactly one walk, a walk's
// pieces go up in tile order (one piece a tile), the walks that add into a tile are exactly
// the contributors that split-K's last-arriver test counts (DenseTiles::contributors), and a
// split tile's fixed owner (epilogue.cuh's store_tile_sums_owned) exists: its piece with k-step
// 0 is the last of its walk, every other contributor's piece the first of its walk's stripe, in
// a later walk (the owner waits only on walks that never wait).
#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "variants/07_fragment_mma/pieces.hpp"
#include "variants/common/splitk_stripes.hpp"
#include "variants/hopper/stream_k.hpp"
#include "variants/variant_api.hpp"

using namespace kbit;
using variants::fragment::Pieces;
using variants::ws::StreamK;

namespace {

const char* mode_name(SplitMode m) {
  return m == SplitMode::force_on ? "on" : m == SplitMode::force_off ? "off" : "auto";
}

// Runs every walk of plan w (tiles x k_steps units, `pipelines` walks a block) through Pieces and
// returns the first thing that breaks the plan's promises, or "" when none does.
// `grid`: the walks the kernel runs (blocks x pipelines), the plan's own (w.grid) or more
// (walk_grid's spread layout).
std::string check_walks(int tiles, int k_steps, const StreamK& w, int pipelines, int grid = 0) {
  std::ostringstream err;
  const bool plan_grid = grid == 0;
  if (plan_grid) grid = w.grid;
  err << "tiles " << tiles << " k_steps " << k_steps << " dp_tiles " << w.dp_tiles << " per "
      << w.per << " grid " << grid << " (plan " << w.grid << ", walks " << w.walks << ") pipelines "
      << pipelines << ": ";
  if (grid < 1 || w.per < 1 || grid % pipelines != 0 || grid < w.grid)
    return err.str() +
           "grid not a positive multiple of the pipelines, below the plan's, or per < 1";
  if (w.walks > w.grid || w.walks + pipelines <= w.grid)
    return err.str() + "the plan's grid is not the walks rounded up to whole blocks";
  const int units = tiles * k_steps;
  if (w.k_steps != k_steps || w.units != units) return err.str() + "the plan's k_steps or units";
  const int sk0 = w.dp_tiles * k_steps;  // the first stripe unit
  std::vector<int> seen(std::size_t(units), 0);
  std::vector<int> walks_of_tile(std::size_t(tiles), 0);
  // A split tile's pieces: walk, first k-step, first piece of the walk's stripe, last of the walk.
  struct Piece {
    int walk, ks0;
    bool first_stripe, last;
  };
  std::vector<std::vector<Piece>> pieces_of(static_cast<std::size_t>(tiles));
  int busy = 0;  // walks with a piece, which must be walks 0 .. busy - 1
  for (int b = 0; b < grid; ++b) {
    Pieces p(w, b, grid);  // the plan's fields, as the kernel reads them from its Args
    int prev = -1, n = 0, stripe_units = 0;
    const std::size_t mine = std::size_t(-1);
    std::size_t last_tile = mine;  // the tile of this walk's latest piece
    for (int t, ks0, ks1; p.next(t, ks0, ks1);) {
      if (++n > tiles) return err.str() + "walk " + std::to_string(b) + " never ends";
      if (t <= prev || t >= tiles || ks0 < 0 || ks0 >= ks1 || ks1 > k_steps) {
        err << "walk " << b << " piece (" << t << ", " << ks0 << ", " << ks1 << ") after tile "
            << prev << ": out of order or range";
        return err.str();
      }
      if (t < w.dp_tiles && (ks0 != 0 || ks1 != k_steps || t % grid != b)) {
        err << "walk " << b << " has whole tile " << t << " as (" << ks0 << ", " << ks1 << ")";
        return err.str();
      }
      if (t >= w.dp_tiles) {
        const int u0 = t * k_steps + ks0;
        if (u0 < sk0 + b * w.per || u0 + ks1 - ks0 > sk0 + (b + 1) * w.per) {
          err << "walk " << b << " piece (" << t << ", " << ks0 << ", " << ks1
              << ") outside its stripe";
          return err.str();
        }
        stripe_units += ks1 - ks0;
      }
      for (int u = t * k_steps + ks0; u < t * k_steps + ks1; ++u) ++seen[std::size_t(u)];
      ++walks_of_tile[std::size_t(t)];
      pieces_of[std::size_t(t)].push_back(
          {b, ks0, t >= w.dp_tiles && stripe_units == ks1 - ks0, false});
      last_tile = std::size_t(t);
      prev = t;
    }
    if (last_tile != mine) pieces_of[last_tile].back().last = true;
    if (stripe_units > w.per) return err.str() + "a stripe longer than per";
    if (n > 0) {
      if (busy != b) return err.str() + "walk " + std::to_string(b) + " busy after an idle one";
      busy = b + 1;
    }
  }
  if (const auto it = std::find_if(seen.begin(), seen.end(), [](int c) { return c != 1; });
      it != seen.end()) {
    const int u = int(it - seen.begin());
    err << "unit (tile " << u / k_steps << ", k-step " << u % k_steps << ") in " << *it << " walks";
    return err.str();
  }
  if (plan_grid && w.grid - busy >= pipelines)
    return err.str() + std::to_string(w.grid - busy) + " idle walks: a whole block with none";
  if (busy > w.walks) return err.str() + "more busy walks than the plan counts";
  int split = 0, most = 1;
  for (int t = 0; t < tiles; ++t) {
    const int c = variants::ws::tile_contributors(w, t);  // DenseTiles::contributors
    const int stripes =
        t < w.dp_tiles ? 1 : dev::splitk::stripe_contributors(t - w.dp_tiles, k_steps, w.per);
    if (walks_of_tile[std::size_t(t)] != c || c != stripes) {
      err << "tile " << t << " meets " << walks_of_tile[std::size_t(t)]
          << " walks, contributors says " << c << ", stripe_contributors " << stripes;
      return err.str();
    }
    split += c > 1;
    most = std::max(most, c);
    if (c == 1) continue;
    const auto& ps = pieces_of[std::size_t(t)];
    const auto owner =
        std::find_if(ps.begin(), ps.end(), [](const Piece& q) { return q.ks0 == 0; });
    if (owner == ps.end() || !owner->last) {
      err << "split tile " << t << ": no piece with k-step 0, or it is not its walk's last";
      return err.str();
    }
    for (const Piece& q : ps)
      if (&q != &*owner && (q.ks0 == 0 || !q.first_stripe || q.walk <= owner->walk)) {
        err << "split tile " << t << ": walk " << q.walk << "'s piece from k-step " << q.ks0
            << " is not the first of its stripe in a walk after the owner's (" << owner->walk
            << ")";
        return err.str();
      }
  }
  if (split != w.split_tiles || most != w.max_contributors) {
    err << "split_tiles " << w.split_tiles << " max_contributors " << w.max_contributors
        << ", the walks: " << split << " and " << most;
    return err.str();
  }
  return "";
}

// The k-steps a sweep takes at `tiles` tiles: both ends of 1..70, a few in between and two that
// move with the tile count (11 and 31 are prime to 70: any 70 consecutive tile counts take every
// k-step count 1..70 twice).
std::vector<int> k_steps_for(int tiles) {
  return {1, 2, 3, 64, 70, 1 + (11 * tiles + 3) % 70, 1 + (31 * tiles + 17) % 70};
}

constexpr SplitMode kModes[] = {SplitMode::automatic, SplitMode::force_on, SplitMode::force_off};

}  // namespace

TEST_CASE("the plan's walks cover every unit once, in order, with split-K's contributor counts",
          "[fragment][pieces]") {
  // slots = SMs x pipelines (the own kernel runs one block an SM; pipelines 1: the mainloop).
  int plans = 0;
  for (int pipelines = 1; pipelines <= 4; ++pipelines)
    for (int sms : {1, 2, 7, 33, 132})
      for (SplitMode mode : kModes)
        for (int tiles = 1; tiles <= 500; ++tiles)
          for (int k_steps : k_steps_for(tiles)) {
            const int slots = sms * pipelines;
            const StreamK w = variants::ws::plan_stream_k(tiles, k_steps, slots, pipelines, mode);
            INFO("slots " << slots << " split-K " << mode_name(mode));
            REQUIRE(check_walks(tiles, k_steps, w, pipelines) == "");
            // One wave (the grid fits the slots) unless split-K is forced on.
            if (mode != SplitMode::force_on) REQUIRE(w.grid <= slots);
            if (mode == SplitMode::force_off) REQUIRE((w.dp_tiles == tiles && w.split_tiles == 0));
            if (mode == SplitMode::force_on) REQUIRE(w.split_tiles == (k_steps >= 2 ? tiles : 0));
            // Split-K forced on: where the even share of the slots, ceil(units / slots), already
            // splits every tile (or no tile can split: one k-step), the stripes are that share,
            // one wave of them.
            const int share = (tiles * k_steps + slots - 1) / slots;
            if (mode == SplitMode::force_on && (k_steps == 1 || share < k_steps))
              REQUIRE((w.per == share && w.grid <= slots));
            ++plans;
          }
  CHECK(plans == 4 * 5 * 3 * 500 * 7);
}

TEST_CASE("any whole-tile count: the stripes after it cover the rest", "[fragment][pieces]") {
  // dp_tiles 0..tiles, not only the plan's choice; per and grid from the plan's rule.
  const auto sweep = [](int tiles_from, int tiles_to, std::initializer_list<int> ks,
                        std::initializer_list<int> sms_list) {
    for (int tiles = tiles_from; tiles <= tiles_to; ++tiles)
      for (int k_steps : ks)
        for (int pipelines = 1; pipelines <= 4; ++pipelines)
          for (int sms : sms_list)
            for (SplitMode mode : {SplitMode::automatic, SplitMode::force_on})
              for (int dp = 0; dp <= tiles; ++dp) {
                const StreamK w = variants::ws::stream_k_walks(tiles, k_steps, sms * pipelines,
                                                               pipelines, mode, dp);
                INFO("slots " << sms * pipelines << " split-K " << mode_name(mode));
                REQUIRE(w.dp_tiles == dp);
                REQUIRE(check_walks(tiles, k_steps, w, pipelines) == "");
              }
  };
  sweep(1, 64, {1, 2, 5, 16, 70}, {1, 5, 132});
  sweep(257, 257, {1, 7, 70}, {7, 132});
  sweep(500, 500, {1, 7, 70}, {7, 132});
}

TEST_CASE("the plan at Llama3-70B gate/up, M = 16 on an H200: every tile split, one wave",
          "[fragment][pieces]") {
  // 224 tiles of 64 k-steps (K_dim 8192 in k-steps of 128), 132 SMs x 4 pipelines.
  const StreamK w = variants::ws::plan_stream_k(224, 64, 528, 4, SplitMode::automatic);
  CHECK(w.dp_tiles == 0);
  CHECK(w.per == 28);
  CHECK(w.grid == 512);
  CHECK(w.split_tiles == 224);
  CHECK(w.max_contributors == 4);
  CHECK(check_walks(224, 64, w, 4) == "");
  // Whole waves of tiles stay whole: 1056 tiles over 528 slots.
  const StreamK whole = variants::ws::plan_stream_k(1056, 64, 528, 4, SplitMode::automatic);
  CHECK(whole.dp_tiles == 1056);
  CHECK(whole.split_tiles == 0);
  CHECK(whole.grid == 528);
}

TEST_CASE(
    "stream_k_whole_tiles: whole tiles when they keep 90% of the slots busy, else all but "
    "the last two waves",
    "[fragment][pieces]") {
  using variants::ws::stream_k_whole_tiles;
  // 10 slots. Busy share over all waves: tiles / (waves x 10).
  const SplitMode a = SplitMode::automatic;
  CHECK(stream_k_whole_tiles(5, 10, a) == 0);    // one partial wave, 50%: all stripes
  CHECK(stream_k_whole_tiles(10, 10, a) == 10);  // one whole wave
  CHECK(stream_k_whole_tiles(17, 10, a) == 0);   // 17 of 20, 85%: two waves, all stripes
  CHECK(stream_k_whole_tiles(18, 10, a) == 18);  // 18 of 20: exactly 90% stays whole
  CHECK(stream_k_whole_tiles(19, 10, a) == 19);
  CHECK(stream_k_whole_tiles(20, 10, a) == 20);
  CHECK(stream_k_whole_tiles(25, 10, a) == 10);  // 25 of 30, 83%: the first wave whole
  CHECK(stream_k_whole_tiles(26, 10, a) == 10);
  CHECK(stream_k_whole_tiles(27, 10, a) == 27);  // 27 of 30: 90%
  CHECK(stream_k_whole_tiles(35, 10, a) == 20);  // 35 of 40, 87.5%: two waves whole
  CHECK(stream_k_whole_tiles(36, 10, a) == 36);  // 36 of 40: 90%
  CHECK(stream_k_whole_tiles(60, 10, a) == 60);  // six whole waves
  // 528 slots (an H200's 132 SMs x 4 pipelines): 1000 of 1056 (94.7%), 900 of 1056 (85.2%).
  CHECK(stream_k_whole_tiles(1000, 528, a) == 1000);
  CHECK(stream_k_whole_tiles(900, 528, a) == 0);
  CHECK(stream_k_whole_tiles(1400, 528, a) == 528);  // 1400 of 1584 (88.4%): one wave whole
  for (int tiles : {5, 18, 25, 36}) {
    CHECK(stream_k_whole_tiles(tiles, 10, SplitMode::force_on) == 0);
    CHECK(stream_k_whole_tiles(tiles, 10, SplitMode::force_off) == tiles);
  }
  // Over many counts: whole tiles are all tiles, or whole waves that leave the stripes more than
  // one wave's tiles and fewer than two waves' (all tiles when there are fewer than two waves).
  for (int slots : {1, 4, 10, 132, 528})
    for (int tiles = 1; tiles <= 3000; ++tiles) {
      const int dp = stream_k_whole_tiles(tiles, slots, a);
      INFO("tiles " << tiles << " slots " << slots << " whole " << dp);
      const int waves = (tiles + slots - 1) / slots;
      const bool busy = 10ll * tiles >= 9ll * waves * slots;  // >= 90% of waves x slots
      if (busy && tiles >= slots) {
        REQUIRE(dp == tiles);
      } else {
        REQUIRE(dp % slots == 0);
        REQUIRE(tiles - dp < 2 * slots);
        REQUIRE((dp == 0 || tiles - dp > slots));
      }
    }
}

TEST_CASE("walk_grid: block-major fills the GPU, small problems spread over every SM",
          "[fragment][pieces]") {
  using variants::ws::walk_grid;
  using variants::ws::WalkGrid;
  using variants::ws::WalkOrder;
  // Over many plans: the layout's walks cover the plan's (checked through Pieces), whole blocks.
  int spread_plans = 0;
  for (int pipelines = 1; pipelines <= 4; ++pipelines)
    for (int sms : {1, 7, 132})
      for (SplitMode mode : kModes)
        for (int tiles = 1; tiles <= 300; tiles += 7)
          for (int k_steps : k_steps_for(tiles))
            for (WalkOrder order : {WalkOrder::by_problem, WalkOrder::pipeline_major,
                                    WalkOrder::block_major, WalkOrder::spread}) {
              const StreamK w =
                  variants::ws::plan_stream_k(tiles, k_steps, sms * pipelines, pipelines, mode);
              const WalkGrid g = walk_grid(w, pipelines, sms, order);
              INFO("sms " << sms << " split-K " << mode_name(mode) << " order " << int(order));
              REQUIRE(g.blocks * pipelines >= w.grid);
              REQUIRE(check_walks(tiles, k_steps, w, pipelines, g.blocks * pipelines) == "");
              if (order == WalkOrder::block_major)
                REQUIRE((!g.pipeline_major && g.blocks * pipelines == w.grid));
              if (order == WalkOrder::pipeline_major)
                REQUIRE((g.pipeline_major && g.blocks * pipelines == w.grid));
              if (order == WalkOrder::spread) {
                REQUIRE(g.pipeline_major);
                // Every SM takes a walk before any takes a second (up to the walks there are).
                REQUIRE(g.blocks >= std::min(sms, w.walks));
                spread_plans += g.blocks * pipelines > w.grid;
              }
            }
  CHECK(spread_plans > 0);
  // Qwen3 dense gate/up at M = 8 on an H200: 40 tiles of 16 k-steps in stripes of 4 are 160
  // walks; block-major would be 40 blocks of 4 pipelines (92 SMs idle): by problem, they spread.
  const StreamK qwen = variants::ws::plan_stream_k(40, 16, 528, 4, SplitMode::automatic);
  CHECK(qwen.walks == 160);
  CHECK(qwen.grid == 160);
  const WalkGrid q = walk_grid(qwen, 4, 132, WalkOrder::by_problem);
  CHECK(q.blocks == 132);
  CHECK(q.pipeline_major);
  CHECK(check_walks(40, 16, qwen, 4, q.blocks * 4) == "");
  // Llama3-70B gate/up at M = 16: 512 walks, 128 of 132 blocks: block-major stays.
  const StreamK big = variants::ws::plan_stream_k(224, 64, 528, 4, SplitMode::automatic);
  const WalkGrid b = walk_grid(big, 4, 132, WalkOrder::by_problem);
  CHECK(b.blocks == 128);
  CHECK_FALSE(b.pipeline_major);
  // Three walks (3 tiles of 2 k-steps, stripes of min(4, k-steps) = 2): one block of 4
  // pipelines block-major; spread, one block a walk: 3 blocks, not 4 (the plan's grid) nor the
  // 132 resident.
  const StreamK three = variants::ws::plan_stream_k(3, 2, 528, 4, SplitMode::automatic);
  CHECK(three.walks == 3);
  CHECK(three.grid == 4);
  const WalkGrid t = walk_grid(three, 4, 132, WalkOrder::by_problem);
  CHECK(t.blocks == 3);
  CHECK(t.pipeline_major);
  CHECK(walk_grid(three, 4, 132, WalkOrder::spread).blocks == 3);
  CHECK(check_walks(3, 2, three, 4, t.blocks * 4) == "");
  // By problem: spread only where block-major leaves more than a tenth of the resident blocks
  // idle. 10 resident blocks of 4 pipelines: 36 walks are 9 blocks (one idle, a tenth: stays
  // block-major), 32 walks 8 (two idle: spread over all 10).
  const StreamK nine = variants::ws::plan_stream_k(36, 1, 40, 4, SplitMode::automatic);
  REQUIRE(nine.grid == 36);
  const WalkGrid n9 = walk_grid(nine, 4, 10, WalkOrder::by_problem);
  CHECK(n9.blocks == 9);
  CHECK_FALSE(n9.pipeline_major);
  const StreamK eight = variants::ws::plan_stream_k(32, 1, 40, 4, SplitMode::automatic);
  REQUIRE(eight.grid == 32);
  const WalkGrid n8 = walk_grid(eight, 4, 10, WalkOrder::by_problem);
  CHECK(n8.blocks == 10);
  CHECK(n8.pipeline_major);
  // One pipeline a block (the shared mainloop): the plan's grid whatever the order asks.
  const StreamK one = variants::ws::plan_stream_k(40, 16, 264, 1, SplitMode::automatic);
  CHECK(walk_grid(one, 1, 264, WalkOrder::by_problem).blocks == one.grid);
}
