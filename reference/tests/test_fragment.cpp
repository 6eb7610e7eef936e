#include <catch2/catch.hpp>

#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/fragment.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"
#include "reference/tiled.hpp"

using namespace kbit;

namespace {

struct Want {
  int word, bit;
};

void check_pos(int k_bits, int r, int kk, int code_byte, std::initializer_list<Want> planes) {
  int p = 0;
  for (const Want& want : planes) {
    INFO("K = " << k_bits << ", row " << r << ", k " << kk << ", plane " << p);
    const FragmentPos f = fragment_pos(k_bits, r, kk, p++);
    CHECK(f.word == want.word);
    CHECK(f.bit == want.bit);
    CHECK(f.code_byte == code_byte);
  }
  REQUIRE(p == k_bits);
}

}  // namespace

TEST_CASE("fragment_pos: the hand-worked positions of docs/format.md", "[fragment]") {
  // Row 0, element 0: thread 0, pair 0, first element, (row, block) i = 0: word 0, bit 2p at
  // every K (K = 3: word j = 0 of chunk 0 is 96 * 0 + 2 * 0 = 0), code byte 0. K = 5's plane 4:
  // the fifth word 160 * 0 + 128 + 0, bit 16 + 8 * 0 + 2 * 0 (Q < 2, s = 0).
  check_pos(5, 0, 0, 0, {{0, 0}, {0, 2}, {0, 4}, {0, 6}, {128, 16}});
  check_pos(4, 0, 0, 0, {{0, 0}, {0, 2}, {0, 4}, {0, 6}});
  check_pos(3, 0, 0, 0, {{0, 0}, {0, 2}, {0, 4}});
  check_pos(2, 0, 0, 0, {{0, 0}, {0, 2}});
  // Row 27 = 16 * 1 + 3 + 8: w = 1, g = 3, rr = 1; k 45 = block 1, element 13: pair Q = 1,
  // c = 2, s = 1 (second element). Thread t = 32 + 12 + 2 = 46, lane 14, i = 2 + 1 = 3; code
  // byte 4 * (8 + 3) + 3 = 47.
  // K = 4: word 4 * 46 + 3 = 187, bit 8 + 2p + 1.
  check_pos(4, 27, 45, 47, {{187, 9}, {187, 11}, {187, 13}, {187, 15}});
  // K = 2: word 2 * 46 + (3 & 1) = 93, bit 8 + 4 * (3 >> 1) + 2p + 1 = 13 + 2p.
  check_pos(2, 27, 45, 47, {{93, 13}, {93, 15}});
  // K = 3, i = 3: plane p in word j = p of chunk 1 (words 96 .. 191): j = 0 is 96 + 2 * 14 = 124,
  // j = 1 is 125, j = 2 is 96 + 64 + 14 = 174; bit 8 + 6 + 1 = 15 in each.
  check_pos(3, 27, 45, 47, {{124, 15}, {125, 15}, {174, 15}});
  // K = 3, same row, k 13 (block 0, same Q, c, s): i = 2, all planes in word j = 2 = 174 at
  // bit 8 + 2p + 1; code byte 46.
  check_pos(3, 27, 13, 46, {{174, 9}, {174, 11}, {174, 13}});
  // K = 5, row 27, k 45 (lane 14, i = 3, Q 1, s 1): planes 0..3 in word 160 + 4 * 14 + 3 = 219
  // at bit 8 + 2p + 1; plane 4 in word 160 + 128 + 14 = 302, bit 7 + 8 * 1 + 2 * 3 = 21.
  check_pos(5, 27, 45, 47, {{219, 9}, {219, 11}, {219, 13}, {219, 15}, {302, 21}});
  // K = 5, Q >= 2, s = 1 (the wrap past bit 31). Row 0 (w 0, g 0, rr 0), k 31 (block 0, element
  // 31: Q 3, c 3, s 1): t = 3, i = 0, code byte 0; planes 0..3 in word 4 * 3 + 0 = 12 at bit
  // 24 + 2p + 1; plane 4 in word 128 + 3 = 131, bit 23 + 8 + 0 = 31.
  check_pos(5, 0, 31, 0, {{12, 25}, {12, 27}, {12, 29}, {12, 31}, {131, 31}});
  // Row 0, k 63 (block 1: i = 1, same Q, c, s; code byte 1): word 13; plane 4 at bit
  // (23 + 8 + 2) mod 32 = 1.
  check_pos(5, 0, 63, 1, {{13, 25}, {13, 27}, {13, 29}, {13, 31}, {131, 1}});
  // Row 122 = 16 * 7 + 2 + 8 (w 7, g 2, rr 1), k 20 (block 0, element 20: Q 2, c 2, s 0):
  // t = 224 + 8 + 2 = 234, lane 10, i = 2, code byte 4 * (56 + 2) + 2 = 234; planes 0..3 in word
  // 160 * 7 + 4 * 10 + 2 = 1162 at bit 16 + 2p; plane 4 in word 1120 + 128 + 10 = 1258, bit
  // 8 * 0 + 2 * 2 = 4.
  check_pos(5, 122, 20, 234, {{1162, 16}, {1162, 18}, {1162, 20}, {1162, 22}, {1258, 4}});
  // K = 2, row 3 (w 0, g 3, rr 0), k 40 (block 1, element 8: Q 1, c 0, s 0): t = 12, i = 1:
  // word 2 * 12 + 1 = 25 (block 1), bit 8 + 0 + 2p (row r0: the low nibble); code byte 4 * 3 + 1
  // = 13.
  check_pos(2, 3, 40, 13, {{25, 8}, {25, 10}});
}

