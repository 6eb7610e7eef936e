// The AWQ tiled repack (reference/awq.hpp awq_tile, docs/awq_format.md "The tiled layout") as a
// weight format of the own kernel (pipelines.cuh): ws::AwqWeights' tiles and copies, no table, and
// a decode of its own on stage addresses. The repack is already in fragment order (a consumer
// thread's k-tile is one 16-byte load: word i is k16 step i, nibbles p and p + 4 the pair of A
// register p), so the own kernel reads the layout awq_gemm reads.
//
// The decode, per word (8 weights, 4 A registers): one SHF (the word >> 8) and four LOP3 put
// nibbles p, p + 4 into fp16 pairs by the exponent trick; even p (rows row0) are 1024 + q, from
// which one HSUB2 takes 1024 + z; odd p (row0 + 8) are masked in place as 1024 + 16 q, from which
// one HFMA2 makes (1024 + 16 q) / 16 - (64 + z); both are q - z exactly, and one HMUL2 by the
// scale rounds once: the reference's round_to(fp16, float(q - z) * s) bit for bit. 13
// instructions a word: masking the odd nibbles in place saves the SHF that each nibble pair would
// take to reach bits 0..3. The meta words' halves (scale low, 1024 + z high) are broadcast
// operands of the HSUB2 / HFMA2 / HMUL2.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "reference/awq_layout.hpp"
#include "variants/common/bits.cuh"
#include "variants/common/smem_access.cuh"
#include "variants/hopper/awq_weights.cuh"
#include "variants/hopper/config.cuh"

namespace kbit::variants::fragment {

struct AwqFragmentWeights : awq::AwqWeights {
  // A stage never filled holds whatever the shared memory held: meta words there may be Inf or
  // NaN scales, which a short last k-step would multiply by the TMA's zeros (NaN).
  static constexpr bool kZeroRing = true;
  // A scale a group of G k (a.group): at G >= 64 KT one a row over a k-step, so the mma.sync
  // kernel's scale after the MMA adds each k-step's products once (sync_kernel.cuh).
  static constexpr bool kGroupScales = true;
  static constexpr int kSyncMaxTokens = 16;  // its row has no `mma` option: wgmma from 32
  // No 256-row tiles: a meta tile's second group of 32 lies one n-tile's rows on (not two).
  static constexpr bool kTilePairs = false;
  static constexpr float kUnscaledFactor = 1.f;     // its scales are the scales
  static constexpr int kRowBlockWeightBytes = 512;  // 32 threads x 16 bytes
  static constexpr int kRowBlockScaleBytes = 64;    // 16 rows' meta words
  template <typename T>
  static __device__ void build_own_table(uint32_t, const float*, int, int) {}

  template <typename T>
  struct Decoder {
    static_assert(std::is_same_v<T, __half>, "AWQ scales are fp16: fp16 activations only");
    uint32_t words_at;  // this thread's 16 bytes of a weight tile
    // Its row row0's meta word for k16 steps 0, 1 and for 2, 3 (row0 + 8's: 32 bytes on): the
    // second group's, 512 bytes on, at G = 32, else the first's again. Both are loaded whatever
    // G is: a branch on G would cost a constant-bank load (LDC) and a compare in front of every
    // k-step's decode.
    uint32_t meta_at[2];
    // tid: the thread's index among its tile's 256 consumers (the repack's thread: row
    // 16 (tid / 32) + lane / 4).
    __device__ Decoder(const ws::MainloopArgs& a, int lane, int tid)
        : words_at(uint32_t(tid) * 16),
          meta_at{uint32_t((tid >> 5) * 16 + (lane >> 2)) * 4,
                  uint32_t((tid >> 5) * 16 + (lane >> 2)) * 4 +
                      (a.group == 32 ? uint32_t(kAwqTileN * 4) : 0u)} {}

    static __device__ __forceinline__ __half2 h2(uint32_t x) {
      return *reinterpret_cast<const __half2*>(&x);
    }
    static __device__ __forceinline__ uint32_t u32(__half2 x) {
      return *reinterpret_cast<const uint32_t*>(&x);
    }

