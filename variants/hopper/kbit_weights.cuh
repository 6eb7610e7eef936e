// The kbit tiled layout (docs/format.md) as a weight format of the shared mainloop
// (mainloop.cuh's F, the contract in config.cuh): K bit planes and one E4M4 code per block of 32,
// decoded through the fragment table (fragment_lut.cuh). Variants 03 and 05 run it; variant 07's
// fragment-order layout reuses its tiles and copies with a decode of its own (and its table at
// K = 3, 4; K = 2 has a quad table, K = 5 a table of its own). kernel_for maps a runtime K to its
// kernel.
#pragma once
#include <cstdint>

#include "variants/common/bulk_copy.cuh"
#include "variants/common/dispatch.hpp"
#include "variants/common/load.cuh"
#include "variants/hopper/config.cuh"
#include "variants/hopper/fragment_lut.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants::ws {

// The kbit tiled layout (docs/format.md): K bit planes and one E4M4 code per block of 32, decoded
// through the fragment table (fragment_lut.cuh).
template <int K>
struct KbitWeights {
  using Table = dev::fragment_lut::Table<K>;
  static constexpr int kTableBytes = Table::kBytes;
  static constexpr bool kTwoBlocksPerSm = K <= 4;      // K = 5: a 128 KB table
  static constexpr bool kTwoTilesAtTwoBlocks = false;  // F-033: 1 measured faster there
  static constexpr int kWeightBytes = Config::kTileN * Config::kKbPerTile * K * 4;
  static constexpr int kScaleBytes = Config::kCodeBytes;

  __device__ static uint32_t k_tile_bytes(const MainloopArgs&) {
    return kWeightBytes + kScaleBytes;
  }
  __device__ static void copy_k_tile(uint32_t w, uint32_t s, const MainloopArgs& a,
                                     const TileInfo& tile, int kt, uint32_t bar) {
    const long long t = (long long)kt * a.n_tiles + tile.nt;
    dev::bulk_copy_g2s(w, tile.weights + t * kWeightBytes, kWeightBytes, bar);
    dev::bulk_copy_g2s(s, tile.scales + t * kScaleBytes, kScaleBytes, bar);
  }

  template <typename T>
  struct Decoder {
    dev::fragment_lut::Decoder<K, T> dec;
    __device__ Decoder(const MainloopArgs&, int lane) : dec(lane) {}
    __device__ static void build_table(unsigned char* smem, const float* cb, int tid) {
      dev::fragment_lut::build<K, T>(smem, cb, tid, Config::kConsumers);
    }
    // Rows row0 and row0 + 8, blocks kb = 0, 1; k16 step 2kb + h takes pairs Q = 2h (k 2c..)
    // and 2h + 1 (k 2c + 8 ..).
    __device__ __forceinline__ void decode(const unsigned char* smem, const unsigned char* w,
                                           const unsigned char* s, int row0,
                                           uint32_t (&f)[16]) const {
      const uint32_t* planes = reinterpret_cast<const uint32_t*>(w);
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int r = row0 + 8 * rr;
        const uint32_t code2 = *reinterpret_cast<const uint16_t*>(s + r * 2);
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          uint32_t p[K], out[4];
          dev::load_planes<K>(planes + (r * 2 + kb) * K, p);
          const uint32_t scale2 =
              kb == 0 ? dec.template scale<0>(smem, code2) : dec.template scale<1>(smem, code2);
          dec.decode(smem, p, scale2, out);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            f[(2 * kb + h) * 4 + rr] = out[2 * h];
            f[(2 * kb + h) * 4 + 2 + rr] = out[2 * h + 1];
          }
        }
      }
    }
  };
};

// The kbit kernel of K = k.
template <typename T, typename P, bool kMmaOption = false>
Kernel kernel_for(int k, int tt, const char* who, std::int64_t mma_option = 0) {
  return with_k_bits(k, [&](auto k_const) {
    return kernel_of<KbitWeights<decltype(k_const)::value>, T, P, kMmaOption>(tt, who, mma_option);
  });
}

}  // namespace kbit::variants::ws
