// AWQ int4 quantizers (docs/awq_format.md), bit-exact with reference/awq.cpp: the same float32
// operations in the same order (IEEE division, rintf = round half to even, __float2half_rn),
// compiled without fast math (the project never sets it).
//
// Fused: a block takes 64 columns n (8 packed words) x one group of G rows k. Each warp loads 8
// of the weight's rows (W[n][k_dim]: k contiguous, so the loads are coalesced), reduces each
// row's min and max across the warp, derives the fp16 scale and the zero, and writes the 4-bit
// values transposed into a shared tile q_t[k][n] (72-byte rows: a warp's byte stores at 32
// consecutive k spread over 16 banks instead of 2). The block then packs whole words: 8
// consecutive threads write one row's 8 words (32 contiguous bytes, a full sector), reading
// each word's 8 values as one 8-byte load. The weight is read once; nothing but the packed
// outputs is written.
//
// Multi-pass (the version the fused one is measured against): scales and zeros, one warp a
// (group, column); q as one byte per element, one thread an element (reads along k, writes the
// transposed byte matrix); then one thread a word permutes and packs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "variants/common/cuda_check.hpp"
#include "variants/format/awq_launch.hpp"

namespace kbit::gpu::detail {
namespace {

// Column c of a group of 8 sits at nibble position kReverse[c] of its word (AWQ's order).
__constant__ int kReverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};

template <typename T>
__device__ __forceinline__ float load_as_float(const T* p);
template <>
__device__ __forceinline__ float load_as_float<float>(const float* p) {
  return __ldg(p);
}
template <>
__device__ __forceinline__ float load_as_float<__half>(const __half* p) {
  return __half2float(__ldg(p));
}

__device__ __forceinline__ float clamp_0_15(float x) {
  return fminf(fmaxf(x, 0.0f), 15.0f);
}

// The group's scale (fp16 bits) and zero from its exact min and max (reference/awq.cpp).
struct GroupQuant {
  uint16_t scale_bits;
  float s16, zero;
  __device__ __forceinline__ GroupQuant(float lo, float hi) {
    const float s32 = fmaxf(hi - lo, 1e-5f) / 15.0f;
    const __half h = __float2half_rn(s32);
    scale_bits = __half_as_ushort(h);
    s16 = __half2float(h);
    zero = clamp_0_15(rintf(-lo / s16));
  }
  __device__ __forceinline__ uint32_t q(float x) const {
    return uint32_t(clamp_0_15(rintf(x / s16) + zero));
  }
  __device__ __forceinline__ bool overflows() const { return (scale_bits & 0x7FFFu) >= 0x7C00u; }
};

// Packs the values v[0..7] of columns 8j .. 8j + 7 into one word in AWQ's order.
__device__ __forceinline__ int32_t pack_word(const uint32_t (&v)[8]) {
  uint32_t w = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c) w |= (v[c] & 0xFu) << (4 * kReverse[c]);
  return int32_t(w);
}

// The same from the values as bytes (columns 8j .. 8j + 3 in lo, 8j + 4 .. 8j + 7 in hi, each <
// 16): nibbles 0..3 take the even columns, 4..7 the odd ones (kReverse), so two PRMTs gather each
// half, one shift-or folds its bytes pairwise into nibbles and a last PRMT joins them (7
// instructions).
__device__ __forceinline__ int32_t pack_bytes(uint32_t lo, uint32_t hi) {
  const uint32_t even = __byte_perm(lo, hi, 0x6420), odd = __byte_perm(lo, hi, 0x7531);
  return int32_t(__byte_perm(even | (even >> 4), odd | (odd >> 4), 0x6420));
}

constexpr int kCols = 64;      // columns a fused block takes: 8 words
constexpr int kThreads = 256;  // 8 warps
constexpr int kRowsPerWarp = kCols / (kThreads / 32);
constexpr int kTileStride = 72;  // bytes from one k-row of the shared q tile to the next

