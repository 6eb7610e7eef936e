// The pair lookup table of the MMA-lookup GEMV kernels: one shared-memory load turns a byte
// holding two codebook indices into the two dequantized weights as a half2 / bfloat162 pair
// (an MMA operand register).
//
// Layout: 256 rows of 256 bytes (64 KB). Row r holds, in bytes [0, 128), the pair entry of
// byte r repeated for the 32 lanes. Lane l reads word l of the row, so a warp's 32 lookups
// hit 32 different banks whatever the indices are (no conflicts, no broadcast needed). The
// address is one PRMT: byte 1 = the index byte, byte 0 = 4 * lane. Rows are 256 bytes only
// because the PRMT forms the address; bytes [128, 256) of each row are not the table's: 256
// "holes" of 128 B (32 KB) that the kernel uses for its own data (hole()).
#pragma once
#include <cstdint>

#include "variants/common/dtype.cuh"

namespace kbit::dev::pair_lut {

constexpr int kRows = 256;
constexpr int kRowBytes = 256;
constexpr int kBytes = kRows * kRowBytes;
constexpr int kHoles = kRows;  // one per row
constexpr int kHoleBytes = kRowBytes / 2;

// Byte offset (from the table) of hole j: the second half of row j. Every hole starts at
// bank 0, so data that lanes read at the same time must differ in its offset inside holes.
__host__ __device__ constexpr int hole(int j) {
  return j * kRowBytes + kHoleBytes;
}

// Index bits per field in the bytes the table reads: K <= 4 packs two indices per byte
// (nibbles, bits above K don't-care); K = 5 one per byte (bits 5..7 don't-care).
template <int K>
__host__ __device__ constexpr int field_bits() {
  return K <= 4 ? 4 : 8;
}

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

// Fills the table (not the holes); threads [0, nthreads) of the block take part (the caller
// syncs after). cb is the codebook in shared memory: indexed in constant memory (a kernel
// parameter) with up to 16 different indices per warp, every LDC is serialized (~5 us for the
// table in a build with one block per SM, session 5).
template <int K, typename T>
__device__ void build(unsigned char* lut, const float* cb, int tid, int nthreads) {
  constexpr int kQuads = kHoleBytes / 16;  // uint4 per row of entries
  for (int i = tid; i < kRows * kQuads; i += nthreads) {
    const uint32_t v = pair_entry<K, T>(cb, i / kQuads);
    reinterpret_cast<uint4*>(lut + (i / kQuads) * kRowBytes)[i % kQuads] = make_uint4(v, v, v, v);
  }
}

// This lane's column of the table (4 * lane).
__device__ __forceinline__ uint32_t pair_column(int lane) {
  return uint32_t(lane) * 4u;
}

// Byte offset of row `byte Q of word` in this lane's column: PRMT puts the byte at bits 8..15
// and the column (< 128) at bits 0..7; bits 16..31 come from the column's zero byte 1.
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

}  // namespace kbit::dev::pair_lut
