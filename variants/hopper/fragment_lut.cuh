// The kbit weight format's decode (kbit_weights.cuh): a quantization block's bit-planes to wgmma
// A-operand registers.
//
// wgmma's register A fragment (the mma.m16n8k16 one) gives the thread with lane % 4 == c the
// element pairs (2c + 8Q, 2c + 8Q + 1), Q = 0..3, of each 32-element block of its rows: the
// same two adjacent bits of every plane, 8 bits apart. So the thread rotates plane p left by
// 2p, keeps the two bits of each pair (one LOP3 with a per-thread mask) and rotates the merged
// word right by 2c: byte Q of the result is the pair's *interleaved code*, bit 2p = plane p of
// the first element, bit 2p + 1 = plane p of the second (2K instructions for 4 pairs, K <= 4).
// One table load turns the code into the two dequantized weights as a half2 / bfloat162, the
// register wgmma reads, and one HMUL2 applies the block's scale.
//
// Table: one row per code, 32 lanes x 4 bytes (lane l reads word l of its row, so a warp's 32
// loads hit 32 different banks whatever the codes). K <= 4: rows 256 bytes apart, so that one
// PRMT (the code byte beside the lane's column byte) is the address, as in
// variants/common/pair_lut.cuh, and the rows' second halves hold the scales; K = 5: a pair
// needs 10 bits, 1024 rows of 128 bytes (128 KB), the address code * 128 + column.
#pragma once
#include <cstdint>

#include "variants/common/bits.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/common/smem_access.cuh"

