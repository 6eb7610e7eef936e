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

void fragment_tile(const std::uint32_t* tiled, const std::uint8_t* codes, std::uint32_t* out,
                   std::uint8_t* out_codes) {
  constexpr int K = FragmentTile::kBits;
  for (int i = 0; i < FragmentTile::kWords; ++i) out[i] = 0;
  for (int r = 0; r < FragmentTile::kTileN; ++r) {
    for (int kk = 0; kk < FragmentTile::kTileK; ++kk) {
      const int kb = kk / 32, e = kk % 32;
      const FragmentPos p = fragment_pos(r, kk);
      for (int b = 0; b < K; ++b) {
        const std::uint32_t bit = (tiled[(r * 2 + kb) * K + b] >> e) & 1u;
        out[p.word] |= bit << (p.bit + 2 * b);
      }
      if (e == 0) out_codes[p.code_byte] = codes[r * 2 + kb];
    }
  }
}

void unfragment_tile(const std::uint32_t* frag, const std::uint8_t* codes, std::uint32_t* out,
                     std::uint8_t* out_codes) {
  constexpr int K = FragmentTile::kBits;
  for (int i = 0; i < FragmentTile::kWords; ++i) out[i] = 0;
  for (int r = 0; r < FragmentTile::kTileN; ++r) {
    for (int kk = 0; kk < FragmentTile::kTileK; ++kk) {
      const int kb = kk / 32, e = kk % 32;
      const FragmentPos p = fragment_pos(r, kk);
      for (int b = 0; b < K; ++b) {
        const std::uint32_t bit = (frag[p.word] >> (p.bit + 2 * b)) & 1u;
        out[(r * 2 + kb) * K + b] |= bit << e;
      }
      if (e == 0) out_codes[r * 2 + kb] = codes[p.code_byte];
    }
  }
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
