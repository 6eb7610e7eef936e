// Device helpers of the read probes (variants/read_probe.cu, variants/read_slices_probe.cu):
// kernels that only read a problem's bytes must keep every load live and still write C.
#pragma once
#include <cstdint>

namespace kbit::dev {

// XOR of a 16-byte load's four words: folding every word read into one value that is stored
// keeps no load dead, and lets a test prove each byte was read once.
__device__ __forceinline__ uint32_t xor4(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

// XOR of the 16-byte elements first, first + stride, ... of p[0, n) (a thread's share of a
// buffer), kUnroll loads issued before any is folded: a probe's own reads must keep several loads
// in flight, or it times itself. kStreaming: ld.global.cs (evict first: weights read once).
// Index: 32 bits where the range allows (read_slices' stage reader measured 0.6-3 us slower on
// the Llama3 layers with 64-bit indices, session 25).
template <int kUnroll, bool kStreaming, typename Index = long long>
__device__ __forceinline__ uint32_t xor_strided(const uint4* p, Index n, Index first,
                                                Index stride) {
  uint32_t acc = 0;
  Index i = first;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      v[j] = kStreaming ? __ldcs(p + i + j * stride) : p[i + j * stride];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) acc ^= xor4(v[j]);
  }
  for (; i < n; i += stride) acc ^= xor4(kStreaming ? __ldcs(p + i) : p[i]);
  return acc;
}

// Elements first, first + stride, ... of a 16-bit C set to zero (a probe's output).
__device__ __forceinline__ void zero_fill_u16(unsigned short* C, long long elems, long long first,
                                              long long stride) {
  for (long long i = first; i < elems; i += stride) C[i] = 0;
}

}  // namespace kbit::dev
