// The fragment-order layout (reference/fragment.hpp, docs/format.md "Fragment-order layout") as
// a weight format of the shared mainloop (variants/hopper/config.cuh's F), K = 2..5.
// A consumer thread's k-tile is one 16-byte load of four words whose bytes are its pairs'
// interleaved codes (K = 4; K = 2: one 8-byte load of nibble codes, K = 3: an 8- and a 4-byte
// load of 6-bit codes; K = 5: K = 4's 16 bytes and a fifth word of plane-4 bits) and one 32-bit
// load of its four E4M4 codes: the plane merge of the tiled layout's decode (2K + 1 instructions
// a block-row, about 1 a weight) is done once by the repack.
#pragma once
#include <cstdint>
#include <type_traits>

#include "variants/common/bits.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/hopper/kbit_weights.cuh"

namespace kbit::variants::fragment {

// K: 2..5 bits a weight. kTwoTiles: 2 k-tiles a stage also at two blocks per SM (8..32
// tokens), which halves the per-stage instructions a weight (barrier waits, the walk, the
// ldmatrix addresses) and leaves room for 3-4 stages beside the 64 KB table (2-3 beside K = 5's
// 128 KB one). The tiles' sizes and
// their copies are the tiled layout's (ws::KbitWeights<K>). The table: at K = 3, 4 K = 4's pair
// table, its 256 rows at K = 3 repeating the 64 pair entries (fragment_lut::build's kRepeat), so
// that one PRMT of a code byte whose two high bits hold anything is a pair's address; at K = 2
// the quad table (kQuads below); at K = 5 the fifth-plane table (kFifthWord below, 128 KB).
// The tiled layout's K = 4 decoder: its pair lookups (one PRMT + LDS a pair) and scales.
template <typename T>
using KbitDecoder = ws::KbitWeights<4>::Decoder<T>;

// On the own kernel (pipelines.cuh) a format also gives: kZeroRing (never-filled scale tiles may
// decode to Inf or NaN: those a short k-step can leave stale start zeroed), kGroupScales (a scale
// spans a group of a.group k, not a block of 32: sync_kernel.cuh scales a k-step's products once
// where a group holds it), kSyncMaxTokens (the largest token tile its row may run on mma.sync: the
// rest are not compiled), a decode_unscaled (the mma.sync kernel's scale after the MMA,
// kUnscaledFactor), kRowBlockWeightBytes / kRowBlockScaleBytes (from one 16-row block's bytes of a
// k-tile to the next), build_own_table (the table at its shared-window address), kTilePairs
// (256-row tiles compiled) and a Decoder<T>(a, lane, tid) whose decode takes stage addresses.
template <int K, bool kTwoTiles>
struct FragmentWeightsT : ws::KbitWeights<K> {
  static_assert(K >= 2 && K <= 5, "the fragment-order layout: K = 2..5");
  static constexpr bool kTwoTilesAtTwoBlocks = kTwoTiles;
  static constexpr float kUnscaledFactor = 16.f;  // decode_unscaled's scales: E4M4 value / 16
  static constexpr bool kZeroRing = false;        // stale codes index the table: finite
  static constexpr bool kGroupScales = false;     // a scale a block of 32
  static constexpr int kSyncMaxTokens = 64;       // mma.sync kernels to 64 tokens (option mma)
  // 256-row tiles (two n-tiles, PipelineConfig's kTileRows): a thread's bytes of a k-tile are
  // at offsets linear in its index, so n-tile nt + 1's (adjacent in memory) are those of
  // threads 256..511.
  static constexpr bool kTilePairs = true;
  static constexpr int kRowBlockWeightBytes = 32 * 4 * K;  // 32 threads x K words
  static constexpr int kRowBlockScaleBytes = 32;           // 16 rows x 2 codes
  // K = 2: the quad table. Byte Q of word kb of a K = 2 thread holds two pairs' codes (block
  // kb's pair Q of row row0 in its low nibble, of row row0 + 8 in its high nibble), so row r
  // holds both pairs' weights, 8 bytes a lane (lane l's at 8 l, rows 256 bytes apart, 64 KB): one
  // PRMT and one LDS.64 give an MMA's registers a0, a1 (or a2, a3) as one aligned pair, where the
  // pair table takes two of each. No scale half: the scales come by arithmetic.
  static constexpr bool kQuads = K == 2;
  // K = 5: a thread's k-tile is K = 4's four pair words (planes 0..3: byte Q of word i is pair
  // Q's 8-bit code l8) and a fifth word of the 16 pairs' plane-4 bits (ha of element 0, hb of
  // element 1), placed so that the word rotated right by 2i and one LOP3 (mask 0x01018080 for
  // pairs 0, 1; 0x80800101 for 2, 3) merged with the lane's column bytes is a register whose
  // bytes beside the code byte form, by one PRMT, the address ha * 64 KB + l8 * 256 + hb * 128 +
  // 4 lane: per pair PRMT + LDS as at K = 4, plus 3 SHF, 8 LOP3 and the fifth word's LDS a k-tile
  // (12 for 32 weights, +0.375 a weight).
  // The table: 1024 rows of 128 bytes (32 lane copies of one pair), row (ha, l8, hb), 128 KB;
  // no scale half (the scales come by arithmetic).
  static constexpr bool kFifthWord = K == 5;
  template <typename T, typename Lut>
  static __device__ void build_table_at(Lut lut, const float* cb, int tid, int nthreads) {
    if constexpr (kFifthWord) {
      using dev::fragment_lut::first_index;
      using dev::fragment_lut::second_index;
      for (int e = tid; e < 1024; e += nthreads) {
        // Row e = ha * 512 + l8 * 2 + hb: variant 03's 10-bit code l8 | ha << 8 | hb << 9.
        const int code = ((e >> 1) & 255) | (e >> 9) << 8 | (e & 1) << 9;
        const uint32_t p = dev::pack2<T>(cb[first_index<5>(code)], cb[second_index<5>(code)]);
#pragma unroll
        for (int j = 0; j < 8; ++j)
          dev::smem::store128(lut, uint32_t(e * 128 + 16 * ((j + tid) % 8)),
                              make_uint4(p, p, p, p));
      }
    } else if constexpr (kQuads) {
      using dev::fragment_lut::first_index;
      using dev::fragment_lut::second_index;
      for (int r = tid; r < 256; r += nthreads) {
        const uint32_t lo = dev::pack2<T>(cb[first_index<2>(r & 15)], cb[second_index<2>(r & 15)]);
        const uint32_t hi = dev::pack2<T>(cb[first_index<2>(r >> 4)], cb[second_index<2>(r >> 4)]);
        // Store j of thread t to quad (j + t) % 16 of its row: 8 lanes of a phase, 8 columns.
#pragma unroll
        for (int j = 0; j < 16; ++j)
          dev::smem::store128(lut, uint32_t(r * 256 + 16 * ((j + tid) % 16)),
                              make_uint4(lo, hi, lo, hi));
      }
    } else {
      dev::fragment_lut::build<K, T, true>(lut, cb, tid, nthreads);
    }
  }
  template <typename T>
  static __device__ void build_own_table(uint32_t base, const float* cb, int tid, int nthreads) {
    build_table_at<T>(base, cb, tid, nthreads);
  }

