// The fragment-order layout: reference/fragment.hpp.
#include "reference/fragment.hpp"

#include <string>

#include "reference/error.hpp"

namespace kbit {

namespace {

bool fragment_width(int k_bits) {
  return k_bits >= FragmentTile::kMinBits && k_bits <= FragmentTile::kMaxBits;
}

void check_width(int k_bits, const char* who) {
  if (!fragment_width(k_bits))
    throw Error(std::string(who) +
                ": the fragment-order layout is K = 2..5, not K = " + std::to_string(k_bits));
}

}  // namespace

FragmentPos fragment_pos(int k_bits, int r, int kk, int plane) {
  check_width(k_bits, "fragment_pos");
  if (r < 0 || r >= FragmentTile::kTileN || kk < 0 || kk >= FragmentTile::kTileK || plane < 0 ||
      plane >= k_bits)
    throw Error("fragment_pos: row " + std::to_string(r) + ", k " + std::to_string(kk) +
                ", plane " + std::to_string(plane) +
                " is outside a 64 x 128 tile at K = " + std::to_string(k_bits));
  const int w = r / 16, rr = (r % 16) / 8, g = r % 8;
  const int kb = kk / 32, e = kk % 32;
  const int q = e / 8, c = (e % 8) / 2, s = e % 2;
  const int t = 32 * w + 4 * g + c, lane = t % 32, i = 2 * rr + kb;
  const int code_byte = 4 * (8 * w + g) + i;
  switch (k_bits) {
    case 2:
      return {2 * t + (i & 1), 8 * q + 4 * (i >> 1) + 2 * plane + s, code_byte};
    case 3: {
      // The thread's words j = 0, 1, 2 in its row block's 96-word chunk.
      const int j = i < 3 ? i : plane;
      const int word = 96 * w + (j < 2 ? 2 * lane + j : 64 + lane);
      return {word, i < 3 ? 8 * q + 2 * plane + s : 8 * q + 6 + s, code_byte};
    }
    case 5: {
      // Planes 0..3 as at K = 4 in the first 128 words of the row block's 160-word chunk; plane 4
      // in the chunk's last 32 words, at the bits the decoder's rotation by 2i lines up under
      // its LOP3 masks (fragment.hpp).
      if (plane < 4) return {160 * w + 4 * lane + i, 8 * q + 2 * plane + s, code_byte};
      const int bit = q < 2 ? (s == 0 ? 16 : 7) + 8 * q + 2 * i
                            : ((s == 0 ? 0 : 23) + 8 * (q - 2) + 2 * i) % 32;
      return {160 * w + 128 + lane, bit, code_byte};
    }
    default:
      return {4 * t + i, 8 * q + 2 * plane + s, code_byte};
  }
}

namespace {

// Calls fn(tiled word, bit in it, fragment word, bit in it) for every bit of a tile's weights,
// and code(tiled code byte, fragment code byte) for every block.
template <typename Bit, typename Code>
void for_each_position(int k_bits, Bit&& fn, Code&& code) {
  for (int r = 0; r < FragmentTile::kTileN; ++r) {
    for (int kk = 0; kk < FragmentTile::kTileK; ++kk) {
      const int kb = kk / 32, e = kk % 32;
      for (int p = 0; p < k_bits; ++p) {
        const FragmentPos f = fragment_pos(k_bits, r, kk, p);
        fn((r * 2 + kb) * k_bits + p, e, f.word, f.bit);
        if (e == 0 && p == 0) code(r * 2 + kb, f.code_byte);
      }
    }
  }
}

}  // namespace

void fragment_tile(int k_bits, const std::uint32_t* tiled, const std::uint8_t* codes,
                   std::uint32_t* out, std::uint8_t* out_codes) {
  check_width(k_bits, "fragment_tile");
  for (int i = 0; i < fragment_tile_words(k_bits); ++i) out[i] = 0;
  for_each_position(
      k_bits, [&](int tw, int tb, int fw, int fb) { out[fw] |= ((tiled[tw] >> tb) & 1u) << fb; },
      [&](int tc, int fc) { out_codes[fc] = codes[tc]; });
}

void unfragment_tile(int k_bits, const std::uint32_t* frag, const std::uint8_t* codes,
                     std::uint32_t* out, std::uint8_t* out_codes) {
  check_width(k_bits, "unfragment_tile");
  for (int i = 0; i < fragment_tile_words(k_bits); ++i) out[i] = 0;
  for_each_position(
      k_bits, [&](int tw, int tb, int fw, int fb) { out[tw] |= ((frag[fw] >> fb) & 1u) << tb; },
      [&](int tc, int fc) { out_codes[tc] = codes[fc]; });
}

namespace {

void check_fragment_geometry(const TiledGeometry& g, const char* who) {
  if (!fragment_width(g.k_bits) || g.tiles.tile_k != FragmentTile::kTileK ||
      g.tiles.tile_n != FragmentTile::kTileN)
    throw Error(std::string(who) +
                ": the fragment-order layout is K = 2..5 with 64 x 128 tiles, not K = " +
                std::to_string(g.k_bits) + " with " + std::to_string(g.tiles.tile_k) + " x " +
                std::to_string(g.tiles.tile_n));
}

template <typename Fn>
TiledWeight per_tile(const TiledWeight& in, Fn&& fn) {
  TiledWeight out;
  out.geo = in.geo;
  out.packed.resize(in.packed.size());
  out.absmax.resize(in.absmax.size());
  const int k_bits = in.geo.k_bits, words = fragment_tile_words(k_bits);
  const std::int64_t tiles = in.geo.k_tiles() * in.geo.n_tiles();
  for (std::int64_t t = 0; t < tiles; ++t)
    fn(k_bits, in.packed.data() + t * words, in.absmax.data() + t * FragmentTile::kCodes,
       out.packed.data() + t * words, out.absmax.data() + t * FragmentTile::kCodes);
  return out;
}

}  // namespace

TiledWeight fragment_order(const TiledWeight& tiled) {
  check_fragment_geometry(tiled.geo, "fragment_order");
  return per_tile(tiled, fragment_tile);
}

TiledWeight fragment_unorder(const TiledWeight& frag) {
  check_fragment_geometry(frag.geo, "fragment_unorder");
  return per_tile(frag, unfragment_tile);
}

}  // namespace kbit
