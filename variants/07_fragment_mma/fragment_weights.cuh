// The fragment-order layout (reference/fragment.hpp, docs/format.md "Fragment-order layout") as
// a weight format of the shared mainloop (variants/hopper/config.cuh's F), K = 4.
// A consumer thread's k-tile is one 16-byte load of four words whose bytes are its pairs'
// interleaved codes, and one 32-bit load of its four E4M4 codes: the plane merge of the tiled
// layout's decode (2K + 1 instructions a block-row, about 1 a weight) is done once by the repack.
#pragma once
#include <cstdint>
#include <type_traits>

#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/hopper/kbit_weights.cuh"

namespace kbit::variants::fragment {

// kTwoTiles: 2 k-tiles a stage also at two blocks per SM (8..32 tokens), which halves the
// per-stage instructions a weight (barrier waits, the walk, the ldmatrix addresses) and leaves
// room for 3-4 stages beside the 64 KB table. The tiles' sizes, their copies and the table are
// the tiled layout's at K = 4 (ws::KbitWeights<4>); only the decode differs.
// The tiled layout's K = 4 decoder: its table, its pair lookups and scales.
template <typename T>
using KbitDecoder = ws::KbitWeights<4>::Decoder<T>;

// On the own kernel (pipelines.cuh) a format also gives: kZeroRing (stale tiles may decode to
// Inf or NaN: the rings start zeroed), kSyncMaxTokens (the largest token tile its row may run on
// mma.sync: the rest are not compiled), a decode_unscaled (the mma.sync kernel's scale after
// the MMA, kUnscaledFactor), kRowBlockWeightBytes / kRowBlockScaleBytes (from one
// 16-row block's bytes of a k-tile to the next), build_own_table (the table at its
// shared-window address) and a Decoder<T>(a, lane, tid) whose decode takes stage addresses.
template <bool kTwoTiles>
struct FragmentWeightsT : ws::KbitWeights<4> {
  static constexpr bool kTwoTilesAtTwoBlocks = kTwoTiles;
  static constexpr float kUnscaledFactor = 16.f;    // decode_unscaled's scales: E4M4 value / 16
  static constexpr bool kZeroRing = false;          // stale codes index the table: finite
  static constexpr int kSyncMaxTokens = 64;         // mma.sync kernels to 64 tokens (option mma)
  static constexpr int kRowBlockWeightBytes = 512;  // 32 threads x 16 bytes
  static constexpr int kRowBlockScaleBytes = 32;    // 16 rows x 2 codes
  template <typename T>
  static __device__ void build_own_table(uint32_t base, const float* cb, int tid, int nthreads) {
    dev::fragment_lut::build<4, T>(base, cb, tid, nthreads);
  }

