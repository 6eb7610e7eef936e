// The fragment-order layout (docs/format.md, "Fragment-order layout"): the tiled layout's
// 64 x 128 tiles at K = 2..5 with the bits of each tile permuted so that a consumer thread
// of the mainloop (variants/hopper/mainloop.cuh: thread t = 32 w + 4 g + c, lane = t mod 32,
// holds weight rows r0 = 16 w + g and r0 + 8 of the tile, element pairs 8Q + 2c, 8Q + 2c + 1 of
// each block) reads its whole k-tile in one or two loads and its four E4M4 codes as one 32-bit
// word, with each pair's two K-bit indices already interleaved (the pair table's row).
//
// The thread's four (row, block) pairs are i = 2 rr + kb (rr: row r0 + 8 rr, kb: block kb of
// the k-tile). Pair Q of (row, block) i holds elements e = 8Q + 2c + s (s = 0, 1); its
// interleaved code has bit 2p + s = plane p of element s. Code bit 2p + s of pair (i, Q) sits:
//   K = 4: word 4t + i, bit 8Q + 2p + s (byte Q of word i of the thread's 16-byte word).
//   K = 2: word 2t + (i & 1), bit 8Q + 4 (i >> 1) + 2p + s (the thread's 8 bytes: byte Q of
//          word kb holds block kb's pair Q of row r0 in its low nibble, of row r0 + 8 in its
//          high nibble: one quad-table entry, the two registers a0, a1 or a2, a3 of an MMA).
//   K = 3: the tile is 8 chunks of 96 words, chunk w = words 96w .. 96w + 95; the thread's words
//          j = 0, 1, 2 are 96w + 2 lane, 96w + 2 lane + 1 and 96w + 64 + lane. For i < 3: word
//          j = i, bit 8Q + 2p + s (bits 0..5 of byte Q); for i = 3: word j = p, bit 8Q + 6 + s
//          (bits 6, 7 of byte Q of the three words hold pair (3, Q)'s code 2 bits at a time).
//   K = 5: the tile is 8 chunks of 160 words, chunk w = words 160w .. 160w + 159. Planes 0..3 as
//          at K = 4 inside the chunk: word 160w + 4 lane + i, bit 8Q + 2p + s (one 16-byte load).
//          Plane 4 in the thread's fifth word 160w + 128 + lane (one 4-byte load), bit
//            Q < 2:  s = 0: 16 + 8Q + 2i,  s = 1: 7 + 8Q + 2i,
//            Q >= 2: s = 0: 8(Q - 2) + 2i, s = 1: (23 + 8(Q - 2) + 2i) mod 32,
//          so that the fifth word rotated right by 2i, one LOP3 (mask 0x01018080 for Q = 0, 1,
//          0x80800101 for Q = 2, 3, merged with the lane's column byte) and one PRMT with pair
//          byte Q of word i give the table address ha * 65536 + byte * 256 + hb * 128 + 4 lane
//          (ha, hb: plane 4 of element s = 0, 1). The 32 bits are distinct.
// Byte 4(8w + g) + i of the tile's code bytes is the block's E4M4 code, for every K. Same sizes
// as the tiled layout (K words and one byte per block).
#pragma once
#include <cstdint>

#include "reference/tiled.hpp"

namespace kbit {

struct FragmentTile {
  static constexpr int kTileK = 64, kTileN = 128;
  static constexpr int kMinBits = 2, kMaxBits = 5;
  static constexpr int kCodes = kTileN * (kTileK / 32);  // 256 code bytes, every K
};

// Words of one fragment tile: 256 K (the tiled tile's [128 rows][2 blocks][K planes]).
constexpr int fragment_tile_words(int k_bits) {
  return FragmentTile::kTileN * (FragmentTile::kTileK / 32) * k_bits;
}

// Where plane `plane` of element (row r, k kk) of a tile lands at width k_bits: word, bit in it,
// and the byte of its block's code. Throws unless k_bits is 2..5, r < 128, kk < 64 and
// plane < k_bits.
struct FragmentPos {
  int word, bit, code_byte;
};
FragmentPos fragment_pos(int k_bits, int r, int kk, int plane);

// One tile at width k_bits (2..5; throws otherwise): tiled words [128][2][K] and codes [128][2]
// to the fragment order, and back. fragment_tile_words(k_bits) words, 256 code bytes.
void fragment_tile(int k_bits, const std::uint32_t* tiled, const std::uint8_t* codes,
                   std::uint32_t* out, std::uint8_t* out_codes);
void unfragment_tile(int k_bits, const std::uint32_t* frag, const std::uint8_t* codes,
                     std::uint32_t* out, std::uint8_t* out_codes);

// A whole tiled weight (K = 2..5, tiles 64 x 128; throws otherwise), tile by tile.
TiledWeight fragment_order(const TiledWeight& tiled);
TiledWeight fragment_unorder(const TiledWeight& frag);

}  // namespace kbit
