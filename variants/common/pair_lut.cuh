// The pair lookup table of the MMA-lookup GEMV kernels: one shared-memory load turns a byte
// holding two codebook indices into the two dequantized weights as a half2 / bfloat162 pair
// (an MMA operand register), and a byte holding an E4M4 code into its float scale.
//
// Layout: 256 rows of 256 bytes (64 KB). Row r holds, in bytes [0, 128), the pair entry of
// byte r repeated for the 32 lanes, and in bytes [128, 256) the decoded scale of code r,
// repeated likewise. Lane l reads word l of its half of the row, so a warp's 32 lookups hit
// 32 different banks whatever the indices are (no conflicts, no broadcast needed). The
// address is one PRMT: byte 1 = the index byte, byte 0 = 4 * lane (+ 128 for scales).
#pragma once
#include <cstdint>

#include <utility>

#include "variants/common/bitplane.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"

namespace kbit::dev::pair_lut {

constexpr int kRows = 256;
constexpr int kRowBytes = 256;
constexpr int kBytes = kRows * kRowBytes;
constexpr uint32_t kScaleHalf = 128;  // byte offset of the scale half of a row

// The pair entry of byte r: (lo, hi) = (cb[low field], cb[high field]) rounded to T for
// K <= 4; K = 5 has one index per byte, so the entry is (cb[r & 31], 0) and callers merge two.
template <int K, typename T>
__device__ __forceinline__ uint32_t pair_entry(const float* cb, int r) {
  constexpr int kMask = (1 << K) - 1;
  if constexpr (K <= 4)
    return pack2<T>(cb[r & kMask], cb[(r >> 4) & kMask]);
  else
    return pack2<T>(cb[r & kMask], 0.0f);
}

// Fills the table; threads [0, nthreads) of the block take part (the caller syncs after). cb is
// the codebook in shared memory: indexed in constant memory (a kernel parameter) with up to 16
// different indices per warp, every LDC is serialized (~5 us for the table in a build with
// one block per SM, F-009). A thread computes the two values of a row once and stores each
// 8 times; store j of lane l goes to 16-byte quad (j + l) % 8 of its half, so the 8 lanes of
// each phase of an STS.128 write 8 different quads (all 32 banks): no conflicts although the
// lanes' rows are 256 B apart.
template <int K, typename T>
__device__ void build(unsigned char* lut, const float* cb, int tid, int nthreads) {
  constexpr int kQuadsPerHalf = kRowBytes / 2 / 16;
  for (int r = tid; r < kRows; r += nthreads) {
    const uint32_t p = pair_entry<K, T>(cb, r), s = __float_as_uint(decode_e4m4(uint32_t(r)));
    uint4* row = reinterpret_cast<uint4*>(lut + r * kRowBytes);
#pragma unroll
    for (int j = 0; j < kQuadsPerHalf; ++j) {
      const int q = (j + tid) % kQuadsPerHalf;
      row[q] = make_uint4(p, p, p, p);
      row[kQuadsPerHalf + q] = make_uint4(s, s, s, s);
    }
  }
}

// This lane's column of the pair half (4 * lane) and of the scale half (4 * lane + 128).
__device__ __forceinline__ uint32_t pair_column(int lane) {
  return uint32_t(lane) * 4u;
}
__device__ __forceinline__ uint32_t scale_column(int lane) {
  return uint32_t(lane) * 4u + kScaleHalf;
}

// Byte offset of row `byte Q of word` in this lane's column: PRMT puts the byte at bits 8..15
// and the column (< 256) at bits 0..7; bits 16..31 come from the column's zero byte 1.
template <int Q>
__device__ __forceinline__ uint32_t offset(uint32_t word, uint32_t column) {
  static_assert(Q >= 0 && Q < 4, "a word has 4 bytes");
  return __byte_perm(word, column, 0x5504 | (Q << 4));
}

// The entry at a byte offset (LDS with the table's base in a uniform register).
__device__ __forceinline__ uint32_t load(const unsigned char* lut, uint32_t off) {
  return *reinterpret_cast<const uint32_t*>(lut + off);
}

// The weight pair of byte Q of `word` (K <= 4).
template <int Q>
__device__ __forceinline__ uint32_t pair(const unsigned char* lut, uint32_t word, uint32_t column) {
  return load(lut, offset<Q>(word, column));
}

// K = 5: the pair (byte Q of lo_word, byte Q of hi_word), two loads and a PRMT of the low halves.
template <int Q>
__device__ __forceinline__ uint32_t pair_split(const unsigned char* lut, uint32_t lo_word,
                                               uint32_t hi_word, uint32_t column) {
  return __byte_perm(pair<Q>(lut, lo_word, column), pair<Q>(lut, hi_word, column), 0x5410);
}

// The decoded scale of byte Q of `codes` (column: scale_column(lane)).
template <int Q>
__device__ __forceinline__ float scale(const unsigned char* lut, uint32_t codes, uint32_t column) {
  return __uint_as_float(load(lut, offset<Q>(codes, column)));
}

// Calls fn(integral_constant<int, R>) for R = 0, 1, ...: a loop whose index is a constant.
template <int... R, typename Fn>
__device__ __forceinline__ void for_each_index(std::integer_sequence<int, R...>, Fn&& fn) {
  (fn(std::integral_constant<int, R>{}), ...);
}

// The residue words of a block's K = 3, 4 planes, the bytes this table reads: word R byte Q holds
// the indices of elements R + 8Q (low nibble) and R + 8Q + 4 (high nibble); pair<R, Q>() looks
// that weight pair up. (variants/04_scalar_gemv/decode.cuh has K = 2's and 5's tables.)
template <int K>
struct Residues {
  static_assert(K == 3 || K == 4, "two 4-bit indices a byte");
  uint32_t w[4];
  __device__ __forceinline__ explicit Residues(const uint32_t (&p)[K]) { residue_nibbles<K>(p, w); }
  template <int R, int Q>
  __device__ __forceinline__ uint32_t pair(const unsigned char* lut, uint32_t col) const {
    return pair_lut::pair<Q>(lut, w[R], col);
  }
};

// The 16 weight pairs of one block in natural k order, unscaled: pair j = (element 2j,
// element 2j + 1) as a T pair, the order an ldmatrix-ready tile or a k-major MMA fragment
// stores them in (Residues pairs elements R + 8Q and R + 8Q + 4 instead). K <= 4: from the
// residue nibbles w (w[r] nibble q = element 4q + r), one round of nibble merges builds the
// words v[s] whose byte Q holds elements 8Q + 2s (low nibble) and 8Q + 2s + 1 (high nibble):
// 2 instructions a word, then one PRMT + LDS a pair. K = 5: bytes Q of the residue bytes
// w[2s] and w[2s + 1] are the pair (two LDS and a PRMT). chunk<C>() gives pairs 4C .. 4C + 3,
// the 16-byte chunk of elements 8C .. 8C + 7, so a caller can spread a block's lookups over
// other work. `column`: pair_column(lane).
template <int K>
struct NaturalPairs {
  static constexpr int kWords = K <= 4 ? 4 : 8;
  uint32_t v[kWords];
  __device__ __forceinline__ explicit NaturalPairs(const uint32_t (&planes)[K]) {
    if constexpr (K <= 4) {
      uint32_t w[4];
      if constexpr (K >= 3) {
        residue_nibbles<K>(planes, w);
      } else {
        for_each_index(std::make_integer_sequence<int, 4>{}, [&](auto r_const) {
          w[decltype(r_const)::value] = residue_fields<K, decltype(r_const)::value, 4>(planes);
        });
      }
      v[0] = select_bits(0x0F0F0F0Fu, w[0], w[1] << 4);
      v[1] = select_bits(0x0F0F0F0Fu, w[2], w[3] << 4);
      v[2] = select_bits(0x0F0F0F0Fu, w[0] >> 4, w[1]);
      v[3] = select_bits(0x0F0F0F0Fu, w[2] >> 4, w[3]);
    } else {
      for_each_index(std::make_integer_sequence<int, 8>{}, [&](auto r_const) {
        v[decltype(r_const)::value] = residue_fields<K, decltype(r_const)::value, 8>(planes);
      });
    }
  }
  template <int C>
  __device__ __forceinline__ void chunk(const unsigned char* lut, uint32_t column,
                                        uint32_t (&out)[4]) const {
    static_assert(C >= 0 && C < 4, "a block has 4 chunks of 8 elements");
    for_each_index(std::make_integer_sequence<int, 4>{}, [&](auto s_const) {
      constexpr int S = decltype(s_const)::value;
      if constexpr (K <= 4)
        out[S] = pair<C>(lut, v[S], column);
      else
        out[S] = pair_split<C>(lut, v[2 * S], v[2 * S + 1], column);
    });
  }
};

}  // namespace kbit::dev::pair_lut