  template <typename T>
  struct Decoder : KbitDecoder<T> {
    uint32_t words_at, codes_at;  // this thread's 16 bytes of a weight tile, 4 of a code tile
    __device__ Decoder(const ws::MainloopArgs& a, int lane) : Decoder(a, lane, int(threadIdx.x)) {}
    // tid: the thread's index among its tile's 256 consumers (the layout's t = 32 w + 4 g + c).
    __device__ Decoder(const ws::MainloopArgs& a, int lane, int tid)
        : KbitDecoder<T>(a, lane),
          words_at(uint32_t(tid) * 16),
          codes_at((uint32_t(tid) >> 2) * 4) {}
    // Word 2rr + kb: rows row0 + 8 rr, block kb; k16 step 2kb + h takes pairs 2h and 2h + 1.
    // Lut: the table as a generic pointer or its shared-window address (fragment_lut's lds).
    // Ptr: the stage's tiles the same way (generic pointers or shared-window addresses).
    template <typename Lut, typename Ptr>
    __device__ __forceinline__ void decode(Lut smem, Ptr w, Ptr s, int, uint32_t (&f)[16]) const {
      const uint4 v = dev::smem::load128(w, words_at);
      const uint32_t codes = dev::smem::load32(s, codes_at);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
      const auto& dec = this->dec;
      if constexpr (std::is_same_v<T, __half>) {
        // fp16: the scales by arithmetic, not from the table's scale half: a shift and a mask put
        // codes kb and 2 + kb where an fp16 pair reads them as the E4M4 value / 16 (exact,
        // subnormal codes included) and one HMUL2 by 16 makes them the values (exact); each
        // pair's HMUL2 takes its row's half as a broadcast operand (.H0_H0 / .H1_H1). 6
        // instructions for 4 scales where PRMT + LDS a scale took 8, 4 of them table loads.
        // (__half2 here, not dev::mul2's words: a word's broadcast stays a PRMT, +8 a k-tile.)
        const __half2 sixteen = __float2half2_rn(16.f);
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          const uint32_t div16 = dev::decode_e4m4_pair_div16(codes, kb != 0);
          const __half2 sc = __hmul2(*reinterpret_cast<const __half2*>(&div16), sixteen);
#pragma unroll
          for (int rr = 0; rr < 2; ++rr) {
            const __half2 scale2 = rr == 0 ? __low2half2(sc) : __high2half2(sc);
            uint32_t out[4];
            dec.pairs(smem, words[2 * rr + kb], out);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const __half2 p = __hmul2(*reinterpret_cast<const __half2*>(&out[q]), scale2);
              out[q] = *reinterpret_cast<const uint32_t*>(&p);
            }
            place(out, rr, kb, f);
          }
        }
      } else {
        // bf16: the scales from the table's scale half (PRMT + LDS a scale).
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int rr = i >> 1, kb = i & 1;
          uint32_t out[4];
          const uint32_t scale2 = i == 0   ? dec.template scale<0>(smem, codes)
                                  : i == 1 ? dec.template scale<1>(smem, codes)
                                  : i == 2 ? dec.template scale<2>(smem, codes)
                                           : dec.template scale<3>(smem, codes);
          dec.decode_codes(smem, words[i], scale2, out);
          place(out, rr, kb, f);
        }
      }
    }
    // The same with the pairs unscaled and the scales apart, as fp32 divided by
    // kUnscaledFactor: scale[2 rr + kb] is block kb's scale (/ 16) of row row0 + 8 rr, for a
    // kernel that multiplies block by block, scales the products (one FFMA an accumulator a block)
    // and multiplies its sums by 16 once (exact: a power of two). The scales are decoded by
    // arithmetic, two codes a shift and a mask as fp16 (decode_e4m4_pair_div16) and one
    // conversion each, not looked up: the table's wavefronts were a bound of that kernel.
    template <typename Lut, typename Ptr>
    __device__ __forceinline__ void decode_unscaled(Lut smem, Ptr w, Ptr s, uint32_t (&f)[16],
                                                    float (&scale)[4]) const {
      const uint4 v = dev::smem::load128(w, words_at);
      const uint32_t codes = dev::smem::load32(s, codes_at);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
      const auto& dec = this->dec;
#pragma unroll
      for (int odd = 0; odd < 2; ++odd) {
        const float2 pair = dev::unpack2<__half>(dev::decode_e4m4_pair_div16(codes, odd != 0));
        scale[odd] = pair.x;      // byte odd: row0, block odd
        scale[2 + odd] = pair.y;  // byte 2 + odd: row0 + 8, block odd
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t out[4];
        dec.pairs(smem, words[i], out);
        place(out, i >> 1, i & 1, f);
      }
    }
    // Pairs Q = 0..3 of row row0 + 8 rr, block kb into the A registers: k16 step 2 kb + h takes
    // pairs 2h (k 2c ..) and 2h + 1 (k 2c + 8 ..).
    static __device__ __forceinline__ void place(const uint32_t (&out)[4], int rr, int kb,
                                                 uint32_t (&f)[16]) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f[(2 * kb + h) * 4 + rr] = out[2 * h];
        f[(2 * kb + h) * 4 + 2 + rr] = out[2 * h + 1];
      }
    }
  };
};

using FragmentWeights = FragmentWeightsT<false>;

}  // namespace kbit::variants::fragment