template <typename T, int G>
__global__ void __launch_bounds__(kThreads)
    awq_fused_kernel(const T* __restrict__ w, int64_t n, int64_t k_dim, AwqOutputs out,
                     unsigned long long* errors) {
  constexpr int V = G / 32;  // values a lane holds of one row
  __shared__ __align__(16) uint8_t q_t[G * kTileStride];
  __shared__ uint16_t s_scale[kCols];
  __shared__ uint8_t s_zero[kCols];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t n0 = int64_t(blockIdx.x) * kCols, g = blockIdx.y, k0 = g * G;
  // All 8 rows' loads first: 8 V independent loads in flight per lane.
  float x[kRowsPerWarp][V];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t col = n0 + warp * kRowsPerWarp + rr;
#pragma unroll
    for (int i = 0; i < V; ++i)
      x[rr][i] = col < n ? load_as_float(w + col * k_dim + k0 + i * 32 + lane) : 0.0f;
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int r = warp * kRowsPerWarp + rr;
    const int64_t col = n0 + r;
    if (col >= n) break;  // warp-uniform; n % 8 == 0, so the tile's words are whole or absent
    float lo = x[rr][0], hi = x[rr][0];
#pragma unroll
    for (int i = 1; i < V; ++i) lo = fminf(lo, x[rr][i]), hi = fmaxf(hi, x[rr][i]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, off));
      hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, off));
    }
    const GroupQuant gq(lo, hi);
    // x * 0 is NaN exactly for an Inf or NaN x: one FFMA a value instead of a compare and a
    // branch; the rare row with one scans its values for the first position.
    float bad = 0.0f;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      q_t[(i * 32 + lane) * kTileStride + r] = uint8_t(gq.q(x[rr][i]));
      bad = fmaf(x[rr][i], 0.0f, bad);
    }
    if (isnan(bad)) {
#pragma unroll
      for (int i = 0; i < V; ++i)
        if (!isfinite(x[rr][i]))
          atomicMin(errors, (unsigned long long)(col * k_dim + k0 + i * 32 + lane));
    }
    if (lane == 0) {
      s_scale[r] = gq.scale_bits;
      s_zero[r] = uint8_t(gq.zero);
      if (gq.overflows()) atomicMin(errors + 1, (unsigned long long)(g * n + col));
    }
  }
  __syncthreads();
  const int64_t wpr = n / 8, j0 = n0 / 8;
  for (int idx = threadIdx.x; idx < G * 8; idx += kThreads) {
    const int k = idx >> 3, jj = idx & 7;
    if (j0 + jj >= wpr) continue;
    const uint2 b = *reinterpret_cast<const uint2*>(q_t + k * kTileStride + 8 * jj);
    out.qweight[(k0 + k) * wpr + j0 + jj] = pack_bytes(b.x, b.y);
  }
  if (threadIdx.x < 8 && j0 + threadIdx.x < wpr) {
    uint32_t v[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) v[c] = s_zero[8 * threadIdx.x + c];
    out.qzeros[g * wpr + j0 + threadIdx.x] = pack_word(v);
  }
  if (threadIdx.x < kCols && n0 + threadIdx.x < n)
    out.scales[g * n + n0 + threadIdx.x] = s_scale[threadIdx.x];
}

// Multi-pass 1: one warp a (group, column): the scale, the zero (a byte), the checks.
template <typename T, int G>
__global__ void awq_scales_kernel(const T* __restrict__ w, int64_t n, int64_t k_dim,
                                  uint16_t* scales, uint8_t* zeros, unsigned long long* errors) {
  const int lane = threadIdx.x & 31;
  const int64_t ng = k_dim / G;
  const int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;  // g * n + col
  if (item >= ng * n) return;
  const int64_t g = item / n, col = item - g * n;
  float lo = INFINITY, hi = -INFINITY;
  for (int k = lane; k < G; k += 32) {
    const float v = load_as_float(w + col * k_dim + g * G + k);
    if (!isfinite(v)) atomicMin(errors, (unsigned long long)(col * k_dim + g * G + k));
    lo = fminf(lo, v), hi = fmaxf(hi, v);
  }
  for (int off = 16; off > 0; off >>= 1) {
    lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, off));
    hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, off));
  }
  if (lane != 0) return;
  const GroupQuant gq(lo, hi);
  scales[item] = gq.scale_bits;
  zeros[item] = uint8_t(gq.zero);
  if (gq.overflows()) atomicMin(errors + 1, (unsigned long long)item);
}

