// The AWQ repack as a weight format of the shared Hopper mainloop (variants/hopper/config.cuh's F):
// 128 x 64 tiles of 4-bit q in the order the consumers decode them, and per meta tile the columns'
// fp16 scale and 1024 + zero (reference/awq.hpp awq_tile, docs/awq_format.md "The tiled layout"). A
// consumer thread's k-tile is one LDS.128 of nibbles; each 32-bit word becomes the 4 A registers of
// one k16 step with no table: 4-bit -> fp16 by the exponent trick, then (q - z) * s in fp16, which
// is the reference's dequantized weight bit for bit.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "reference/awq_layout.hpp"
#include "variants/common/awq_decode.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/hopper/config.cuh"

namespace kbit::variants::awq {

struct AwqWeights {
  static constexpr int kTableBytes = 0;          // nothing to look up
  static constexpr bool kTwoBlocksPerSm = true;  // no table: two blocks fit at 16, 32 tokens
  // Half the barrier waits a weight at 16, 32 tokens (F-038).
  static constexpr bool kTwoTilesAtTwoBlocks = true;
  static constexpr int kWeightBytes = kAwqTileWords * 4;  // 4096: 128 x 64 nibbles
  static constexpr int kScaleBytes = 2 * kAwqTileN * 4;   // two groups of 32 at most per k-tile
  static_assert(kAwqTileN == ws::Config::kTileN && kAwqTileK == ws::Config::kTileK,
                "the repack's tiles are the mainloop's");

  // A meta tile spans max(G, 64) k: a k-tile reads meta tile kt * 64 / span, one group (512 B) or
  // two groups of 32 (1024 B). A group of 128 is copied again for its second k-tile (an L2 hit).
  __device__ static int meta_bytes(const ws::MainloopArgs& a) {
    return awq_meta_tile_k(a.group) / a.group * kAwqTileN * 4;
  }
  __device__ static uint32_t k_tile_bytes(const ws::MainloopArgs& a) {
    return kWeightBytes + meta_bytes(a);
  }
  __device__ static void copy_k_tile(uint32_t w, uint32_t s, const ws::MainloopArgs& a,
                                     const ws::TileInfo& tile, int kt, uint32_t bar) {
    const long long t = (long long)kt * a.n_tiles + tile.nt;
    dev::bulk_copy_g2s(w, tile.weights + t * kWeightBytes, kWeightBytes, bar);
    const long long mt = (long long)kt * kAwqTileK / awq_meta_tile_k(a.group);
    dev::bulk_copy_g2s(s, tile.scales + (mt * a.n_tiles + tile.nt) * meta_bytes(a),
                       uint32_t(meta_bytes(a)), bar);
  }

  template <typename T>
  struct Decoder {
    static_assert(std::is_same_v<T, __half>, "AWQ scales are fp16: fp16 activations only");
    // The consumer thread (the mainloop's consumers are threads 0..255, the repack's order): its
    // 16 bytes of each weight tile.
    int thread;
    int second;  // k16 steps 2, 3 read the second group (G = 32), else the first again
    __device__ Decoder(const ws::MainloopArgs& a, int)
        : thread(int(threadIdx.x)), second(a.group == 32 ? kAwqTileN : 0) {}
    __device__ static void build_table(unsigned char*, const float*, int) {}

    __device__ __forceinline__ void decode(const unsigned char*, const unsigned char* w,
                                           const unsigned char* s, int row0,
                                           uint32_t (&f)[16]) const {
      const uint4 q = *reinterpret_cast<const uint4*>(w + thread * 16);
      const uint32_t* meta = reinterpret_cast<const uint32_t*>(s);
      // The meta words of rows row0, row0 + 8 for k16 steps 0, 1 (g = 0) and 2, 3 (g = 1):
      // scale in the low half, 1024 + zero in the high half; both halves broadcast by PRMT.
      uint32_t s2[2][2], z2[2][2];
#pragma unroll
      for (int g = 0; g < 2; ++g)
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
          const uint32_t m = meta[g * second + row0 + 8 * rr];
          s2[g][rr] = dev::awq::low_twice(m);
          z2[g][rr] = dev::awq::high_twice(m);
        }
      const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const __half2 w2 = dev::awq::dequant_pair(dev::awq::pair_1024(words[i] >> (4 * p)),
                                                    z2[i / 2][p & 1], s2[i / 2][p & 1]);
          f[4 * i + p] = *reinterpret_cast<const uint32_t*>(&w2);
        }
    }
  };
};

}  // namespace kbit::variants::awq
