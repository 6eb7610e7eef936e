// The AWQ decode both variant 06 kernels share (docs/awq_format.md): 4-bit values to the fp16
// pairs of the reference's dequantized weight, bit for bit.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "variants/common/bits.cuh"

namespace kbit::dev::awq {

// Nibbles p and p + 4 of w >> 4p as the fp16 pair (1024 + q_lo, 1024 + q_hi): fp16's exponent
// trick, one LOP3 ((w & 0x000F000F) | 0x64006400).
__device__ __forceinline__ uint32_t pair_1024(uint32_t w) {
  return and_or(w, 0x000F000Fu, 0x64006400u);
}

// (1024 + q) - (1024 + z) = q - z exactly; times the fp16 scale, one rounding: the reference's
// round_to(fp16, float(q - z) * s), pair by pair.
__device__ __forceinline__ __half2 dequant_pair(uint32_t q1024, uint32_t z1024, uint32_t s2) {
  return __hmul2(
      __hsub2(*reinterpret_cast<const __half2*>(&q1024), *reinterpret_cast<const __half2*>(&z1024)),
      *reinterpret_cast<const __half2*>(&s2));
}

// Both halves of a pair set to its low (0x1010) or high (0x3232) half.
__device__ __forceinline__ uint32_t low_twice(uint32_t x) {
  return byte_perm(x, x, 0x1010);
}
__device__ __forceinline__ uint32_t high_twice(uint32_t x) {
  return byte_perm(x, x, 0x3232);
}

}  // namespace kbit::dev::awq
