#include <catch2/catch.hpp>

#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/fragment.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"
#include "reference/tiled.hpp"

using namespace kbit;

TEST_CASE("fragment_pos: the hand-worked positions of docs/format.md", "[fragment]") {
  // Row 0, element 0: thread 0, word 0, byte 0 (pair 0), bit 0.
  const FragmentPos a = fragment_pos(0, 0);
  CHECK(a.word == 0);
  CHECK(a.bit == 0);
  CHECK(a.code_byte == 0);
  // Row 27 = 16 * 1 + 3 + 8: warp 1, g = 3, rr = 1; k 45 = block 1, element 13: pair Q = 1,
  // c = 2, second element. Thread 32 + 12 + 2 = 46: word 4 * 46 + 2 + 1 = 187, bit 8 + 1.
  const FragmentPos b = fragment_pos(27, 45);
  CHECK(b.word == 187);
  CHECK(b.bit == 9);
  CHECK(b.code_byte == 4 * (8 + 3) + 2 + 1);
  // Every (row, k) lands on its own bit, and every code byte on one block.
  std::vector<int> bits(FragmentTile::kWords * 32, 0), codes(FragmentTile::kCodes, 0);
  for (int r = 0; r < FragmentTile::kTileN; ++r)
    for (int kk = 0; kk < FragmentTile::kTileK; ++kk) {
      const FragmentPos p = fragment_pos(r, kk);
      REQUIRE(p.bit % 8 < 2);
      for (int b2 = 0; b2 < 4; ++b2) ++bits[std::size_t(p.word * 32 + p.bit + 2 * b2)];
      if (kk % 32 == 0) ++codes[std::size_t(p.code_byte)];
    }
  for (int v : bits) CHECK(v == 1);
  for (int v : codes) CHECK(v == 1);
}

TEST_CASE("fragment_tile: one word by hand", "[fragment]") {
  // Row 0, block 0 with planes 0..3 = one bit each: element 2 (pair 0 of c = 1) has index 1
  // (plane 0), element 11 (pair 1 of c = 1, second) index 2 (plane 1), element 3 index 8
  // (plane 3). Thread 1 (c = 1) word 4: byte 0 = code of pair (2, 3): bit 0 = plane 0 of
  // element 2, bit 7 = plane 3 of element 3; byte 1 = pair (10, 11): bit 3 = plane 1 of 11.
  std::vector<std::uint32_t> tiled(FragmentTile::kWords, 0), out(FragmentTile::kWords);
  std::vector<std::uint8_t> codes(FragmentTile::kCodes, 0), out_codes(FragmentTile::kCodes);
  tiled[0] = 1u << 2;       // plane 0 of row 0 block 0
  tiled[1] = 1u << 11;      // plane 1
  tiled[3] = 1u << 3;       // plane 3
  codes[2 * 9 + 1] = 0x5A;  // row 9 (warp 0, g 1, rr 1), block 1
  fragment_tile(tiled.data(), codes.data(), out.data(), out_codes.data());
  CHECK(out[4] == ((1u << 0) | (1u << 7) | (1u << (8 + 3))));
  for (int i = 0; i < FragmentTile::kWords; ++i)
    if (i != 4) CHECK(out[i] == 0u);
  CHECK(out_codes[4 * 1 + 2 + 1] == 0x5A);
}

TEST_CASE("fragment order: every element decodes as the tiled layout's, and back", "[fragment]") {
  for (auto s : {std::pair<std::int64_t, std::int64_t>{200, 96}, {128, 64}, {300, 4096}}) {
    const auto [N, K_dim] = s;
    INFO("N=" << N << " K_dim=" << K_dim);
    const auto cb = codebook_nf(4);
    const auto q = quantize(random_normal(N * K_dim, std::uint64_t(N + K_dim)), cb, 4);
    const auto t = repack(q.packed.data(), q.absmax_e4m4.data(), N, K_dim, 4, {64, 128});
    const auto f = fragment_order(t);
    CHECK(f.packed.size() == t.packed.size());
    // Independent of fragment_tile: each element's index read through fragment_pos equals the
    // quantizer's, and each block's code equals its absmax byte.
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t k = 0; k < K_dim; ++k) {
        const std::int64_t tile = (k / 64) * t.geo.n_tiles() + n / 128;
        const FragmentPos p = fragment_pos(int(n % 128), int(k % 64));
        const std::uint32_t w = f.packed[std::size_t(tile * 1024 + p.word)];
        std::uint32_t idx = 0;
        for (int b = 0; b < 4; ++b) idx |= ((w >> (p.bit + 2 * b)) & 1u) << b;
        REQUIRE(idx == q.index(n * K_dim + k));
        if (k % 32 == 0)
          REQUIRE(f.absmax[std::size_t(tile * 256 + p.code_byte)] ==
                  q.absmax_e4m4[std::size_t((n * K_dim + k) / 32)]);
      }
    const auto back = fragment_unorder(f);
    CHECK(back.packed == t.packed);
    CHECK(back.absmax == t.absmax);
  }
}

TEST_CASE("fragment order refuses other widths and tiles", "[fragment]") {
  const auto q = quantize(random_normal(128 * 64, 3), codebook_nf(3), 3);
  const auto t3 = repack(q.packed.data(), q.absmax_e4m4.data(), 128, 64, 3, {64, 128});
  CHECK_THROWS_WITH(fragment_order(t3), Catch::Contains("K = 4 with 64 x 128 tiles, not K = 3"));
  const auto q4 = quantize(random_normal(128 * 64, 3), codebook_nf(4), 4);
  const auto t4 = repack(q4.packed.data(), q4.absmax_e4m4.data(), 128, 64, 4, {32, 128});
  CHECK_THROWS_WITH(fragment_order(t4), Catch::Contains("not K = 4 with 32 x 128"));
}
