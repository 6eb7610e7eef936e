// Variant 04's weight decode: a quantization block's K bit-planes to mma.m16n8k16 A-operand
// registers through one 64 KB shared-memory table, a table suited to each K (F-034):
//
// * K = 3, 4 (`pair_lut`): a 4 x 4 bit transpose puts two 4-bit indices in each byte; one PRMT +
//   one LDS of a 256-row table (32 lane copies) give the pair. 48 instructions a block.
// * K = 2 (quads): two LOP3-merges of the planes put four 2-bit indices in each byte; one PRMT +
//   one LDS.64 give four weights, two A registers. Lanes l and l + 16 share a copy: a 64-bit
//   load runs in two half-warp phases, so 16 copies are conflict-free. 20 instructions a block.
// * K = 5 (10-bit pairs): the K = 4 transpose of planes 0..3 gives the row (the pair's low 4
//   bits each); plane 4's two bits and the lane's slot form the row offset, so one PRMT + one
//   LDS give the pair. 16 copies a row, banks chosen so at most two lanes share one (two
//   wavefronts at worst). 64 instructions a block; no room for scales, which are decoded.
//
// The MMA order of a block's 32 elements is the decode's choice; store_group (stream.cuh)
// stages A's pairs in the same order (pair_order below).
#pragma once
#include <cstdint>

#include <utility>

#include "variants/common/bitplane.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/common/pair_lut.cuh"

