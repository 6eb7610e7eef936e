// The AWQ tiled repack's host side (variants/format/awq_repack.hpp) on the CPU: its refusals,
// which all come before any launch, its sizes against kbit::awq_tile, and its kernel's index math
// (awq_repack_map.hpp) run block by block and thread by thread on the CPU, word for word against
// awq_tile. The kernel itself: test_format_gpu.cpp, "[gpu][format][awq]".
#include <catch2/catch.hpp>

#include <vector>

#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "variants/format/awq_repack.hpp"
#include "variants/tests/awq_random.hpp"

using namespace kbit;

namespace {

struct Emulated {
  std::vector<std::uint32_t> words, meta;
  std::vector<int> word_writes, meta_writes;  // stores per output word: 1 each, no races
};

// What awq_tile_kernel writes, one block after another: the staging loads into a stage whose
// every slot (the two pad words of each row included) starts poisoned, the meta words of the
// block's meta tile, then each thread's 4 words. The outputs start poisoned too.
Emulated emulate_kernel(const AwqTensor& a) {
  using namespace gpu::awq_map;
  const gpu::AwqTileShape s = gpu::awq_tile_shape(a.k_in, a.n_out, a.group);
  Emulated o{std::vector<std::uint32_t>(std::size_t(s.tile_words()), 0xFFFFFFFFu),
             std::vector<std::uint32_t>(std::size_t(s.meta_words()), 0xFFFFFFFFu),
             std::vector<int>(std::size_t(s.tile_words()), 0),
             std::vector<int>(std::size_t(s.meta_words()), 0)};
  for (std::int64_t tile = 0; tile < s.tiles(); ++tile) {
    const std::int64_t kt = tile / s.n_tiles, nt = tile - kt * s.n_tiles;
    std::vector<std::uint32_t> stage(kStageWords, 0xDEADBEEFu);
    for (int t = 0; t < kThreads; ++t)
      for (int j = 0; j < kStagedPerThread; ++j) {
        const int e = t + j * kThreads;
        const std::int64_t src = stage_source(s, kt, nt, e);
        stage[std::size_t(stage_slot(e))] =
            src >= 0 ? std::uint32_t(a.qweight[std::size_t(src)]) : 0u;
      }
    const std::int64_t mt = meta_tile_of(s, kt);
    for (int t = 0; t < kThreads; ++t)
      if (mt >= 0 && t < s.meta_words_per_tile) {
        const std::size_t m = std::size_t(meta_index(s, mt, nt, t));
        o.meta[m] = meta_word(s, a.scales.data(), a.qzeros.data(), mt, nt, t);
        ++o.meta_writes[m];
      }
    for (int t = 0; t < kThreads; ++t)
      for (int i = 0; i < 4; ++i) {
        const std::size_t w = std::size_t(tile * kAwqTileWords + 4 * t + i);
        o.words[w] = tile_word(stage.data(), t, i);
        ++o.word_writes[w];
      }
  }
  return o;
}

struct Shape {
  std::int64_t n_out, k_in;
};
// Tile multiples (128 columns x 64 k: {128, 64}) and shapes that are not, nor at G = 32 of the
// two-group meta tile.
const Shape kShapes[] = {{200, 96}, {264, 160}, {8, 2176}, {264, 2176},
                         {128, 64}, {136, 384}, {200, 640}};

}  // namespace

