// The index math of the AWQ tiled repack's kernel (awq_repack.cu), host and device: where a block
// stages the qweight words of its tile, which nibbles each thread packs into its 4 words, and the
// meta words. variants/tests/test_awq_repack.cpp runs the same functions on the CPU, block by
// block and thread by thread, against kbit::awq_tile (reference/awq.hpp). No includes beyond the
// tile constants, so that both compilers take it.
#pragma once
#include <cstdint>

#include "reference/awq_layout.hpp"

namespace kbit::gpu {

// The tiled layout's sizes for one AWQ tensor (docs/awq_format.md, "The tiled layout"), as
// awq_tile_shape (awq_repack.hpp) fills them after its checks. All 64-bit: the checks compare
// them with the limits before anything narrows.
struct AwqTileShape {
  std::int64_t k_in = 0, n_out = 0;
  int group = 0;
  std::int64_t words_per_row = 0;  // int32 words of a qweight / qzeros row: n_out / 8
  std::int64_t groups = 0;         // k_in / group
  std::int64_t n_tiles = 0, k_tiles = 0, meta_tiles = 0;
  int groups_per_meta_tile = 0;  // awq_meta_tile_k(group) / group: 2 at G = 32, else 1
  int meta_words_per_tile = 0;   // kAwqTileN * groups_per_meta_tile

  KBIT_AWQ_HOST_DEVICE std::int64_t tiles() const { return k_tiles * n_tiles; }
  KBIT_AWQ_HOST_DEVICE std::int64_t tile_words() const { return tiles() * kAwqTileWords; }
  KBIT_AWQ_HOST_DEVICE std::int64_t meta_words() const {
    return meta_tiles * n_tiles * meta_words_per_tile;
  }
};

namespace awq_map {

constexpr int kThreads = 256;                  // a block: one tile, 4 output words a thread
constexpr int kStageRowWords = kAwqTileN / 8;  // 16 qweight words hold a tile's 128 columns
// Shared words from one staged k row to the next: 18, so that the 4 rows 2c (c = t % 4) a warp
// reads at once fall in 4 different banks (16 would put them all in one).
constexpr int kStageStride = kStageRowWords + 2;
constexpr int kStageWords = kAwqTileK * kStageStride;
constexpr int kStagedPerThread = kAwqTileK * kStageRowWords / kThreads;  // 4 loads a thread

// Column c (0..7) of a packed word sits at nibble kAwqReverseOrder[c] = {0, 4, 1, 5, 2, 6, 3, 7}:
// the even columns in nibbles 0..3, the odd ones in 4..7.
KBIT_AWQ_HOST_DEVICE inline int nibble_of_column(int c) {
  return (c >> 1) + 4 * (c & 1);
}

// Staged element e (0..1023) of tile (kt, nt): k row e / 16 of the tile, word e % 16 of it. A
// warp's 32 consecutive e read two rows of 16 consecutive words (64 bytes each).
KBIT_AWQ_HOST_DEVICE inline int stage_slot(int e) {
  return (e / kStageRowWords) * kStageStride + e % kStageRowWords;
}
// Its qweight index, or -1 past k_in or past n_out (the stage then holds 0: nibble 0).
KBIT_AWQ_HOST_DEVICE inline std::int64_t stage_source(const AwqTileShape& s, std::int64_t kt,
                                                      std::int64_t nt, int e) {
  const std::int64_t k = kt * kAwqTileK + e / kStageRowWords;
  const std::int64_t j = nt * kStageRowWords + e % kStageRowWords;
  return k < s.k_in && j < s.words_per_row ? k * s.words_per_row + j : -1;
}

// Word i (k16 step, 0..3) of thread t from the staged tile: nibble p holds the q of column
// r0 + 8 (p & 1) at k 16 i + 2 c + 8 (p >> 1), nibble p + 4 the same column at k + 1, with
// r0 = 64 (t / 128) + 16 ((t / 32) % 4) + (t % 32) / 4 and c = t % 4. r0 % 8 = (t % 32) / 4, so
// both columns take the same nibble of words r0 / 8 and r0 / 8 + 1.
KBIT_AWQ_HOST_DEVICE inline std::uint32_t tile_word(const std::uint32_t* stage, int t, int i) {
  const int w0 = 8 * (t / 128) + 2 * ((t / 32) % 4);  // r0 / 8
  const int shift = 4 * nibble_of_column((t % 32) / 4), c = t % 4;
  std::uint32_t word = 0;  // nvcc unrolls the constant trip count (no pragma: g++ -Wall)
  for (int p = 0; p < 4; ++p) {
    const int k = 16 * i + 2 * c + 8 * (p >> 1), slot = k * kStageStride + w0 + (p & 1);
    word |= ((stage[slot] >> shift) & 0xFu) << (4 * p) |
            ((stage[slot + kStageStride] >> shift) & 0xFu) << (4 * (p + 4));
  }
  return word;
}

// The meta tile that the block of k-tile kt writes, or -1: a meta tile spans
// awq_meta_tile_k(group) k (64 or 128), so every k-tile at G <= 64, every other one at G = 128.
KBIT_AWQ_HOST_DEVICE inline std::int64_t meta_tile_of(const AwqTileShape& s, std::int64_t kt) {
  const int per_k_tile = awq_meta_tile_k(s.group) / kAwqTileK;  // k-tiles a meta tile spans
  return kt % per_k_tile == 0 ? kt / per_k_tile : -1;
}
// Word m (0 .. meta_words_per_tile - 1) of meta tile (mt, nt): column nt * 128 + m % 128 of group
// mt * groups_per_meta_tile + m / 128, the fp16 scale | (0x6400 + zero) << 16; 0 out of range.
KBIT_AWQ_HOST_DEVICE inline std::uint32_t meta_word(const AwqTileShape& s,
                                                    const std::uint16_t* scales,
                                                    const std::int32_t* qzeros, std::int64_t mt,
                                                    std::int64_t nt, int m) {
  const std::int64_t g = mt * s.groups_per_meta_tile + m / kAwqTileN;
  const std::int64_t n = nt * kAwqTileN + m % kAwqTileN;
  if (g >= s.groups || n >= s.n_out) return 0u;
  const std::uint32_t zword = std::uint32_t(qzeros[g * s.words_per_row + n / 8]);
  const std::uint32_t zero = (zword >> (4 * nibble_of_column(int(n % 8)))) & 0xFu;
  return std::uint32_t(scales[g * s.n_out + n]) | (0x6400u + zero) << 16;
}
// Its index in the meta buffer.
KBIT_AWQ_HOST_DEVICE inline std::int64_t meta_index(const AwqTileShape& s, std::int64_t mt,
                                                    std::int64_t nt, int m) {
  return (mt * s.n_tiles + nt) * s.meta_words_per_tile + m;
}

}  // namespace awq_map
}  // namespace kbit::gpu
