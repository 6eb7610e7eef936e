// The AWQ repack as a weight format of variant 03's mainloop (mainloop.cuh's F): 128 x 64 tiles of
// 4-bit q in the order the consumers decode them, and per meta tile the columns' fp16 scale and
// 1024 + zero (reference/awq.hpp awq_tile, docs/awq_format.md "The tiled layout"). A consumer
// thread's k-tile is one LDS.128 of nibbles; each 32-bit word becomes the 4 A registers of one
// k16 step with no table: 4-bit -> fp16 by the exponent trick, then (q - z) * s in fp16, which
// is the reference's dequantized weight bit for bit.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "reference/awq_layout.hpp"
#include "variants/03_warp_specialized/mainloop.cuh"
#include "variants/common/bulk_copy.cuh"

namespace kbit::variants::awq {

struct AwqWeights {
  static constexpr int kTableBytes = 0;        // nothing to look up
  static constexpr bool kTwoBlocksPerSm = true;  // no table: two blocks fit at 16, 32 tokens
  // Half the barrier waits a weight at 16, 32 tokens (F-038).
  static constexpr bool kTwoTilesAtTwoBlocks = true;
  static constexpr int kWeightBytes = kAwqTileWords * 4;  // 4096: 128 x 64 nibbles
  static constexpr int kScaleBytes = 2 * kAwqTileN * 4;   // two groups of 32 at most per k-tile
  static_assert(kAwqTileN == ws::Config::kTileN && kAwqTileK == ws::Config::kTileK,
                "the repack's tiles are the mainloop's");

  // A meta tile spans max(G, 64) k: a k-tile reads meta tile kt * 64 / span, one group (512 B) or
  // two groups of 32 (1024 B). A group of 128 is copied again for its second k-tile (an L2 hit).
  __device__ static uint32_t k_tile_bytes(const ws::MainloopArgs& a) {
    return kWeightBytes + (a.group == 32 ? 2 : 1) * kAwqTileN * 4;
  }
  __device__ static void copy_k_tile(uint32_t w, uint32_t s, const ws::MainloopArgs& a,
                                     const ws::TileInfo& tile, int kt, uint32_t bar) {
    const long long t = (long long)kt * a.n_tiles + tile.nt;
    dev::bulk_copy_g2s(w, tile.weights + t * kWeightBytes, kWeightBytes, bar);
    const int meta_bytes = (a.group == 32 ? 2 : 1) * kAwqTileN * 4;
    const long long mt = a.group > 64 ? kt / (a.group / 64) : kt;
    dev::bulk_copy_g2s(s, tile.scales + (mt * a.n_tiles + tile.nt) * meta_bytes,
                       uint32_t(meta_bytes), bar);
  }

  template <typename T>
  struct Decoder {
    static_assert(std::is_same_v<T, __half>, "AWQ scales are fp16: fp16 activations only");
    int thread;    // the consumer thread: its 16 bytes of each weight tile
    int second;    // k16 steps 2, 3 read the second group (G = 32), else the first again
    __device__ Decoder(const ws::MainloopArgs& a, int) : thread(int(threadIdx.x)),
                                                         second(a.group == 32 ? kAwqTileN : 0) {}
    __device__ static void build_table(unsigned char*, const float*, int) {}

    // (w & 0x000F000F) | 0x64006400 in one LOP3: nibbles p and p + 4 of w >> 4p become the
    // fp16 values 1024 + q of the pair (k, k + 1).
    __device__ static __forceinline__ uint32_t pair_1024(uint32_t w) {
      uint32_t d;
      asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(w), "n"(0x000F000F), "n"(0x64006400));
      return d;
    }
    __device__ static __forceinline__ uint32_t prmt(uint32_t x, uint32_t sel) {
      uint32_t d;
      asm("prmt.b32 %0, %1, %1, %2;" : "=r"(d) : "r"(x), "r"(sel));
      return d;
    }
    // (1024 + q) - (1024 + z) is exact; times the fp16 scale, one rounding: the reference's
    // round_to(fp16, float(q - z) * s).
    __device__ static __forceinline__ uint32_t dequant(uint32_t q1024, uint32_t z1024,
                                                       uint32_t s2) {
      const __half2 d = __hmul2(__hsub2(*reinterpret_cast<const __half2*>(&q1024),
                                        *reinterpret_cast<const __half2*>(&z1024)),
                                *reinterpret_cast<const __half2*>(&s2));
      return *reinterpret_cast<const uint32_t*>(&d);
    }

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
          s2[g][rr] = prmt(m, 0x1010);
          z2[g][rr] = prmt(m, 0x3232);
        }
      const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int p = 0; p < 4; ++p)
          f[4 * i + p] = dequant(pair_1024(words[i] >> (4 * p)), z2[i / 2][p & 1], s2[i / 2][p & 1]);
    }
  };
};

}  // namespace kbit::variants::awq
