// The fragment-order layout (reference/fragment.hpp, docs/format.md "Fragment-order layout") as
// a weight format of the shared mainloop (variants/03_warp_specialized/mainloop.cuh's F), K = 4.
// A consumer thread's k-tile is one 16-byte load of four words whose bytes are its pairs'
// interleaved codes, and one 32-bit load of its four E4M4 codes: the plane merge of the tiled
// layout's decode (2K + 1 instructions a block-row, about 1 a weight) is done once by the repack.
#pragma once
#include <cstdint>

#include "variants/03_warp_specialized/fragment_lut.cuh"
#include "variants/03_warp_specialized/mainloop.cuh"
#include "variants/common/bulk_copy.cuh"

namespace kbit::variants::fragment {

// kTwoTiles: 2 k-tiles a stage also at two blocks per SM (8..32 tokens), which halves the
// per-stage instructions a weight (barrier waits, the walk, the ldmatrix addresses) and leaves
// room for 3-4 stages beside the 64 KB table.
template <bool kTwoTiles>
struct FragmentWeightsT {
  using Table = dev::fragment_lut::Table<4>;
  static constexpr int kTableBytes = Table::kBytes;  // the pair table and the scales, 64 KB
  static constexpr bool kTwoBlocksPerSm = true;      // as KbitWeights<4>
  static constexpr bool kTwoTilesAtTwoBlocks = kTwoTiles;
  static constexpr int kWeightBytes = ws::Config::kTileN * ws::Config::kKbPerTile * 4 * 4;
  static constexpr int kScaleBytes = ws::Config::kCodeBytes;

  __device__ static uint32_t k_tile_bytes(const ws::MainloopArgs&) {
    return kWeightBytes + kScaleBytes;
  }
  __device__ static void copy_k_tile(uint32_t w, uint32_t s, const ws::MainloopArgs& a,
                                     const ws::TileInfo& tile, int kt, uint32_t bar) {
    const long long t = (long long)kt * a.n_tiles + tile.nt;
    dev::bulk_copy_g2s(w, tile.weights + t * kWeightBytes, kWeightBytes, bar);
    dev::bulk_copy_g2s(s, tile.scales + t * kScaleBytes, kScaleBytes, bar);
  }

  template <typename T>
  struct Decoder {
    dev::fragment_lut::Decoder<4, T> dec;
    uint32_t words_at, codes_at;  // this thread's 16 bytes of a weight tile, 4 of a code tile
    __device__ Decoder(const ws::MainloopArgs&, int lane)
        : dec(lane),
          words_at(uint32_t(threadIdx.x) * 16),
          codes_at((uint32_t(threadIdx.x) >> 2) * 4) {}
    __device__ static void build_table(unsigned char* smem, const float* cb, int tid) {
      dev::fragment_lut::build<4, T>(smem, cb, tid, ws::Config::kConsumers);
    }
    // Word 2rr + kb: rows row0 + 8 rr, block kb; k16 step 2kb + h takes pairs 2h and 2h + 1.
    __device__ __forceinline__ void decode(const unsigned char* smem, const unsigned char* w,
                                           const unsigned char* s, int, uint32_t (&f)[16]) const {
      const uint4 v = *reinterpret_cast<const uint4*>(w + words_at);
      const uint32_t codes = *reinterpret_cast<const uint32_t*>(s + codes_at);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int rr = i >> 1, kb = i & 1;
        uint32_t out[4];
        const uint32_t scale2 = i == 0   ? dec.template scale<0>(smem, codes)
                                : i == 1 ? dec.template scale<1>(smem, codes)
                                : i == 2 ? dec.template scale<2>(smem, codes)
                                         : dec.template scale<3>(smem, codes);
        dec.decode_codes(smem, words[i], scale2, out);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          f[(2 * kb + h) * 4 + rr] = out[2 * h];
          f[(2 * kb + h) * 4 + 2 + rr] = out[2 * h + 1];
        }
      }
    }
  };
};

using FragmentWeights = FragmentWeightsT<false>;

}  // namespace kbit::variants::fragment
