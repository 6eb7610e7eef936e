// The fragment-order layout (docs/format.md, "Fragment-order layout"): the tiled layout's
// 64 x 128 tiles at K = 4 with the bits of each tile permuted so that a consumer thread of the
// mainloop (variants/hopper/mainloop.cuh: thread t = 32 w + 4 g + c holds weight
// rows r0 = 16 w + g and r0 + 8 of the tile, element pairs 8Q + 2c, 8Q + 2c + 1 of each block)
// reads its whole k-tile as one 16-byte word and its four E4M4 codes as one 32-bit word, with
// each pair's two 4-bit indices already interleaved into one byte (the pair table's row).
//
// Word 4t + 2rr + kb of a tile (rr: row r0 + 8 rr, kb: block kb of the k-tile) holds in byte Q
// the pair (8Q + 2c, 8Q + 2c + 1) of that block: bit 2p = plane p of the first element, bit
// 2p + 1 = plane p of the second. Byte 4(8w + g) + 2rr + kb of the tile's code bytes is the
// block's E4M4 code. Same sizes as the tiled layout (K words and one byte per block).
#pragma once
#include <cstdint>

#include "reference/tiled.hpp"

namespace kbit {

struct FragmentTile {
  static constexpr int kTileK = 64, kTileN = 128, kBits = 4;
  static constexpr int kWords = kTileN * (kTileK / 32) * kBits;  // 1024
  static constexpr int kCodes = kTileN * (kTileK / 32);          // 256
};

// Where element (row r, k kk) of a tile lands: word, bit in it (plane 0's; plane p is + 2p),
// and the byte of its block's code.
struct FragmentPos {
  int word, bit, code_byte;
};
FragmentPos fragment_pos(int r, int kk);

// One tile: tiled words [128][2][4] and codes [128][2] to the fragment order, and back.
void fragment_tile(const std::uint32_t* tiled, const std::uint8_t* codes, std::uint32_t* out,
                   std::uint8_t* out_codes);
void unfragment_tile(const std::uint32_t* frag, const std::uint8_t* codes, std::uint32_t* out,
                     std::uint8_t* out_codes);

// A whole tiled weight (K = 4, tiles 64 x 128; throws otherwise), tile by tile.
TiledWeight fragment_order(const TiledWeight& tiled);
TiledWeight fragment_unorder(const TiledWeight& frag);

}  // namespace kbit