TEST_CASE("gpu::awq_tile refuses bad shapes and pointers before any launch", "[variants][awq]") {
  const std::int32_t* qw = reinterpret_cast<const std::int32_t*>(std::uintptr_t(256));
  const std::uint16_t* sc = reinterpret_cast<const std::uint16_t*>(std::uintptr_t(512));
  std::uint32_t* words = reinterpret_cast<std::uint32_t*>(std::uintptr_t(1024));
  std::uint32_t* meta = reinterpret_cast<std::uint32_t*>(std::uintptr_t(2048));
  auto call = [&](std::int64_t k_in, std::int64_t n_out, int group) {
    gpu::awq_tile(qw, qw, sc, k_in, n_out, group, words, meta, nullptr);
  };
  for (int g : {0, 16, 48, 256})
    CHECK_THROWS_WITH(call(128, 128, g), Catch::Contains("group size " + std::to_string(g)) &&
                                             Catch::Contains("32, 64, 128"));
  for (std::int64_t n : {0ll, -8ll, 100ll, 129ll})
    CHECK_THROWS_WITH(call(128, n, 64), Catch::Contains("N_out = " + std::to_string(n)) &&
                                            Catch::Contains("multiple of 8"));
  CHECK_THROWS_WITH(call(96, 128, 64),
                    Catch::Contains("K_in = 96") && Catch::Contains("the group size 64"));
  CHECK_THROWS_WITH(call(0, 128, 32), Catch::Contains("K_in = 0"));
  CHECK_THROWS_WITH(call(160, 128, 128), Catch::Contains("K_in = 160"));
  // The grid: one block a tile, 2^31 blocks refused (in either dimension or as the product).
  CHECK_THROWS_WITH(call(64, 128ll << 31, 32),
                    Catch::Contains("1 x 2147483648 tiles") && Catch::Contains("2^31"));
  CHECK_THROWS_WITH(call(64ll << 31, 128, 64),
                    Catch::Contains("2147483648 x 1 tiles") && Catch::Contains("2^31"));
  CHECK_THROWS_WITH(call(64ll << 16, 128ll << 15, 128),
                    Catch::Contains("65536 x 32768 tiles") && Catch::Contains("2^31"));
  CHECK_THROWS_WITH(call(std::int64_t(1) << 62, std::int64_t(1) << 62, 128),
                    Catch::Contains("2^31"));  // no overflow on the way
  CHECK(gpu::awq_tile_shape(64, 128 * ((1ll << 31) - 1), 64).tiles() == (1ll << 31) - 1);
  CHECK(gpu::awq_tile_shape(64 * 65535, 128 * 32768, 32).tiles() == 65535ll * 32768);
  // Then the pointers, and the 16-byte stores' alignment.
  CHECK_THROWS_WITH(gpu::awq_tile(nullptr, qw, sc, 64, 128, 64, words, meta, nullptr),
                    Catch::Contains("null"));
  CHECK_THROWS_WITH(gpu::awq_tile(qw, qw, sc, 64, 128, 64, words, nullptr, nullptr),
                    Catch::Contains("null"));
  CHECK_THROWS_WITH(gpu::awq_tile(qw, qw, sc, 64, 128, 64, words + 1, meta, nullptr),
                    Catch::Contains("16-byte aligned"));
}

TEST_CASE("gpu::awq_tile_shape gives awq_tile's sizes", "[variants][awq]") {
  for (int g : {32, 64, 128})
    for (const Shape& sh : kShapes) {
      if (sh.k_in % g) continue;
      INFO("G = " << g << " N_out = " << sh.n_out << " K_in = " << sh.k_in);
      const AwqTiled ref = awq_tile(test::random_awq_tensor(sh.k_in, sh.n_out, g, 1));
      const gpu::AwqTileShape s = gpu::awq_tile_shape(sh.k_in, sh.n_out, g);
      CHECK(s.n_tiles == ref.n_tiles);
      CHECK(s.k_tiles == ref.k_tiles);
      CHECK(s.meta_tiles == ref.meta_tiles);
      CHECK(s.meta_words_per_tile == ref.meta_words_per_tile);
      CHECK(s.tile_words() == std::int64_t(ref.words.size()));
      CHECK(s.meta_words() == std::int64_t(ref.meta.size()));
    }
  for (int c = 0; c < 8; ++c) CHECK(gpu::awq_map::nibble_of_column(c) == kAwqReverseOrder[c]);
}

TEST_CASE("gpu::awq_tile's index math, run on the CPU, is word for word awq_tile",
          "[variants][awq]") {
  int checked = 0;
  for (int g : {32, 64, 128})
    for (const Shape& sh : kShapes) {
      if (sh.k_in % g) continue;
      INFO("G = " << g << " N_out = " << sh.n_out << " K_in = " << sh.k_in);
      const AwqTensor a =
          test::random_awq_tensor(sh.k_in, sh.n_out, g, std::uint64_t(g + sh.n_out));
      const AwqTiled ref = awq_tile(a);
      const Emulated got = emulate_kernel(a);
      REQUIRE(got.words == ref.words);
      REQUIRE(got.meta == ref.meta);
      REQUIRE(got.word_writes == std::vector<int>(ref.words.size(), 1));
      REQUIRE(got.meta_writes == std::vector<int>(ref.meta.size(), 1));
      ++checked;
    }
  CHECK(checked == 16);
}