// Multi-pass 2: one thread an element, q[k][col] as a byte (the transpose, written strided).
template <typename T, int G>
__global__ void awq_values_kernel(const T* __restrict__ w, int64_t n, int64_t k_dim,
                                  const uint16_t* scales, const uint8_t* zeros, uint8_t* q) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * k_dim) return;
  const int64_t col = i / k_dim, k = i - col * k_dim, item = (k / G) * n + col;
  const float s16 = __half2float(__ushort_as_half(scales[item]));
  q[k * n + col] = uint8_t(clamp_0_15(rintf(load_as_float(w + i) / s16) + float(zeros[item])));
}

// Multi-pass 3: one thread a word of qweight (then of qzeros): 8 bytes, permuted and packed.
__global__ void awq_pack_kernel(const uint8_t* q, const uint8_t* zeros, int64_t n, int64_t k_dim,
                                int64_t groups, AwqOutputs out) {
  const int64_t wpr = n / 8, words = k_dim * wpr,
                i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= words + groups * wpr) return;
  const bool zero_word = i >= words;
  const int64_t wi = zero_word ? i - words : i, row = wi / wpr, j = wi - row * wpr;
  const uint8_t* src = (zero_word ? zeros : q) + row * n + 8 * j;
  uint32_t v[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) v[c] = src[c];
  (zero_word ? out.qzeros : out.qweight)[wi] = pack_word(v);
}

// fn(integral_constant<G>, typed weight pointer) for the runtime group size and input dtype
// (fp16 or fp32; the host entry points refuse the others first).
template <typename Fn>
void with_group_and_type(int group, DType in, const void* w, Fn&& fn) {
  auto typed = [&](auto g_const) {
    if (in == DType::f16)
      fn(g_const, static_cast<const __half*>(w));
    else
      fn(g_const, static_cast<const float*>(w));
  };
  switch (group) {
    case 32:
      return typed(std::integral_constant<int, 32>{});
    case 64:
      return typed(std::integral_constant<int, 64>{});
    default:
      return typed(std::integral_constant<int, 128>{});
  }
}

}  // namespace

void launch_awq_fused(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                      const AwqOutputs& out, unsigned long long* errors, cudaStream_t stream) {
  with_group_and_type(group, in, w, [&](auto g_const, const auto* wp) {
    constexpr int G = decltype(g_const)::value;
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(wp)>>;
    const dim3 grid(unsigned((n + kCols - 1) / kCols), unsigned(k_dim / G));
    awq_fused_kernel<T, G><<<grid, kThreads, 0, stream>>>(wp, n, k_dim, out, errors);
    KBIT_CUDA_CHECK(cudaGetLastError());
  });
}

void launch_awq_multipass(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                          const AwqOutputs& out, std::uint8_t* scratch, unsigned long long* errors,
                          cudaStream_t stream) {
  with_group_and_type(group, in, w, [&](auto g_const, const auto* wp) {
    constexpr int G = decltype(g_const)::value;
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(wp)>>;
    const std::int64_t groups = k_dim / G;
    std::uint8_t* q = scratch;
    std::uint8_t* zeros = scratch + n * k_dim;
    const unsigned items_blocks = unsigned((groups * n * 32 + 255) / 256);
    const unsigned elem_blocks = unsigned((n * k_dim + 255) / 256);
    const unsigned word_blocks = unsigned((k_dim * (n / 8) + groups * (n / 8) + 255) / 256);
    awq_scales_kernel<T, G>
        <<<items_blocks, 256, 0, stream>>>(wp, n, k_dim, out.scales, zeros, errors);
    KBIT_CUDA_CHECK(cudaGetLastError());
    awq_values_kernel<T, G><<<elem_blocks, 256, 0, stream>>>(wp, n, k_dim, out.scales, zeros, q);
    KBIT_CUDA_CHECK(cudaGetLastError());
    awq_pack_kernel<<<word_blocks, 256, 0, stream>>>(q, zeros, n, k_dim, groups, out);
    KBIT_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace kbit::gpu::detail
