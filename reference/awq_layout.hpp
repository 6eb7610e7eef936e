// The AWQ tiled repack's geometry (docs/awq_format.md, "The tiled layout"): the constants the
// reference (awq.hpp awq_tile) and the GPU kernel that reads it (variants/06_awq) share. No
// other includes, so that device code can take it.
#pragma once

#ifdef __CUDACC__
#define KBIT_AWQ_HOST_DEVICE __host__ __device__
#else
#define KBIT_AWQ_HOST_DEVICE
#endif

namespace kbit {

inline constexpr int kAwqTileN = 128, kAwqTileK = 64;  // output columns x k of one tile
inline constexpr int kAwqTileWords = 1024;             // 256 threads x 4 words of 8 nibbles
// k of one meta tile: a group, or the 64 k of one k-tile where two groups of 32 share it. Device
// code calls it too (variants/06_awq), hence the qualifiers under nvcc.
KBIT_AWQ_HOST_DEVICE inline constexpr int awq_meta_tile_k(int group) {
  return group > kAwqTileK ? group : kAwqTileK;
}

}  // namespace kbit