    // The A registers of one k16 step from its word, as q - z (exact): registers 0, 2 (row0)
    // from nibbles 0, 4 and 2, 6 masked as 1024 + q, less row0's 1024 + z (high half of m0);
    // registers 1, 3 (row0 + 8) from nibbles 1, 5 and 3, 7 masked in place as 1024 + 16 q,
    // times 1 / 16 plus row0 + 8's -(64 + z) (high half of n8).
    static __device__ __forceinline__ void differences(uint32_t word, __half2 m0, __half2 n8,
                                                       __half2 (&d)[4]) {
      const __half2 sixteenth = __float2half2_rn(0.0625f);
      const uint32_t hi = word >> 8;  // nibbles 2, 3, 6, 7 where 0, 1, 4, 5 were
      d[0] = __hsub2(h2(dev::and_or(word, 0x000F000Fu, 0x64006400u)), __high2half2(m0));
      d[1] = __hfma2(h2(dev::and_or(word, 0x00F000F0u, 0x64006400u)), sixteenth, __high2half2(n8));
      d[2] = __hsub2(h2(dev::and_or(hi, 0x000F000Fu, 0x64006400u)), __high2half2(m0));
      d[3] = __hfma2(h2(dev::and_or(hi, 0x00F000F0u, 0x64006400u)), sixteenth, __high2half2(n8));
    }
    // Row0 + 8's -(64 + z) in the high half: 960 - (1024 + z), exact.
    static __device__ __forceinline__ __half2 minus_64_z(uint32_t m8) {
      return __hfma2(h2(m8), __float2half2_rn(-1.f), __float2half2_rn(960.f));
    }

    // Lut: unused (no table). Ptr: the stage's weight and meta tiles (shared-window addresses).
    template <typename Lut, typename Ptr>
    __device__ __forceinline__ void decode(Lut, Ptr w, Ptr s, int, uint32_t (&f)[16]) const {
      const uint4 q = dev::smem::load128(w, words_at);
      const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int g = 0; g < 2; ++g) {  // group g: k16 steps 2g, 2g + 1
        const uint32_t m0 = dev::smem::load32(s, meta_at[g]);
        const uint32_t m8 = dev::smem::load32(s, meta_at[g] + 32);
        const __half2 n8 = minus_64_z(m8);
#pragma unroll
        for (int i = 2 * g; i < 2 * g + 2; ++i) {
          __half2 d[4];
          differences(words[i], h2(m0), n8, d);
#pragma unroll
          for (int p = 0; p < 4; ++p)  // one rounding: round_to(fp16, float(q - z) * s)
            f[4 * i + p] = u32(__hmul2(d[p], __low2half2(h2(p & 1 ? m8 : m0))));
        }
      }
    }
    // The same with the pairs as q - z (exact small integers) and the scales apart, as fp32:
    // scale[2 rr + kb] is the scale of row row0 + 8 rr over block kb (k16 steps 2 kb, 2 kb + 1),
    // for the mma.sync kernel that multiplies block by block and scales the products (one FFMA
    // an accumulator a block, where the HMUL2s took one a pair).
    template <typename Lut, typename Ptr>
    __device__ __forceinline__ void decode_unscaled(Lut, Ptr w, Ptr s, uint32_t (&f)[16],
                                                    float (&scale)[4]) const {
      const uint4 q = dev::smem::load128(w, words_at);
      const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        const uint32_t m0 = dev::smem::load32(s, meta_at[g]);
        const uint32_t m8 = dev::smem::load32(s, meta_at[g] + 32);
        const __half2 n8 = minus_64_z(m8);
        scale[g] = __low2float(h2(m0));
        scale[2 + g] = __low2float(h2(m8));
#pragma unroll
        for (int i = 2 * g; i < 2 * g + 2; ++i) {
          __half2 d[4];
          differences(words[i], h2(m0), n8, d);
#pragma unroll
          for (int p = 0; p < 4; ++p) f[4 * i + p] = u32(d[p]);
        }
      }
    }
  };
};

}  // namespace kbit::variants::fragment