namespace kbit::dev::fragment_lut {

template <int K>
struct Table {
  static_assert(K >= 2 && K <= 5, "K = 2..5");
  static constexpr int kCodeBits = 2 * K;        // two K-bit indices
  static constexpr int kCodes = 1 << kCodeBits;  // 16, 64, 256, 1024 pair entries
  static constexpr bool kScales = K <= 4;        // the scale half: see below
  static constexpr int kRows = kScales ? 256 : kCodes;
  static constexpr int kStride = kScales ? 256 : 128;  // bytes from one row to the next
  static constexpr int kBytes = kRows * kStride;       // 64 KB; 128 KB at K = 5
};
// K <= 4: bytes [128, 256) of row r hold the decoded E4M4 scale of code r as a T pair, per lane
// like the pair entries, so that a block's scale is one PRMT + LDS too (the arithmetic decode,
// SHL + FMUL + pack, took ~0.4 instructions a weight; K = 5 has no room and keeps it).
constexpr uint32_t kScaleHalf = 128;

// The codebook indices (element 0, element 1) of interleaved code r.
template <int K>
__host__ __device__ constexpr int first_index(int r) {
  int i = 0;
  for (int p = 0; p < K && p < 4; ++p) i |= ((r >> (2 * p)) & 1) << p;
  if (K == 5) i |= ((r >> 8) & 1) << 4;
  return i;
}
template <int K>
__host__ __device__ constexpr int second_index(int r) {
  int i = 0;
  for (int p = 0; p < K && p < 4; ++p) i |= ((r >> (2 * p + 1)) & 1) << p;
  if (K == 5) i |= ((r >> 9) & 1) << 4;
  return i;
}

// Fills the table; threads [0, nthreads) take part (the caller syncs after). cb: the codebook
// in shared memory. A thread computes a row's entry once and stores it 8 times 16 bytes wide;
// store j of thread t goes to quad (j + t) % 8 of its row, so the 8 lanes of an STS.128 phase
// write 8 different quads (all 32 banks) although their rows are 128 or 256 bytes apart.
// Lut: unsigned char* or the table's shared-window address (smem_access.cuh).
// kRepeat (K < 4): every one of the 256 rows holds a pair entry, row r that of code r mod 2^2K
// (first_index / second_index read only the code's 2K low bits), so that a code byte whose high
// bits hold anything reads its pair (the fragment-order layout at K = 3:
// reference/fragment.hpp).
template <int K, typename T, bool kRepeat = false, typename Lut>
__device__ void build(Lut lut, const float* cb, int tid, int nthreads) {
  using Tb = Table<K>;
  static_assert(!kRepeat || Tb::kScales, "repeated rows: K <= 4 (256 rows)");
  for (int r = tid; r < Tb::kRows; r += nthreads) {
    const uint32_t row = uint32_t(r * Tb::kStride);
    if (kRepeat || r < Tb::kCodes) {
      const uint32_t p = pack2<T>(cb[first_index<K>(r)], cb[second_index<K>(r)]);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        smem::store128(lut, row + 16 * ((j + tid) % 8), make_uint4(p, p, p, p));
    }
    if constexpr (Tb::kScales) {
      const float f = decode_e4m4(uint32_t(r));
      const uint32_t sc = pack2<T>(f, f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        smem::store128(lut, row + 16 * (8 + (j + tid) % 8), make_uint4(sc, sc, sc, sc));
    }
  }
}

__device__ __forceinline__ uint32_t rotl(uint32_t x, uint32_t s) {
  return __funnelshift_l(x, x, s);
}
__device__ __forceinline__ uint32_t rotr(uint32_t x, uint32_t s) {
  return __funnelshift_r(x, x, s);
}

// One thread's decoder: its pair offset c (lane % 4) and lane column, fixed for the kernel.
template <int K, typename T>
struct Decoder {
  static constexpr uint32_t kPairBits = 0x03030303u;  // bits 0, 1 of every byte
  static constexpr int kMerged = K < 4 ? K : 4;       // planes merged into the code byte
  uint32_t shift;                                     // 2c
  uint32_t column;                                    // 4 * lane
  uint32_t mask[kMerged];  // plane p's pair bits after its rotation by 2p: at 2c + 2p + 8Q

  __device__ __forceinline__ explicit Decoder(int lane) {
    shift = uint32_t(lane & 3) * 2;
    column = uint32_t(lane) * 4;
#pragma unroll
    for (int p = 0; p < kMerged; ++p) mask[p] = rotl(kPairBits, shift + 2 * p);
  }

  // The thread's 4 weight pairs of one block, scaled: out[Q] = (element 8Q + 2c, 8Q + 2c + 1).
  __device__ __forceinline__ void decode(const unsigned char* lut, const uint32_t (&planes)[K],
                                         uint32_t scale2, uint32_t (&out)[4]) const {
    uint32_t v = planes[0] & mask[0];
#pragma unroll
    for (int p = 1; p < kMerged; ++p) v = and_or(rotl(planes[p], 2 * p), mask[p], v);
    v = rotr(v, shift);  // byte Q: the interleaved code of pair Q (planes 0 .. 3)
    if constexpr (K <= 4) {
      decode_codes(lut, v, scale2, out);
    } else {
      // Plane 4's pair bits at bits 0, 1 of each byte; halfword h of lo / hi is the 10-bit
      // code of pair h / h + 2 (PRMT interleaves the code bytes with plane 4's bytes).
      const uint32_t v4 = rotr(planes[4] & mask[0], shift);
      const uint32_t lo = __byte_perm(v, v4, 0x5140), hi = __byte_perm(v, v4, 0x7362);
      out[0] = lds(lut, ((lo << 7) & 0x1FF80u) | column);
      out[1] = lds(lut, ((lo >> 9) & 0x1FF80u) | column);
      out[2] = lds(lut, ((hi << 7) & 0x1FF80u) | column);
      out[3] = lds(lut, ((hi >> 9) & 0x1FF80u) | column);
#pragma unroll
      for (int q = 0; q < 4; ++q) out[q] = mul2<T>(out[q], scale2);
    }
  }

  // The 4 pairs of a word whose byte Q is pair Q's interleaved code (K <= 4; what decode merges
  // from the planes, and what the fragment-order layout stores: reference/fragment.hpp), scaled.
  // Address = code byte * 256 + column: one PRMT (pair_lut::offset's trick), one LDS, one HMUL2.
  // Lut: the table as a generic pointer, or as its shared-window address (uint32_t, lds below).
  template <typename Lut>
  __device__ __forceinline__ void decode_codes(Lut lut, uint32_t v, uint32_t scale2,
                                               uint32_t (&out)[4]) const {
    pairs(lut, v, out);
#pragma unroll
    for (int q = 0; q < 4; ++q) out[q] = mul2<T>(out[q], scale2);
  }
  // The same unscaled (the scale applied after the MMA): one PRMT and one LDS a pair.
  template <typename Lut>
  __device__ __forceinline__ void pairs(Lut lut, uint32_t v, uint32_t (&out)[4]) const {
    static_assert(K <= 4, "one byte a pair code: K <= 4");
    out[0] = lds(lut, __byte_perm(v, column, 0x5504));
    out[1] = lds(lut, __byte_perm(v, column, 0x5514));
    out[2] = lds(lut, __byte_perm(v, column, 0x5524));
    out[3] = lds(lut, __byte_perm(v, column, 0x5534));
  }

  // The scale of byte B of `codes` (the E4M4 codes of a row's blocks) as a pair of T.
  template <int B, typename Lut>
  __device__ __forceinline__ uint32_t scale(Lut lut, uint32_t codes) const {
    if constexpr (Table<K>::kScales) {
      return lds(lut, __byte_perm(codes, column + kScaleHalf, 0x5504 | (B << 4)));
    } else {
      const float s = decode_e4m4((codes >> (8 * B)) & 0xFFu);
      return pack2<T>(s, s);
    }
  }

  // Lut: a generic pointer, or the table's shared-window address where that is a link-time
  // constant (smem_access.cuh: ptxas then folds it into the LDS instead of adding it to every
  // lookup).
  template <typename Lut>
  static __device__ __forceinline__ uint32_t lds(Lut lut, uint32_t off) {
    return smem::load32_fixed(lut, off);
  }
};

}  // namespace kbit::dev::fragment_lut