namespace kbit::dev::gemv_decode {

constexpr int kBytes = 65536;  // every K: 256 rows of 256 bytes
constexpr int kRowBytes = 256;

// The table a lane reads: its column offsets, fixed for the kernel.
struct LaneCols {
  uint32_t pair;   // K = 3, 4: 4 * lane; K = 2: 8 * (lane % 16); K = 5: slot bits, twice
  uint32_t scale;  // 4 * lane + 128 (K <= 4)
};

// K = 5's slot bits: lane slot s = lane % 16 at address bits 2, 4, 5, 6, so that the bank
// (address bits 2..6) is the slot plus plane 4's bit of the first element (address bit 3): two
// lanes a bank at most.
__host__ __device__ constexpr uint32_t k5_slot_bits(int s) {
  return uint32_t(((s & 1) << 2) | ((s >> 1) << 4));
}

template <int K>
__device__ __forceinline__ LaneCols lane_cols(int lane) {
  LaneCols c;
  c.scale = uint32_t(lane) * 4u + pair_lut::kScaleHalf;
  if constexpr (K == 2)
    c.pair = uint32_t(lane & 15) * 8u;
  else if constexpr (K == 5)
    c.pair = k5_slot_bits(lane & 15) * 0x10001u;  // bytes 0 and 2 (the H words' pairs)
  else
    c.pair = pair_lut::pair_column(lane);
  return c;
}

// Fills the table; threads [0, nthreads) take part (the caller syncs after). cb: the codebook in
// shared memory. Store j of a row by thread t goes to 16-byte quad (j + t) % 8 of its half, so
// an STS.128 phase's 8 lanes write 8 different quads although their rows are 256 B apart.
template <int K, typename T>
__device__ void build(unsigned char* lut, const float* cb, int tid, int nthreads) {
  if constexpr (K == 3 || K == 4) {
    pair_lut::build<K, T>(lut, cb, tid, nthreads);
  } else {
    for (int r = tid; r < 256; r += nthreads) {
      uint4* row = reinterpret_cast<uint4*>(lut + r * kRowBytes);
      uint4 half[2];
      if constexpr (K == 2) {  // the quad of byte r (fields of 2 bits), then the scale of code r
        const uint32_t lo = pack2<T>(cb[r & 3], cb[(r >> 2) & 3]);
        const uint32_t hi = pack2<T>(cb[(r >> 4) & 3], cb[(r >> 6) & 3]);
        const uint32_t s = __float_as_uint(decode_e4m4(uint32_t(r)));
        half[0] = make_uint4(lo, hi, lo, hi);
        half[1] = make_uint4(s, s, s, s);
      } else {  // K = 5: half h = plane 4's bit of the second element; (v0, v0, v1, v1) by the
                // first's
        for (int h = 0; h < 2; ++h) {
          const float b = cb[(r >> 4) | (h << 4)];
          const uint32_t v0 = pack2<T>(cb[r & 15], b), v1 = pack2<T>(cb[(r & 15) | 16], b);
          half[h] = make_uint4(v0, v0, v1, v1);
        }
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int q = (j + tid) % 8;
        row[q] = half[0];
        row[8 + q] = half[1];
      }
    }
  }
}

// The A registers of one block of a column pair (lo = MMA row g, hi = row g + 8) for MMA
// I = 0..7 of the block: a[0], a[2] from the lo column, a[1], a[3] from hi.
template <int K>
struct Block;

// K = 3, 4: pair (R, Q) = elements (R + 8Q, R + 8Q + 4), byte Q of residue word R; MMA
// I = 2R + h takes pairs (R, 2h) and (R, 2h + 1).
template <int K>
struct Block {
  static_assert(K == 3 || K == 4, "K = 2, 5 are specialized below");
  pair_lut::Residues<K> lo, hi;
  __device__ __forceinline__ Block(const uint32_t (&plo)[K], const uint32_t (&phi)[K])
      : lo(plo), hi(phi) {}
  template <int I>
  __device__ __forceinline__ void mma_a(const unsigned char* lut, const LaneCols& c,
                                        uint32_t (&a)[4]) const {
    constexpr int R = I / 2, Q = 2 * (I % 2);
    a[0] = lo.template pair<R, Q>(lut, c.pair);
    a[1] = hi.template pair<R, Q>(lut, c.pair);
    a[2] = lo.template pair<R, Q + 1>(lut, c.pair);
    a[3] = hi.template pair<R, Q + 1>(lut, c.pair);
  }
};

// K = 2: z[p] field i (bits 2i, 2i + 1) = the index of element 2i + p, so byte k of z[p] holds
// elements 8k + p + {0, 2, 4, 6}, one quad; MMA I = 2k + p takes it: a[0] / a[1] = elements
// (8k + p, 8k + p + 2), a[2] / a[3] = (8k + p + 4, 8k + p + 6).
template <>
struct Block<2> {
  uint32_t lo[2], hi[2];
  static __device__ __forceinline__ void merge(const uint32_t (&p)[2], uint32_t (&z)[2]) {
    z[0] = select_bits(0x55555555u, p[0], p[1] << 1);
    z[1] = select_bits(0x55555555u, p[0] >> 1, p[1]);
  }
  __device__ __forceinline__ Block(const uint32_t (&plo)[2], const uint32_t (&phi)[2]) {
    merge(plo, lo);
    merge(phi, hi);
  }
  static __device__ __forceinline__ uint2 quad(const unsigned char* lut, uint32_t word,
                                               uint32_t byte_sel, uint32_t col) {
    return *reinterpret_cast<const uint2*>(lut + __byte_perm(word, col, byte_sel));
  }
  template <int I>
  __device__ __forceinline__ void mma_a(const unsigned char* lut, const LaneCols& c,
                                        uint32_t (&a)[4]) const {
    constexpr int k = I / 2, p = I % 2;
    constexpr uint32_t sel = 0x5504u | (k << 4);  // byte k beside the lane's column byte
    const uint2 l = quad(lut, lo[p], sel, c.pair), h = quad(lut, hi[p], sel, c.pair);
    a[0] = l.x, a[1] = h.x, a[2] = l.y, a[3] = h.y;
  }
};

// K = 5: pairs as at K = 3, 4. Row = byte Q of the planes 0..3 residue word R (both low
// nibbles); the row offset = plane 4's bits of the first and second element at address bits 3
// and 7, plus the lane's slot bits. hq[R][e] holds the offsets of pairs Q = e (byte 0) and Q = e +
// 2 (byte 2), bytes 1 and 3 zero: the address is one PRMT (offset byte, row byte, zero, zero).
template <>
struct Block<5> {
  uint32_t wlo[4], whi[4];
  uint32_t hlo[4][2], hhi[4][2];
  static __device__ __forceinline__ void split(const uint32_t (&p)[5], uint32_t col,
                                               uint32_t (&w)[4], uint32_t (&h)[4][2]) {
    const uint32_t low[4] = {p[0], p[1], p[2], p[3]};  // planes 0..3 (registers: no copy)
    residue_nibbles<4>(low, w);
    pair_lut::for_each_index(std::make_integer_sequence<int, 4>{}, [&](auto r_const) {
      constexpr int R = decltype(r_const)::value;
      // Element R + 8Q (plane 4 bit R + 8Q) to bit 8Q + 3, element R + 8Q + 4 to bit 8Q + 7;
      // even Q stay in bytes 0 / 2, odd Q move down from bytes 1 / 3.
      h[R][0] = ((p[4] << (3 - R)) & 0x00880088u) | col;
      h[R][1] = ((p[4] >> (R + 5)) & 0x00880088u) | col;
    });
  }
  __device__ __forceinline__ Block(const uint32_t (&plo)[5], const uint32_t (&phi)[5],
                                   uint32_t col) {
    split(plo, col, wlo, hlo);
    split(phi, col, whi, hhi);
  }
  template <int R, int Q>
  static __device__ __forceinline__ uint32_t pair(const unsigned char* lut, const uint32_t (&w)[4],
                                                  const uint32_t (&h)[4][2]) {
    // byte 0: the offset (byte 0 or 2 of h[R][Q % 2]), byte 1: row byte Q, bytes 2, 3: zero.
    constexpr uint32_t sel = (Q / 2 == 0 ? 0x5504u : 0x5506u) | (uint32_t(Q) << 4);
    return *reinterpret_cast<const uint32_t*>(lut + __byte_perm(w[R], h[R][Q % 2], sel));
  }
  template <int I>
  __device__ __forceinline__ void mma_a(const unsigned char* lut, const LaneCols&,
                                        uint32_t (&a)[4]) const {
    constexpr int R = I / 2, Q = 2 * (I % 2);
    a[0] = pair<R, Q>(lut, wlo, hlo);
    a[1] = pair<R, Q>(lut, whi, hhi);
    a[2] = pair<R, Q + 1>(lut, wlo, hlo);
    a[3] = pair<R, Q + 1>(lut, whi, hhi);
  }
};

// The block's decoder from its planes (lo / hi column) and the lane's columns.
template <int K>
__device__ __forceinline__ Block<K> block(const uint32_t (&plo)[K], const uint32_t (&phi)[K],
                                          const LaneCols& c) {
  if constexpr (K == 5)
    return Block<5>(plo, phi, c.pair);
  else
    return Block<K>(plo, phi);
}

// The scale of byte B of `codes` (a k-block's E4M4 code in byte kb): the table's scale half at
// K <= 4, the arithmetic decode (SHL + FMUL) at K = 5.
template <int K, int B>
__device__ __forceinline__ float scale(const unsigned char* lut, uint32_t codes,
                                       const LaneCols& c) {
  if constexpr (K == 5)
    return decode_e4m4((codes >> (8 * B)) & 0xFFu);
  else
    return pair_lut::scale<B>(lut, codes, c.scale);
}

// Whether a block's staged A pairs follow K = 2's quads (store_group, stream.cuh): staged pair
// 2I + j of MMA I = 2k + p holds elements 8k + p + 4j + {0, 2}, so group q's four pairs are
// p = 4q .. 4q + 3. Else pair (R, q) = elements (R + 8q, R + 8q + 4) at p = 4R + q.
template <int K>
constexpr bool kQuadOrder = K == 2;

}  // namespace kbit::dev::gemv_decode
