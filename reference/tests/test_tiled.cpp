#include <catch2/catch.hpp>

#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"
#include "reference/tiled.hpp"

using namespace kbit;

TEST_CASE("repack / unrepack round trip for every tile config and odd shapes", "[tiled]") {
  const struct {
    std::int64_t N, K_dim;
  } shapes[] = {{1, 32}, {200, 96}, {128, 64}, {257, 160}, {64, 4096}, {300, 32}};
  for (int k = 2; k <= 5; ++k) {
    for (auto s : shapes) {
      const auto cb = codebook_nf(k);
      const auto q = quantize(random_normal(s.N * s.K_dim, std::uint64_t(k * 1000 + s.N)), cb, k);
      const auto w_flat = dequantize_f32(q, cb);
      for (int tk : {32, 64, 128}) {
        for (int tn : {64, 128, 256}) {
          INFO("K=" << k << " N=" << s.N << " K_dim=" << s.K_dim << " tile " << tk << "x" << tn);
          const auto t = repack(q.packed.data(), q.absmax_e4m4.data(), s.N, s.K_dim, k, {tk, tn});
          CHECK(std::int64_t(t.packed.size()) == t.geo.packed_words());
          CHECK(t.geo.n_tiles() == (s.N + tn - 1) / tn);
          CHECK(t.geo.k_tiles() == (s.K_dim + tk - 1) / tk);
          std::vector<std::uint32_t> p(q.packed.size(), 0xDEADBEEF);
          std::vector<std::uint8_t> a(q.absmax_e4m4.size(), 0xAB);
          unrepack(t, p.data(), a.data());
          CHECK(p == q.packed);
          CHECK(a == q.absmax_e4m4);
          CHECK(dequantize_tiled(t, cb) == w_flat);
        }
      }
    }
  }
}

TEST_CASE("tiled padding is zero words and absmax 0x00", "[tiled]") {
  const int k = 4;
  const std::int64_t N = 200, K_dim = 96;  // pads N to 256 and K_dim to 128
  const auto q = quantize(random_normal(N * K_dim, 1), codebook_nf(k), k);
  const auto t = repack(q.packed.data(), q.absmax_e4m4.data(), N, K_dim, k, {64, 128});
  std::vector<char> real(std::size_t(t.geo.absmax_bytes()), 0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t kb = 0; kb < K_dim / 32; ++kb)
      real[std::size_t(t.geo.block_index(n, kb))] = 1;
  std::int64_t pad_blocks = 0;
  for (std::size_t b = 0; b < real.size(); ++b) {
    if (real[b]) continue;
    ++pad_blocks;
    CHECK(t.absmax[b] == 0);
    for (int i = 0; i < k; ++i) CHECK(t.packed[b * k + std::size_t(i)] == 0u);
  }
  CHECK(pad_blocks == 256 * 4 - 200 * 3);
}

TEST_CASE("the tiled order is [k_tile][n_tile][col][k_block][bit]", "[tiled]") {
  const auto g = make_tiled_geometry(300, 256, 3, {64, 128});
  CHECK(g.n_tiles() == 3);
  CHECK(g.k_tiles() == 4);
  CHECK(g.block_index(0, 0) == 0);
  CHECK(g.block_index(0, 1) == 1);
  CHECK(g.block_index(1, 0) == 2);
  CHECK(g.block_index(128, 0) == 256);        // next n_tile
  CHECK(g.block_index(0, 2) == 3 * 128 * 2);  // next k_tile
  CHECK(g.tile_words() == 128 * 2 * 3);
}

TEST_CASE("bad tile configs and weight shapes are refused", "[tiled]") {
  CHECK_THROWS_WITH(check_tile_config({48, 128}), Catch::Contains("tile_k = 48"));
  CHECK_THROWS_WITH(check_tile_config({64, 100}), Catch::Contains("tile_n = 100"));
  CHECK_THROWS_WITH(check_weight_shape(10, 100),
                    Catch::Contains("K_dim = 100") && Catch::Contains("multiple of 32"));
  CHECK_THROWS_WITH(check_weight_shape(0, 64), Catch::Contains("N = 0"));
  CHECK_THROWS_AS(make_tiled_geometry(10, 64, 6, {}), Error);
}
