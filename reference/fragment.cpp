// The fragment-order layout: reference/fragment.hpp.
#include "reference/fragment.hpp"

#include <string>

#include "reference/error.hpp"

namespace kbit {

FragmentPos fragment_pos(int r, int kk) {
  const int w = r / 16, rr = (r % 16) / 8, g = r % 8;
  const int kb = kk / 32, e = kk % 32;
  const int q = e / 8, c = (e % 8) / 2, s = e % 2;
  const int t = 32 * w + 4 * g + c;
  return {4 * t + 2 * rr + kb, 8 * q + s, 4 * (8 * w + g) + 2 * rr + kb};
}

namespace {

// Calls fn(tiled word, bit in it, fragment word, bit in it) for every bit of a tile's weights,
// and code(tiled code byte, fragment code byte) for every block.
template <typename Bit, typename Code>
void for_each_position(Bit&& fn, Code&& code) {
  constexpr int K = FragmentTile::kBits;
  for (int r = 0; r < FragmentTile::kTileN; ++r) {
    for (int kk = 0; kk < FragmentTile::kTileK; ++kk) {
      const int kb = kk / 32, e = kk % 32;
      const FragmentPos p = fragment_pos(r, kk);
      for (int b = 0; b < K; ++b) fn((r * 2 + kb) * K + b, e, p.word, p.bit + 2 * b);
      if (e == 0) code(r * 2 + kb, p.code_byte);
    }
  }
}

}  // namespace

void fragment_tile(const std::uint32_t* tiled, const std::uint8_t* codes, std::uint32_t* out,
                   std::uint8_t* out_codes) {
  for (int i = 0; i < FragmentTile::kWords; ++i) out[i] = 0;
  for_each_position(
      [&](int tw, int tb, int fw, int fb) { out[fw] |= ((tiled[tw] >> tb) & 1u) << fb; },
      [&](int tc, int fc) { out_codes[fc] = codes[tc]; });
}

void unfragment_tile(const std::uint32_t* frag, const std::uint8_t* codes, std::uint32_t* out,
                     std::uint8_t* out_codes) {
  for (int i = 0; i < FragmentTile::kWords; ++i) out[i] = 0;
  for_each_position(
      [&](int tw, int tb, int fw, int fb) { out[tw] |= ((frag[fw] >> fb) & 1u) << tb; },
      [&](int tc, int fc) { out_codes[tc] = codes[fc]; });
}

namespace {

void check_fragment_geometry(const TiledGeometry& g, const char* who) {
  if (g.k_bits != FragmentTile::kBits || g.tiles.tile_k != FragmentTile::kTileK ||
      g.tiles.tile_n != FragmentTile::kTileN)
    throw Error(std::string(who) +
                ": the fragment-order layout is K = 4 with 64 x 128 tiles, not K = " +
                std::to_string(g.k_bits) + " with " + std::to_string(g.tiles.tile_k) + " x " +
                std::to_string(g.tiles.tile_n));
}

template <typename Fn>
TiledWeight per_tile(const TiledWeight& in, Fn&& fn) {
  TiledWeight out;
  out.geo = in.geo;
  out.packed.resize(in.packed.size());
  out.absmax.resize(in.absmax.size());
  const std::int64_t tiles = in.geo.k_tiles() * in.geo.n_tiles();
  for (std::int64_t t = 0; t < tiles; ++t)
    fn(in.packed.data() + t * FragmentTile::kWords, in.absmax.data() + t * FragmentTile::kCodes,
       out.packed.data() + t * FragmentTile::kWords, out.absmax.data() + t * FragmentTile::kCodes);
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
