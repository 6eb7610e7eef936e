// Global loads of bit-plane words, as wide as the alignment allows.
#pragma once
#include <cstdint>

namespace kbit::dev {

// K consecutive words starting at p (p is 4*K-byte aligned when K is 2 or 4): one LDG.64 or
// LDG.128 for K = 2, 4; K separate LDG.32 for K = 3, 5 (no wider alignment there).
template <int K>
__device__ __forceinline__ void load_planes_global(const uint32_t* __restrict__ p, uint32_t (&w)[K]) {
  if constexpr (K == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (K == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int b = 0; b < K; ++b) w[b] = __ldg(p + b);
  }
}

}  // namespace kbit::dev
