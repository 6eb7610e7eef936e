// The tiled layout the GEMM kernels read (docs/format.md, "Tiled layout"):
//   packed[k_tile][n_tile][col][k_block][bit]   (uint32 bit-plane words)
//   absmax[k_tile][n_tile][col][k_block]        (E4M4 bytes)
// for a weight W[N, K_dim] (nn.Linear layout), N padded up to tile_n and K_dim up to tile_k
// with zero words and absmax 0x00, so that padding dequantizes to exactly 0.
#pragma once
#include <cstdint>
#include <vector>

namespace kbit {

struct TileConfig {
  int tile_k = 64;   // 32, 64 or 128: multiple of the 32-element block
  int tile_n = 128;  // 64, 128 or 256
  bool operator==(const TileConfig& o) const { return tile_k == o.tile_k && tile_n == o.tile_n; }
};

// Throws unless tile_k is 32, 64 or 128 and tile_n is 64, 128 or 256.
void check_tile_config(const TileConfig& t);
// Throws unless N >= 1, K_dim >= 32 and K_dim % 32 == 0 (each block runs along K_dim).
void check_weight_shape(std::int64_t N, std::int64_t K_dim);

struct TiledGeometry {
  int k_bits = 0;
  std::int64_t N = 0, K_dim = 0;
  TileConfig tiles;
  std::int64_t n_tiles() const { return (N + tiles.tile_n - 1) / tiles.tile_n; }
  std::int64_t k_tiles() const { return (K_dim + tiles.tile_k - 1) / tiles.tile_k; }
  int kb_per_tile() const { return tiles.tile_k / 32; }
  std::int64_t tile_words() const { return std::int64_t(tiles.tile_n) * kb_per_tile() * k_bits; }
  std::int64_t tile_absmax_bytes() const { return std::int64_t(tiles.tile_n) * kb_per_tile(); }
  std::int64_t packed_words() const { return k_tiles() * n_tiles() * tile_words(); }
  std::int64_t absmax_bytes() const { return k_tiles() * n_tiles() * tile_absmax_bytes(); }
  // Index of the 32-element block (n, k_block) in tiled order (multiply by k_bits for words).
  std::int64_t block_index(std::int64_t n, std::int64_t k_block) const;
};

TiledGeometry make_tiled_geometry(std::int64_t N, std::int64_t K_dim, int k_bits, TileConfig t);

struct TiledWeight {
  TiledGeometry geo;
  std::vector<std::uint32_t> packed;
  std::vector<std::uint8_t> absmax;
};

// Flat (packed[block*K + b], block = n*(K_dim/32) + k/32) to tiled, and back.
TiledWeight repack(const std::uint32_t* packed_flat, const std::uint8_t* absmax_flat,
                   std::int64_t N, std::int64_t K_dim, int k_bits, TileConfig t);
void unrepack(const TiledWeight& w, std::uint32_t* packed_flat, std::uint8_t* absmax_flat);

// W[N, K_dim] in float32 (cb[idx] * e4m4 scale) straight from the tiled layout.
std::vector<float> dequantize_tiled(const TiledWeight& w, const std::vector<float>& codebook);

}  // namespace kbit
