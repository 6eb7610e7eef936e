// Device helpers of the read probes (read_probe.cu, read_slices.cu beside this file): kernels
// that only read a problem's bytes must keep every load live and still write C.
#pragma once
#include <cstdint>

namespace kbit::dev {

// XOR of a 16-byte load's four words: folding every word read into one value that is stored
// keeps no load dead, and lets a test prove each byte was read once.
__device__ __forceinline__ uint32_t xor4(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

// Elements first, first + stride, ... of a 16-bit C set to zero (a probe's output). Not unrolled:
// unrolled, the trip count's 64-bit division and the longer end slowed read_slices by 0.1-0.6 us
// on the Llama3 layers (same call, F-027; its blocks end once each, behind this loop).
__device__ __forceinline__ void zero_fill_u16(unsigned short* C, long long elems, long long first,
                                              long long stride) {
#pragma unroll 1
  for (long long i = first; i < elems; i += stride) C[i] = 0;
}

}  // namespace kbit::dev