  template <typename T>
  struct Decoder : KbitDecoder<T> {
    // This thread's bytes of a weight tile (K = 3: its 8 bytes; high_at: its fourth word's 2-bit
    // fields' word, K = 5: its fifth word) and its 4 of a code tile.
    uint32_t words_at, high_at, codes_at;
    // K = 5: the lane's column byte (4 lane) in bytes 0, 1 (pairs 0, 1) and 2, 3 (pairs 2, 3).
    uint32_t column_lo, column_hi;
    __device__ Decoder(const ws::MainloopArgs& a, int lane) : Decoder(a, lane, int(threadIdx.x)) {}
    // tid: the thread's index among its tile's consumers (the layout's t = 32 w + 4 g + c; 256,
    // or 512 on a tile of two n-tiles, whose second n-tile's bytes follow the first's).
    // A 16-row block's bytes are kRowBlockWeightBytes from the next; K = 3's hold the 32 threads'
    // 8-byte parts, then their 4-byte words; K = 5's their 16-byte parts, then their fifth words.
    static constexpr uint32_t kPartBytes = K == 3 ? 8 : 16;
    __device__ Decoder(const ws::MainloopArgs& a, int lane, int tid)
        : KbitDecoder<T>(a, lane),
          words_at(K == 3 || K == 5
                       ? uint32_t(tid >> 5) * kRowBlockWeightBytes + uint32_t(tid & 31) * kPartBytes
                       : uint32_t(tid) * 4 * K),
          high_at(uint32_t(tid >> 5) * kRowBlockWeightBytes + 32 * kPartBytes +
                  uint32_t(tid & 31) * 4),
          codes_at((uint32_t(tid) >> 2) * 4),
          column_lo(uint32_t(lane) * 4 * 0x0101u),
          column_hi(uint32_t(lane) * 4 * 0x01010000u) {}
    // Build_table for the shared mainloop: this format's table (K = 4's build at K < 4 would
    // leave rows 2^2K.. empty).
    __device__ static void build_table(unsigned char* smem, const float* cb, int tid) {
      build_table_at<T>(smem, cb, tid, ws::Config::kConsumers);
    }
    // fp16: block kb's scales (rows row0, row0 + 8) as an fp16 pair: codes kb and 2 + kb by a
    // shift and a mask as the E4M4 value / 16 (exact, subnormal codes included), times 16 (exact).
    static __device__ __forceinline__ __half2 scales16(uint32_t codes, int kb) {
      const uint32_t div16 = dev::decode_e4m4_pair_div16(codes, kb != 0);
      return __hmul2(*reinterpret_cast<const __half2*>(&div16), __float2half2_rn(16.f));
    }
    // fp16: 4 pairs times one row's scale (a broadcast half of scales16's pair).
    static __device__ __forceinline__ void mul_pairs16(uint32_t (&out)[4], __half2 scale2) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const __half2 p = __hmul2(*reinterpret_cast<const __half2*>(&out[q]), scale2);
        out[q] = *reinterpret_cast<const uint32_t*>(&p);
      }
    }
    // K = 2: word kb's pairs Q of block kb, rows row0 (lo) and row0 + 8 (hi), by one PRMT (the
    // code byte beside the lane's column byte, 8 lane) and one LDS.64 of the quad table each.
    template <typename Lut>
    __device__ __forceinline__ void quads(Lut lut, uint32_t v, uint32_t (&lo)[4],
                                          uint32_t (&hi)[4]) const {
      const uint32_t column8 = this->dec.column * 2;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint2 e = dev::smem::load64_fixed(lut, __byte_perm(v, column8, 0x5504 | (q << 4)));
        lo[q] = e.x;
        hi[q] = e.y;
      }
    }
    // K = 3..5: the thread's four pair words: byte Q of word 2 rr + kb is pair Q of row row0 +
    // 8 rr, block kb, its code in the low 2K bits (the rest anything: the table's rows repeat;
    // K = 5: its planes 0..3, and `fifth` the 16 pairs' plane 4).
    // K = 3: words 0..2 as loaded; word 3's 2-bit fields sit at bits 6, 7 of each byte of words 0,
    // 1, 2 (3 SHF + 2 LOP3, each LOP3 a select under a constant mask).
    template <typename Ptr>
    __device__ __forceinline__ void load_words(Ptr w, uint32_t (&words)[4], uint32_t& fifth) const {
      if constexpr (K == 4 || K == 5) {
        const uint4 v = dev::smem::load128(w, words_at);
        words[0] = v.x, words[1] = v.y, words[2] = v.z, words[3] = v.w;
        if constexpr (K == 5) fifth = dev::smem::load32(w, high_at);
      } else {
        const uint2 v = dev::smem::load64(w, words_at);
        const uint32_t c = dev::smem::load32(w, high_at);
        const uint32_t lo = ((v.x >> 6) & 0x03030303u) | ((v.y >> 4) & ~0x03030303u);
        words[0] = v.x, words[1] = v.y, words[2] = c;
        words[3] = (lo & 0x0F0F0F0Fu) | ((c >> 2) & ~0x0F0F0F0Fu);
      }
    }
    // K = 5: pairs Q = 0..3 of pair word v (word i), x = the fifth word rotated right by 2i.
    // (x & 0x01018080) | column_lo holds pairs 0, 1's hb at bits 7, 15 (in the column bytes) and
    // ha at bits 16, 24; (x & 0x80800101) | column_hi pairs 2, 3's ha at bits 0, 8 and hb at 23,
    // 31. One PRMT a pair: address byte 0 the column byte with hb in bit 7, byte 1 the code byte,
    // byte 2 the ha byte, byte 3 that byte's sign (selector bit 3 replicates it: 0).
    template <typename Lut>
    __device__ __forceinline__ void fifth_pairs(Lut lut, uint32_t v, uint32_t x,
                                                uint32_t (&out)[4]) const {
      const uint32_t lo = (x & 0x01018080u) | column_lo;
      const uint32_t hi = (x & 0x80800101u) | column_hi;
      out[0] = dev::smem::load32_fixed(lut, dev::byte_perm(v, lo, 0xE604));
      out[1] = dev::smem::load32_fixed(lut, dev::byte_perm(v, lo, 0xF715));
      out[2] = dev::smem::load32_fixed(lut, dev::byte_perm(v, hi, 0xC426));
      out[3] = dev::smem::load32_fixed(lut, dev::byte_perm(v, hi, 0xD537));
    }
    // The four pairs of word i, unscaled (K = 3..5).
    template <typename Lut>
    __device__ __forceinline__ void word_pairs(Lut lut, const uint32_t (&words)[4], uint32_t fifth,
                                               int i, uint32_t (&out)[4]) const {
      if constexpr (kFifthWord)
        fifth_pairs(lut, words[i], __funnelshift_r(fifth, fifth, 2 * i), out);
      else
        this->dec.pairs(lut, words[i], out);
    }
    // Word 2rr + kb: rows row0 + 8 rr, block kb; k16 step 2kb + h takes pairs 2h and 2h + 1.
    // Lut: the table as a generic pointer or its shared-window address (fragment_lut's lds).
    // Ptr: the stage's tiles the same way (generic pointers or shared-window addresses).
    template <typename Lut, typename Ptr>
    __device__ __forceinline__ void decode(Lut smem, Ptr w, Ptr s, int, uint32_t (&f)[16]) const {
      if constexpr (kQuads) {
        // K = 2: per word (block kb) four PRMT + LDS.64 give both rows' pairs; fp16
        // scales as K = 4's below (broadcast halves), bf16 scales by arithmetic (no scale half).
        const uint2 v = dev::smem::load64(w, words_at);
        const uint32_t codes = dev::smem::load32(s, codes_at);
        __half2 sc16[2];
        if constexpr (std::is_same_v<T, __half>) {
#pragma unroll
          for (int kb = 0; kb < 2; ++kb) {
            sc16[kb] = scales16(codes, kb);
          }
        }
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          uint32_t out[2][4];  // [rr][q]
          quads(smem, kb == 0 ? v.x : v.y, out[0], out[1]);
#pragma unroll
          for (int rr = 0; rr < 2; ++rr) {
            if constexpr (std::is_same_v<T, __half>) {
              const __half2 scale2 = rr == 0 ? __low2half2(sc16[kb]) : __high2half2(sc16[kb]);
              mul_pairs16(out[rr], scale2);
            } else {
              const float sf = dev::decode_e4m4((codes >> (8 * (2 * rr + kb))) & 0xFFu);
              const uint32_t scale2 = dev::pack2<T>(sf, sf);
#pragma unroll
              for (int q = 0; q < 4; ++q) out[rr][q] = dev::mul2<T>(out[rr][q], scale2);
            }
            place(out[rr], rr, kb, f);
          }
        }
        return;
      }
      uint32_t words[4], fifth = 0;
      load_words(w, words, fifth);
      const uint32_t codes = dev::smem::load32(s, codes_at);
      const auto& dec = this->dec;
      if constexpr (std::is_same_v<T, __half>) {
        // fp16: the scales by arithmetic, not from the table's scale half: a shift and a mask put
        // codes kb and 2 + kb where an fp16 pair reads them as the E4M4 value / 16 (exact,
        // subnormal codes included) and one HMUL2 by 16 makes them the values (exact); each
        // pair's HMUL2 takes its row's half as a broadcast operand (.H0_H0 / .H1_H1). 6
        // instructions for 4 scales where PRMT + LDS a scale took 8, 4 of them table loads.
        // (__half2 here, not dev::mul2's words: a word's broadcast stays a PRMT, +8 a k-tile.)
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          const __half2 sc = scales16(codes, kb);
#pragma unroll
          for (int rr = 0; rr < 2; ++rr) {
            const __half2 scale2 = rr == 0 ? __low2half2(sc) : __high2half2(sc);
            uint32_t out[4];
            word_pairs(smem, words, fifth, 2 * rr + kb, out);
            mul_pairs16(out, scale2);
            place(out, rr, kb, f);
          }
        }
      } else {
        // bf16: the scales from the table's scale half (PRMT + LDS a scale; K = 5's table has
        // none: by arithmetic).
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int rr = i >> 1, kb = i & 1;
          uint32_t out[4];
          uint32_t scale2;
          if constexpr (kFifthWord) {
            const float sf = dev::decode_e4m4((codes >> (8 * i)) & 0xFFu);
            scale2 = dev::pack2<T>(sf, sf);
          } else {
            scale2 = i == 0   ? dec.template scale<0>(smem, codes)
                     : i == 1 ? dec.template scale<1>(smem, codes)
                     : i == 2 ? dec.template scale<2>(smem, codes)
                              : dec.template scale<3>(smem, codes);
          }
          word_pairs(smem, words, fifth, i, out);
#pragma unroll
          for (int q = 0; q < 4; ++q) out[q] = dev::mul2<T>(out[q], scale2);
          place(out, rr, kb, f);
        }
      }
    }
    // The pairs unscaled and the scales apart, as fp32 divided by kUnscaledFactor: scale[2 rr +
    // kb] is block kb's scale (/ 16) of row row0 + 8 rr, for a kernel that multiplies block by
    // block, scales the products (one FFMA an accumulator a block) and multiplies its sums by 16
    // once (exact: a power of two). The scales are decoded by arithmetic, two codes a shift and a
    // mask as fp16 (decode_e4m4_pair_div16) and one conversion each, not looked up: the table's
    // wavefronts were a bound of that kernel.
    static __device__ __forceinline__ void unscaled_scales(uint32_t codes, float (&scale)[4]) {
#pragma unroll
      for (int odd = 0; odd < 2; ++odd) {
        const float2 pair = dev::unpack2<__half>(dev::decode_e4m4_pair_div16(codes, odd != 0));
        scale[odd] = pair.x;      // byte odd: row0, block odd
        scale[2 + odd] = pair.y;  // byte 2 + odd: row0 + 8, block odd
      }
    }
    // The pairs of the thread's words (K = 2: words 0, 1 its two words of nibble codes).
    template <typename Lut>
    __device__ __forceinline__ void unscaled_pairs(Lut smem, const uint32_t (&words)[4],
                                                   uint32_t fifth, uint32_t (&f)[16]) const {
      if constexpr (kQuads) {
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          uint32_t out[2][4];  // [rr][q]
          quads(smem, words[kb], out[0], out[1]);
          place(out[0], 0, kb, f);
          place(out[1], 1, kb, f);
        }
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          uint32_t out[4];
          word_pairs(smem, words, fifth, i, out);
          place(out, i >> 1, i & 1, f);
        }
      }
    }
    // The thread's pair words of a k-tile (K = 2: its two words in words 0, 1).
    template <typename Ptr>
    __device__ __forceinline__ void load_pair_words(Ptr w, uint32_t (&words)[4],
                                                    uint32_t& fifth) const {
      if constexpr (kQuads) {
        const uint2 v = dev::smem::load64(w, words_at);
        words[0] = v.x, words[1] = v.y, words[2] = 0, words[3] = 0;
      } else {
        load_words(w, words, fifth);
      }
    }
    template <typename Lut, typename Ptr>
    __device__ __forceinline__ void decode_unscaled(Lut smem, Ptr w, Ptr s, uint32_t (&f)[16],
                                                    float (&scale)[4]) const {
      unscaled_scales(dev::smem::load32(s, codes_at), scale);
      uint32_t words[4], fifth = 0;
      load_pair_words(w, words, fifth);
      unscaled_pairs(smem, words, fifth, f);
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

template <int K>
using FragmentWeights = FragmentWeightsT<K, false>;

}  // namespace kbit::variants::fragment
