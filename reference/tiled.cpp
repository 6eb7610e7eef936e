#include "reference/tiled.hpp"

#include <string>

#include "reference/codebook.hpp"
#include "reference/e4m4.hpp"
#include "reference/error.hpp"

namespace kbit {

void check_tile_config(const TileConfig& t) {
  if (t.tile_k != 32 && t.tile_k != 64 && t.tile_k != 128) {
    throw Error("tile_k = " + std::to_string(t.tile_k) + " is not one of 32, 64, 128");
  }
  if (t.tile_n != 64 && t.tile_n != 128 && t.tile_n != 256) {
    throw Error("tile_n = " + std::to_string(t.tile_n) + " is not one of 64, 128, 256");
  }
}

void check_weight_shape(std::int64_t N, std::int64_t K_dim) {
  if (N < 1) throw Error("N = " + std::to_string(N) + " must be at least 1");
  if (K_dim < 32 || K_dim % 32 != 0) {
    throw Error("K_dim = " + std::to_string(K_dim) +
                " must be a positive multiple of 32 (each quantization block runs along K_dim)");
  }
}

std::int64_t TiledGeometry::block_index(std::int64_t n, std::int64_t k_block) const {
  const int kbt = kb_per_tile();
  const std::int64_t kt = k_block / kbt, kb = k_block % kbt;
  const std::int64_t nt = n / tiles.tile_n, col = n % tiles.tile_n;
  return ((kt * n_tiles() + nt) * tiles.tile_n + col) * kbt + kb;
}

TiledGeometry make_tiled_geometry(std::int64_t N, std::int64_t K_dim, int k_bits, TileConfig t) {
  check_k_bits(k_bits);
  check_tile_config(t);
  check_weight_shape(N, K_dim);
  TiledGeometry g;
  g.k_bits = k_bits;
  g.N = N;
  g.K_dim = K_dim;
  g.tiles = t;
  return g;
}

TiledWeight repack(const std::uint32_t* packed_flat, const std::uint8_t* absmax_flat,
                   std::int64_t N, std::int64_t K_dim, int k, TileConfig t) {
  TiledWeight w;
  w.geo = make_tiled_geometry(N, K_dim, k, t);
  w.packed.assign(std::size_t(w.geo.packed_words()), 0u);  // padding: zero words ...
  w.absmax.assign(std::size_t(w.geo.absmax_bytes()), 0u);  // ... and absmax 0x00
  const std::int64_t kblocks = K_dim / 32;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t kb = 0; kb < kblocks; ++kb) {
      const std::int64_t src = n * kblocks + kb, dst = w.geo.block_index(n, kb);
      for (int b = 0; b < k; ++b) w.packed[std::size_t(dst * k + b)] = packed_flat[src * k + b];
      w.absmax[std::size_t(dst)] = absmax_flat[src];
    }
  }
  return w;
}

void unrepack(const TiledWeight& w, std::uint32_t* packed_flat, std::uint8_t* absmax_flat) {
  const int k = w.geo.k_bits;
  const std::int64_t kblocks = w.geo.K_dim / 32;
  for (std::int64_t n = 0; n < w.geo.N; ++n) {
    for (std::int64_t kb = 0; kb < kblocks; ++kb) {
      const std::int64_t dst = n * kblocks + kb, src = w.geo.block_index(n, kb);
      for (int b = 0; b < k; ++b) packed_flat[dst * k + b] = w.packed[std::size_t(src * k + b)];
      absmax_flat[dst] = w.absmax[std::size_t(src)];
    }
  }
}

std::vector<float> dequantize_tiled(const TiledWeight& w, const std::vector<float>& cb) {
  const auto& g = w.geo;
  validate_codebook(cb, g.k_bits);
  std::vector<float> out(std::size_t(g.N * g.K_dim));
  const std::int64_t kblocks = g.K_dim / 32;
#pragma omp parallel for schedule(static)
  for (std::int64_t n = 0; n < g.N; ++n) {
    for (std::int64_t kb = 0; kb < kblocks; ++kb) {
      const std::int64_t blk = g.block_index(n, kb);
      const float scale = e4m4_decode(w.absmax[std::size_t(blk)]);
      for (int j = 0; j < 32; ++j) {
        std::uint32_t idx = 0;
        for (int b = 0; b < g.k_bits; ++b)
          idx |= ((w.packed[std::size_t(blk * g.k_bits + b)] >> j) & 1u) << b;
        out[std::size_t(n * g.K_dim + kb * 32 + j)] = cb[idx] * scale;
      }
    }
  }
  return out;
}

}  // namespace kbit