TEST_CASE("fragment_pos: every bit and every code byte of a tile is used once", "[fragment]") {
  for (int K : {2, 3, 4, 5}) {
    INFO("K = " << K);
    const int words = fragment_tile_words(K);
    CHECK(words == 256 * K);
    std::vector<int> bits(std::size_t(words) * 32, 0), codes(FragmentTile::kCodes, 0);
    for (int r = 0; r < FragmentTile::kTileN; ++r)
      for (int kk = 0; kk < FragmentTile::kTileK; ++kk)
        for (int p = 0; p < K; ++p) {
          const FragmentPos f = fragment_pos(K, r, kk, p);
          REQUIRE(f.word >= 0);
          REQUIRE(f.word < words);
          REQUIRE(f.bit >= 0);
          REQUIRE(f.bit < 32);
          ++bits[std::size_t(f.word * 32 + f.bit)];
          if (kk % 32 == 0 && p == 0) ++codes[std::size_t(f.code_byte)];
        }
    int wrong = 0;
    for (int v : bits) wrong += v != 1;
    for (int v : codes) wrong += v != 1;
    CHECK(wrong == 0);
  }
  CHECK_THROWS_WITH(fragment_pos(6, 0, 0, 0), Catch::Contains("K = 2..5, not K = 6"));
  CHECK_THROWS_WITH(fragment_pos(1, 0, 0, 0), Catch::Contains("K = 2..5, not K = 1"));
  CHECK_THROWS_WITH(fragment_pos(3, 0, 0, 3), Catch::Contains("plane 3"));
  CHECK_THROWS_WITH(fragment_pos(5, 0, 0, 5), Catch::Contains("plane 5"));
  CHECK_THROWS_WITH(fragment_pos(4, 128, 0, 0), Catch::Contains("row 128"));
  CHECK_THROWS_WITH(fragment_pos(4, 0, 64, 0), Catch::Contains("k 64"));
}

TEST_CASE("fragment_tile: one word by hand", "[fragment]") {
  // K = 4. Row 0, block 0 with planes 0..3 = one bit each: element 2 (pair 0 of c = 1) has
  // index 1 (plane 0), element 11 (pair 1 of c = 1, second) index 2 (plane 1), element 3 index 8
  // (plane 3). Thread 1 (c = 1) word 4: byte 0 = code of pair (2, 3): bit 0 = plane 0 of
  // element 2, bit 7 = plane 3 of element 3; byte 1 = pair (10, 11): bit 3 = plane 1 of 11.
  std::vector<std::uint32_t> tiled(fragment_tile_words(4), 0), out(fragment_tile_words(4));
  std::vector<std::uint8_t> codes(FragmentTile::kCodes, 0), out_codes(FragmentTile::kCodes);
  tiled[0] = 1u << 2;       // plane 0 of row 0 block 0
  tiled[1] = 1u << 11;      // plane 1
  tiled[3] = 1u << 3;       // plane 3
  codes[2 * 9 + 1] = 0x5A;  // row 9 (warp 0, g 1, rr 1), block 1
  fragment_tile(4, tiled.data(), codes.data(), out.data(), out_codes.data());
  CHECK(out[4] == ((1u << 0) | (1u << 7) | (1u << (8 + 3))));
  for (int i = 0; i < fragment_tile_words(4); ++i)
    if (i != 4) CHECK(out[i] == 0u);
  CHECK(out_codes[4 * 1 + 2 + 1] == 0x5A);
}

