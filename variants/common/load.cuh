// Global loads of bit-plane words, as wide as the alignment allows.
#pragma once
#include <cstdint>

namespace kbit::dev {

// K consecutive words starting at p (p is 4*K-byte aligned when K is 2 or 4): one LDG.64 or
// LDG.128 for K = 2, 4; K separate LDG.32 for K = 3, 5 (no wider alignment there).
template <int K>
__device__ __forceinline__ void load_planes_global(const uint32_t* __restrict__ p,
                                                   uint32_t (&w)[K]) {
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

namespace kbit::dev {

// Streamed, read-once weights. L1::no_allocate keeps them out of L1; L2::<N>B asks L2 to
// fetch N-byte chunks from DRAM (fewer, larger DRAM requests for a contiguous stream).
// PTX ISA 7.4, sm_80+. N = 0 means a plain __ldg.
template <int N>
__device__ __forceinline__ uint4 ld_stream_v4(const uint32_t* p) {
  uint4 v;
  if constexpr (N == 256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  } else if constexpr (N == 128) {
    asm("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  } else {
    v = __ldg(reinterpret_cast<const uint4*>(p));
  }
  return v;
}

template <int N>
__device__ __forceinline__ uint2 ld_stream_v2(const uint32_t* p) {
  uint2 v;
  if constexpr (N == 256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];"
        : "=r"(v.x), "=r"(v.y)
        : "l"(p));
  } else if constexpr (N == 128) {
    asm("ld.global.nc.L1::no_allocate.L2::128B.v2.u32 {%0, %1}, [%2];"
        : "=r"(v.x), "=r"(v.y)
        : "l"(p));
  } else {
    v = __ldg(reinterpret_cast<const uint2*>(p));
  }
  return v;
}

template <int N>
__device__ __forceinline__ uint32_t ld_stream_u32(const uint32_t* p) {
  uint32_t v;
  if constexpr (N == 256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  } else if constexpr (N == 128) {
    asm("ld.global.nc.L1::no_allocate.L2::128B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  } else {
    v = __ldg(p);
  }
  return v;
}

template <int N>
__device__ __forceinline__ uint32_t ld_stream_u8(const uint8_t* p) {
  uint32_t v;
  if constexpr (N == 256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.u8 %0, [%1];" : "=r"(v) : "l"(p));
  } else if constexpr (N == 128) {
    asm("ld.global.nc.L1::no_allocate.L2::128B.u8 %0, [%1];" : "=r"(v) : "l"(p));
  } else {
    v = __ldg(p);
  }
  return v;
}

// K plane words of a streamed tile (as load_planes_global, with the stream hint N).
template <int K, int N>
__device__ __forceinline__ void load_planes_stream(const uint32_t* __restrict__ p,
                                                   uint32_t (&w)[K]) {
  if constexpr (K == 4) {
    const uint4 v = ld_stream_v4<N>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (K == 2) {
    const uint2 v = ld_stream_v2<N>(p);
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int b = 0; b < K; ++b) w[b] = ld_stream_u32<N>(p + b);
  }
}

}  // namespace kbit::dev
