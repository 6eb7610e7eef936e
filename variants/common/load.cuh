// Loads of one quantization block's K bit-plane words, as wide as the alignment allows.
#pragma once
#include <cstdint>

namespace kbit::dev {

// K consecutive words starting at p (4*K-byte aligned when K is 2 or 4): one 64- or 128-bit
// load for K = 2, 4; K separate 32-bit loads for K = 3, 5 (no wider alignment there; in shared
// memory their lane stride of 3 or 5 words is odd, so those loads are bank-conflict free).
// Works on any address space; the compiler emits LDS when p is known to be shared.
template <int K>
__device__ __forceinline__ void load_planes(const uint32_t* __restrict__ p, uint32_t (&w)[K]) {
  if constexpr (K == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (K == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int b = 0; b < K; ++b) w[b] = p[b];
  }
}

}  // namespace kbit::dev