TEST_CASE("fragment_tile: K = 3's fourth pair word spread over the three words", "[fragment]") {
  // Tiled words of (row r, block kb) plane p: (2r + kb) * 3 + p. Thread 1 (w 0, g 0, c 1,
  // lane 1) holds rows 0 and 8; its words are j = 0: 2, j = 1: 3, j = 2: 64 + 1 = 65.
  // Row 0 block 0 (i = 0), element 2 (Q 0, s 0) plane 1 -> word 2, bit 2 * 1 + 0 = 2.
  // Row 8 block 1 (i = 3), element 2 plane 0 -> word j = 0 = 2, bit 6 + 0 = 6.
  // Row 8 block 1 (i = 3), element 11 (Q 1, c 1, s 1) plane 2 -> word j = 2 = 65, bit 8 + 6 + 1.
  std::vector<std::uint32_t> tiled(fragment_tile_words(3), 0), out(fragment_tile_words(3));
  std::vector<std::uint8_t> codes(FragmentTile::kCodes, 0), out_codes(FragmentTile::kCodes);
  tiled[0 * 3 + 1] = 1u << 2;
  tiled[17 * 3 + 0] = 1u << 2;
  tiled[17 * 3 + 2] = 1u << 11;
  codes[17] = 0x3C;  // row 8 block 1: code byte 4 * (8 * 0 + 0) + 3
  fragment_tile(3, tiled.data(), codes.data(), out.data(), out_codes.data());
  CHECK(out[2] == ((1u << 2) | (1u << 6)));
  CHECK(out[65] == 1u << 15);
  for (int i = 0; i < fragment_tile_words(3); ++i)
    if (i != 2 && i != 65) CHECK(out[i] == 0u);
  CHECK(out_codes[3] == 0x3C);
}

TEST_CASE("fragment_tile: K = 5's plane 4 in the fifth word", "[fragment]") {
  // Tiled words of (row r, block kb) plane p: (2r + kb) * 5 + p. Row 8 block 1 is thread 1's
  // i = 3 (w 0, g 0, rr 1; lane 1): its pair words are 4 * 1 + i, its fifth word 128 + 1 = 129.
  // Element 2 (Q 0, c 1, s 0) plane 4 -> bit 16 + 0 + 2 * 3 = 22.
  // Element 19 (Q 2, c 1, s 1) plane 4 -> bit 23 + 0 + 6 = 29.
  // Element 27 (Q 3, c 1, s 1) plane 4 -> bit (23 + 8 + 6) mod 32 = 5.
  // Element 3 (Q 0, c 1, s 1) plane 2 -> word 4 + 3 = 7, bit 2 * 2 + 1 = 5.
  std::vector<std::uint32_t> tiled(fragment_tile_words(5), 0), out(fragment_tile_words(5));
  std::vector<std::uint8_t> codes(FragmentTile::kCodes, 0), out_codes(FragmentTile::kCodes);
  tiled[17 * 5 + 4] = (1u << 2) | (1u << 19) | (1u << 27);
  tiled[17 * 5 + 2] = 1u << 3;
  codes[17] = 0x3C;  // row 8 block 1: code byte 4 * (8 * 0 + 0) + 3
  fragment_tile(5, tiled.data(), codes.data(), out.data(), out_codes.data());
  CHECK(out[129] == ((1u << 22) | (1u << 29) | (1u << 5)));
  CHECK(out[7] == 1u << 5);
  for (int i = 0; i < fragment_tile_words(5); ++i)
    if (i != 7 && i != 129) CHECK(out[i] == 0u);
  CHECK(out_codes[3] == 0x3C);
}

TEST_CASE("fragment order: the decoder's loads give every pair's interleaved code", "[fragment]") {
  // What a thread of variant 07 does with its words, per K, on random tiles: each (row, block)
  // i and pair Q gives the 2K-bit code (bit 2p + s = plane p of element 8Q + 2c + s).
  const auto sel = [](std::uint32_t a, std::uint32_t b, std::uint32_t mask) {
    return (a & mask) | (b & ~mask);
  };
  // PRMT: byte n of the result is byte (nibble n of sel) & 7 of {b, a} (a bytes 0..3), or with
  // the nibble's bit 3 that byte's sign bit replicated.
  const auto prmt = [](std::uint32_t a, std::uint32_t b, std::uint32_t sel_bytes) {
    const std::uint64_t src = (std::uint64_t(b) << 32) | a;
    std::uint32_t r = 0;
    for (int n = 0; n < 4; ++n) {
      const std::uint32_t nib = (sel_bytes >> (4 * n)) & 0xF;
      std::uint32_t byte = std::uint32_t(src >> (8 * (nib & 7))) & 0xFF;
      if (nib & 8) byte = (byte & 0x80) ? 0xFF : 0;
      r |= byte << (8 * n);
    }
    return r;
  };
  for (int K : {2, 3, 4, 5}) {
    INFO("K = " << K);
    const int words = fragment_tile_words(K);
    std::vector<std::uint32_t> tiled(static_cast<std::size_t>(words), 0u), frag = tiled;
    std::vector<std::uint8_t> codes(FragmentTile::kCodes, 0), frag_codes = codes;
    for (int i = 0; i < words; ++i) tiled[std::size_t(i)] = std::uint32_t(splitmix64(K * 5000 + i));
    for (int i = 0; i < FragmentTile::kCodes; ++i) codes[std::size_t(i)] = std::uint8_t(i * 7 + K);
    fragment_tile(K, tiled.data(), codes.data(), frag.data(), frag_codes.data());
    int wrong = 0;
    for (int t = 0; t < 256; ++t) {
      const int w = t / 32, lane = t % 32, g = lane / 4, c = lane % 4;
      std::uint32_t pair_words[4], fifth = 0;
      if (K == 5) {  // a 16-byte and a 4-byte load in the row block's 160-word chunk
        for (int i = 0; i < 4; ++i) pair_words[i] = frag[std::size_t(160 * w + 4 * lane + i)];
        fifth = frag[std::size_t(160 * w + 128 + lane)];
      } else if (K == 4) {
        for (int i = 0; i < 4; ++i) pair_words[i] = frag[std::size_t(4 * t + i)];
      } else if (K == 2) {  // one 8-byte load, word kb >> 4 for row r0 + 8 (the high nibbles)
        const std::uint32_t a = frag[std::size_t(2 * t)], b = frag[std::size_t(2 * t + 1)];
        pair_words[0] = a, pair_words[1] = b, pair_words[2] = a >> 4, pair_words[3] = b >> 4;
      } else {  // an 8-byte and a 4-byte load; word 3 from the bits 6, 7 of each byte
        const std::uint32_t w0 = frag[std::size_t(96 * w + 2 * lane)];
        const std::uint32_t w1 = frag[std::size_t(96 * w + 2 * lane + 1)];
        const std::uint32_t w2 = frag[std::size_t(96 * w + 64 + lane)];
        pair_words[0] = w0, pair_words[1] = w1, pair_words[2] = w2;
        pair_words[3] = sel(sel(w0 >> 6, w1 >> 4, 0x03030303u), w2 >> 2, 0x0F0F0F0Fu);
      }
      const std::uint32_t mask = (1u << (2 * K)) - 1;
      std::uint32_t code_word = 0;
      for (int i = 0; i < 4; ++i) {
        const int r = 16 * w + g + 8 * (i >> 1), kb = i & 1;
        code_word |= std::uint32_t(codes[std::size_t(r * 2 + kb)]) << (8 * i);
        for (int q = 0; q < 4; ++q) {
          std::uint32_t want = 0;
          for (int p = 0; p < K; ++p)
            for (int s = 0; s < 2; ++s)
              want |= ((tiled[std::size_t((r * 2 + kb) * K + p)] >> (8 * q + 2 * c + s)) & 1u)
                      << (2 * p + s);
          if (K < 5) {
            wrong += ((pair_words[i] >> (8 * q)) & mask) != want;
            continue;
          }
          // K = 5: the fifth word rotated right by 2i, one LOP3 (the two pairs' plane-4 bits,
          // the lane's column byte 4 lane beside hb) and one PRMT with byte Q of pair word i give
          // the 128 KB table's address ha * 65536 + byte * 256 + hb * 128 + 4 lane.
          const std::uint32_t rot = i == 0 ? fifth : (fifth >> (2 * i)) | (fifth << (32 - 2 * i));
          const std::uint32_t col = 4u * std::uint32_t(lane);
          const std::uint32_t merged = q < 2 ? (rot & 0x01018080u) | (col * 0x00000101u)
                                             : (rot & 0x80800101u) | (col * 0x01010000u);
          static constexpr std::uint32_t kSel[4] = {0xE604, 0xF715, 0xC426, 0xD537};
          const std::uint32_t address = prmt(pair_words[i], merged, kSel[q]);
          wrong += address !=
                   (((want >> 8) & 1u) << 16 | (want & 0xFFu) << 8 | ((want >> 9) & 1u) << 7 | col);
        }
      }
      std::uint32_t got_codes = 0;
      for (int b = 0; b < 4; ++b)
        got_codes |= std::uint32_t(frag_codes[std::size_t(4 * (t / 4) + b)]) << (8 * b);
      wrong += got_codes != code_word;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("fragment order: every element decodes as the tiled layout's, and back", "[fragment]") {
  for (int K : {2, 3, 4, 5})
    for (auto s : {std::pair<std::int64_t, std::int64_t>{200, 96}, {128, 64}, {300, 4096}}) {
      const auto [N, K_dim] = s;
      INFO("K = " << K << " N=" << N << " K_dim=" << K_dim);
      const auto cb = codebook_nf(K);
      const auto q = quantize(random_normal(N * K_dim, std::uint64_t(N + K_dim + K)), cb, K);
      const auto t = repack(q.packed.data(), q.absmax_e4m4.data(), N, K_dim, K, {64, 128});
      const auto f = fragment_order(t);
      REQUIRE(f.packed.size() == t.packed.size());
      REQUIRE(f.absmax.size() == t.absmax.size());
      const std::int64_t words = fragment_tile_words(K);
      // Independent of fragment_tile: each element's index read through fragment_pos equals the
      // quantizer's, and each block's code equals its absmax byte.
      std::int64_t wrong = 0;
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t k = 0; k < K_dim; ++k) {
          const std::int64_t tile = (k / 64) * t.geo.n_tiles() + n / 128;
          std::uint32_t idx = 0;
          int code_byte = 0;
          for (int p = 0; p < K; ++p) {
            const FragmentPos fp = fragment_pos(K, int(n % 128), int(k % 64), p);
            idx |= ((f.packed[std::size_t(tile * words + fp.word)] >> fp.bit) & 1u) << p;
            code_byte = fp.code_byte;
          }
          wrong += idx != q.index(n * K_dim + k);
          if (k % 32 == 0)
            wrong += f.absmax[std::size_t(tile * FragmentTile::kCodes + code_byte)] !=
                     q.absmax_e4m4[std::size_t((n * K_dim + k) / 32)];
        }
      CHECK(wrong == 0);
      // The bits did move (the tiled words read through fragment_pos would not decode).
      CHECK(f.packed != t.packed);
      const auto back = fragment_unorder(f);
      CHECK(back.packed == t.packed);
      CHECK(back.absmax == t.absmax);
    }
}

TEST_CASE("fragment order refuses other widths and tiles", "[fragment]") {
  // The tiled layout holds K = 2..5 only, so a wider weight is K = 5's geometry relabelled.
  const auto q5 = quantize(random_normal(128 * 64, 3), codebook_nf(5), 5);
  auto t6 = repack(q5.packed.data(), q5.absmax_e4m4.data(), 128, 64, 5, {64, 128});
  t6.geo.k_bits = 6;
  CHECK_THROWS_WITH(fragment_order(t6),
                    Catch::Contains("fragment_order: the fragment-order layout is K = 2..5 "
                                    "with 64 x 128 tiles, not K = 6 with 64 x 128"));
  CHECK_THROWS_WITH(fragment_unorder(t6), Catch::Contains("fragment_unorder") &&
                                              Catch::Contains("not K = 6 with 64 x 128"));
  for (int K : {2, 3, 4, 5}) {
    INFO("K = " << K);
    const auto q = quantize(random_normal(128 * 64, 3), codebook_nf(K), K);
    const auto t = repack(q.packed.data(), q.absmax_e4m4.data(), 128, 64, K, {32, 128});
    CHECK_THROWS_WITH(fragment_order(t),
                      Catch::Contains("not K = " + std::to_string(K) + " with 32 x 128"));
    CHECK_THROWS_WITH(fragment_unorder(t),
                      Catch::Contains("not K = " + std::to_string(K) + " with 32 x 128"));
  }
  std::vector<std::uint32_t> w(fragment_tile_words(5));
  std::vector<std::uint8_t> c(FragmentTile::kCodes);
  CHECK_THROWS_WITH(fragment_tile(6, w.data(), c.data(), w.data(), c.data()),
                    Catch::Contains("not K = 6"));
  CHECK_THROWS_WITH(unfragment_tile(1, w.data(), c.data(), w.data(), c.data()),
                    Catch::Contains("not K = 1"));
}
