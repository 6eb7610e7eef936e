// GPU format kernels. Compiled without fast math: they must match the reference bit for bit.
#include <cuda_runtime.h>

#include <string>

#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/fragment.hpp"
#include "variants/common/bitplane.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/format/format_kernels.hpp"

namespace kbit::gpu {
namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNone = ~0ull;

int grid_for(std::int64_t work_items, int per_block) {
  const std::int64_t g = (work_items + per_block - 1) / per_block;
  return int(g < 1 ? 1 : (g > 65535 * 16 ? 65535 * 16 : g));
}

// ---- non-finite scan: the smallest index of a bad element, via atomicMin ----
template <typename T, bool kAbsmaxRules>
__global__ void find_first_bad_kernel(const T* x, std::int64_t n, unsigned long long* first) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = dev::to_float(x[i]);
    const bool bad = kAbsmaxRules ? !(isfinite(v) && v >= 0.0f) : !isfinite(v);
    if (bad) atomicMin(first, (unsigned long long)i);
  }
}

template <typename T, bool kAbsmaxRules>
std::int64_t first_bad(const T* x, std::int64_t n, cudaStream_t stream) {
  unsigned long long* d_first = nullptr;
  KBIT_CUDA_CHECK(cudaMallocAsync(&d_first, sizeof(unsigned long long), stream));
  KBIT_CUDA_CHECK(cudaMemsetAsync(d_first, 0xFF, sizeof(unsigned long long), stream));
  find_first_bad_kernel<T, kAbsmaxRules>
      <<<grid_for(n, kThreads * 4), kThreads, 0, stream>>>(x, n, d_first);
  KBIT_CHECK_LAUNCH();
  unsigned long long h_first = kNone;
  KBIT_CUDA_CHECK(
      cudaMemcpyAsync(&h_first, d_first, sizeof(h_first), cudaMemcpyDeviceToHost, stream));
  KBIT_CUDA_CHECK(cudaFreeAsync(d_first, stream));
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return h_first == kNone ? -1 : std::int64_t(h_first);
}

// ---- quantize: one warp per block of 32 ----
template <typename T, int K>
__global__ void quantize_kernel(const T* __restrict__ x, std::int64_t n, CodebookArg cb,
                                QuantizeOutputs out, unsigned long long* saturated) {
  const int lane = threadIdx.x & 31;
  const std::int64_t nblocks = (n + 31) / 32;
  const std::int64_t warps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t blk = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; blk < nblocks;
       blk += warps) {
    const std::int64_t i = blk * 32 + lane;
    const float v = i < n ? dev::to_float(x[i]) : 0.0f;  // pad elements are 0.0f
    float amax = fabsf(v);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      amax = fmaxf(amax, __shfl_xor_sync(dev::kFullMask, amax, off));
    const float vn = v / fmaxf(amax, 1e-8f);  // IEEE division (no fast math)
    uint32_t best = 0;
    float best_d = fabsf(vn - cb.v[0]);
#pragma unroll
    for (int c = 1; c < (1 << K); ++c) {
      const float d = fabsf(vn - cb.v[c]);
      if (d < best_d) {  // strict: ties keep the lower index
        best_d = d;
        best = c;
      }
    }
    const uint32_t word = dev::ballot_planes<K>(best, lane);
    if (lane < K) out.packed[blk * K + lane] = word;
    if (lane == 0) {
      if (out.absmax) out.absmax[blk] = amax;
      if (out.absmax_fp16) out.absmax_fp16[blk] = __half_as_ushort(__float2half_rn(amax));
      bool sat;
      const uint32_t code = dev::encode_e4m4(amax, &sat);
      if (out.absmax_e4m4) out.absmax_e4m4[blk] = uint8_t(code);
      if (sat) atomicAdd(saturated, 1ull);
    }
  }
}

template <typename T>
void launch_quantize(const T* x, std::int64_t n, const CodebookArg& cb, const QuantizeOutputs& out,
                     unsigned long long* saturated, cudaStream_t stream) {
  const int grid = grid_for((n + 31) / 32, kThreads / 32);
  switch (cb.k_bits) {
    case 2:
      quantize_kernel<T, 2><<<grid, kThreads, 0, stream>>>(x, n, cb, out, saturated);
      break;
    case 3:
      quantize_kernel<T, 3><<<grid, kThreads, 0, stream>>>(x, n, cb, out, saturated);
      break;
    case 4:
      quantize_kernel<T, 4><<<grid, kThreads, 0, stream>>>(x, n, cb, out, saturated);
      break;
    case 5:
      quantize_kernel<T, 5><<<grid, kThreads, 0, stream>>>(x, n, cb, out, saturated);
      break;
  }
  KBIT_CHECK_LAUNCH();
}

// ---- dequantize: each thread 8 consecutive elements of one block (16-byte stores) ----
template <int K>
__device__ __forceinline__ void load_planes(const uint32_t* __restrict__ packed, std::int64_t blk,
                                            uint32_t (&p)[K]) {
#pragma unroll
  for (int b = 0; b < K; ++b) p[b] = __ldg(packed + blk * K + b);
}

template <AbsmaxStorage S>
__device__ __forceinline__ float load_scale(const void* absmax, std::int64_t blk) {
  if constexpr (S == AbsmaxStorage::e4m4)
    return dev::decode_e4m4(static_cast<const uint8_t*>(absmax)[blk]);
  if constexpr (S == AbsmaxStorage::fp16)
    return __half2float(static_cast<const __half*>(absmax)[blk]);
  return static_cast<const float*>(absmax)[blk];
}

template <typename Out, int K, AbsmaxStorage S>
__global__ void dequantize_kernel(const uint32_t* __restrict__ packed,
                                  const void* __restrict__ absmax, std::int64_t n, CodebookArg cb,
                                  Out* __restrict__ out) {
  __shared__ float s_cb[32];  // 32 entries in 32 banks: any index pattern is conflict-free
  if (threadIdx.x < 32) s_cb[threadIdx.x] = cb.v[threadIdx.x];
  __syncthreads();
  const std::int64_t groups = ((n + 31) / 32) * 4;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const std::int64_t blk = g >> 2;
    const int j0 = int(g & 3) * 8;
    uint32_t p[K];
    load_planes<K>(packed, blk, p);
    const float scale = load_scale<S>(absmax, blk);
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = s_cb[dev::extract_index<K>(p, j0 + j)] * scale;
    const std::int64_t e0 = blk * 32 + j0;
    if (e0 + 8 <= n) {
      if constexpr (sizeof(Out) == 2) {
        uint4 w;
        w.x = dev::pack2<Out>(v[0], v[1]);
        w.y = dev::pack2<Out>(v[2], v[3]);
        w.z = dev::pack2<Out>(v[4], v[5]);
        w.w = dev::pack2<Out>(v[6], v[7]);
        *reinterpret_cast<uint4*>(out + e0) = w;
      } else {
        reinterpret_cast<float4*>(out + e0)[0] = make_float4(v[0], v[1], v[2], v[3]);
        reinterpret_cast<float4*>(out + e0)[1] = make_float4(v[4], v[5], v[6], v[7]);
      }
    } else {
      for (int j = 0; j < 8 && e0 + j < n; ++j) out[e0 + j] = dev::from_float<Out>(v[j]);
    }
  }
}

template <typename Out, AbsmaxStorage S>
void launch_dequantize(const uint32_t* packed, const void* absmax, std::int64_t n,
                       const CodebookArg& cb, Out* out, cudaStream_t stream) {
  const int grid = grid_for(((n + 31) / 32) * 4, kThreads);
  switch (cb.k_bits) {
    case 2:
      dequantize_kernel<Out, 2, S><<<grid, kThreads, 0, stream>>>(packed, absmax, n, cb, out);
      break;
    case 3:
      dequantize_kernel<Out, 3, S><<<grid, kThreads, 0, stream>>>(packed, absmax, n, cb, out);
      break;
    case 4:
      dequantize_kernel<Out, 4, S><<<grid, kThreads, 0, stream>>>(packed, absmax, n, cb, out);
      break;
    case 5:
      dequantize_kernel<Out, 5, S><<<grid, kThreads, 0, stream>>>(packed, absmax, n, cb, out);
      break;
  }
  KBIT_CHECK_LAUNCH();
}

template <typename Out>
void dequantize_to(const uint32_t* packed, const void* absmax, AbsmaxStorage s, std::int64_t n,
                   const CodebookArg& cb, Out* out, cudaStream_t stream) {
  switch (s) {
    case AbsmaxStorage::e4m4:
      launch_dequantize<Out, AbsmaxStorage::e4m4>(packed, absmax, n, cb, out, stream);
      break;
    case AbsmaxStorage::fp16:
      launch_dequantize<Out, AbsmaxStorage::fp16>(packed, absmax, n, cb, out, stream);
      break;
    case AbsmaxStorage::fp32:
      launch_dequantize<Out, AbsmaxStorage::fp32>(packed, absmax, n, cb, out, stream);
      break;
  }
}

// ---- E4M4 encode of float absmax ----
__global__ void encode_e4m4_kernel(const float* __restrict__ absmax, std::int64_t n,
                                   uint8_t* __restrict__ out, unsigned long long* saturated) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    bool sat;
    out[i] = uint8_t(dev::encode_e4m4(absmax[i], &sat));
    if (sat) atomicAdd(saturated, 1ull);
  }
}

// ---- repack: one thread per 32-element block of the tiled layout ----
struct RepackGeometry {
  std::int64_t N, kblocks, n_tiles, total_blocks;
  int k_bits, tile_n, kb_per_tile;
};

RepackGeometry repack_geometry(const TiledGeometry& g) {
  return {g.N,
          g.K_dim / 32,
          g.n_tiles(),
          g.k_tiles() * g.n_tiles() * g.tiles.tile_n * g.kb_per_tile(),
          g.k_bits,
          g.tiles.tile_n,
          g.kb_per_tile()};
}

// Tiled block t -> flat block, or -1 for padding.
__device__ __forceinline__ std::int64_t flat_block_of(const RepackGeometry& g, std::int64_t t) {
  const int kb = int(t % g.kb_per_tile);
  std::int64_t r = t / g.kb_per_tile;
  const int col = int(r % g.tile_n);
  r /= g.tile_n;
  const std::int64_t nt = r % g.n_tiles, kt = r / g.n_tiles;
  const std::int64_t n = nt * g.tile_n + col, kblk = kt * g.kb_per_tile + kb;
  return (n < g.N && kblk < g.kblocks) ? n * g.kblocks + kblk : -1;
}

template <bool kToTiled>
__global__ void repack_kernel(RepackGeometry g, const uint32_t* __restrict__ src_p,
                              const uint8_t* __restrict__ src_a, uint32_t* __restrict__ dst_p,
                              uint8_t* __restrict__ dst_a) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < g.total_blocks;
       t += stride) {
    const std::int64_t f = flat_block_of(g, t);
    if (kToTiled) {
      for (int b = 0; b < g.k_bits; ++b)
        dst_p[t * g.k_bits + b] = f >= 0 ? src_p[f * g.k_bits + b] : 0u;
      dst_a[t] = f >= 0 ? src_a[f] : uint8_t(0);
    } else if (f >= 0) {
      for (int b = 0; b < g.k_bits; ++b) dst_p[f * g.k_bits + b] = src_p[t * g.k_bits + b];
      dst_a[f] = src_a[t];
    }
  }
}

}  // namespace

CodebookArg make_codebook_arg(const std::vector<float>& codebook, int k_bits) {
  validate_codebook(codebook, k_bits);
  CodebookArg a{};
  for (std::size_t i = 0; i < codebook.size(); ++i) a.v[i] = codebook[i];
  a.k_bits = k_bits;
  return a;
}

std::int64_t quantize(DType in, const void* x, std::int64_t n, const std::vector<float>& codebook,
                      int k_bits, const QuantizeOutputs& out, cudaStream_t stream) {
  const CodebookArg cb = make_codebook_arg(codebook, k_bits);
  if (n < 1) throw Error("quantize: element count " + std::to_string(n) + " must be at least 1");
  if (!out.packed) throw Error("quantize: the packed output is required");
  std::int64_t bad = -1;
  switch (in) {
    case DType::f32:
      bad = first_bad<float, false>(static_cast<const float*>(x), n, stream);
      break;
    case DType::f16:
      bad = first_bad<__half, false>(static_cast<const __half*>(x), n, stream);
      break;
    case DType::bf16:
      bad = first_bad<__nv_bfloat16, false>(static_cast<const __nv_bfloat16*>(x), n, stream);
      break;
  }
  if (bad >= 0)
    throw Error("quantize: element " + std::to_string(bad) +
                " is not finite; input must be finite");
  unsigned long long* d_sat = nullptr;
  KBIT_CUDA_CHECK(cudaMallocAsync(&d_sat, sizeof(unsigned long long), stream));
  KBIT_CUDA_CHECK(cudaMemsetAsync(d_sat, 0, sizeof(unsigned long long), stream));
  switch (in) {
    case DType::f32:
      launch_quantize(static_cast<const float*>(x), n, cb, out, d_sat, stream);
      break;
    case DType::f16:
      launch_quantize(static_cast<const __half*>(x), n, cb, out, d_sat, stream);
      break;
    case DType::bf16:
      launch_quantize(static_cast<const __nv_bfloat16*>(x), n, cb, out, d_sat, stream);
      break;
  }
  unsigned long long sat = 0;
  KBIT_CUDA_CHECK(cudaMemcpyAsync(&sat, d_sat, sizeof(sat), cudaMemcpyDeviceToHost, stream));
  KBIT_CUDA_CHECK(cudaFreeAsync(d_sat, stream));
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::int64_t(sat);
}

void dequantize(const std::uint32_t* packed, const void* absmax, AbsmaxStorage storage,
                std::int64_t n, const CodebookArg& cb, DType out_type, void* out,
                cudaStream_t stream) {
  check_k_bits(cb.k_bits);
  if (n < 1) return;
  switch (out_type) {
    case DType::f32:
      dequantize_to(packed, absmax, storage, n, cb, static_cast<float*>(out), stream);
      break;
    case DType::f16:
      dequantize_to(packed, absmax, storage, n, cb, static_cast<__half*>(out), stream);
      break;
    case DType::bf16:
      dequantize_to(packed, absmax, storage, n, cb, static_cast<__nv_bfloat16*>(out), stream);
      break;
  }
}

std::int64_t encode_e4m4(const float* absmax, std::int64_t n, std::uint8_t* out,
                         cudaStream_t stream) {
  if (n < 1) return 0;
  const std::int64_t bad = first_bad<float, true>(absmax, n, stream);
  if (bad >= 0) {
    throw Error("encode_e4m4: absmax " + std::to_string(bad) +
                " is negative or not finite (the format stores 0 .. 31)");
  }
  unsigned long long* d_sat = nullptr;
  KBIT_CUDA_CHECK(cudaMallocAsync(&d_sat, sizeof(unsigned long long), stream));
  KBIT_CUDA_CHECK(cudaMemsetAsync(d_sat, 0, sizeof(unsigned long long), stream));
  encode_e4m4_kernel<<<grid_for(n, kThreads * 4), kThreads, 0, stream>>>(absmax, n, out, d_sat);
  KBIT_CHECK_LAUNCH();
  unsigned long long sat = 0;
  KBIT_CUDA_CHECK(cudaMemcpyAsync(&sat, d_sat, sizeof(sat), cudaMemcpyDeviceToHost, stream));
  KBIT_CUDA_CHECK(cudaFreeAsync(d_sat, stream));
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::int64_t(sat);
}

void repack(const std::uint32_t* packed_flat, const std::uint8_t* absmax_flat,
            const TiledGeometry& geo, std::uint32_t* packed_tiled, std::uint8_t* absmax_tiled,
            cudaStream_t stream) {
  const RepackGeometry g = repack_geometry(geo);
  repack_kernel<true><<<grid_for(g.total_blocks, kThreads), kThreads, 0, stream>>>(
      g, packed_flat, absmax_flat, packed_tiled, absmax_tiled);
  KBIT_CHECK_LAUNCH();
}

void unrepack(const std::uint32_t* packed_tiled, const std::uint8_t* absmax_tiled,
              const TiledGeometry& geo, std::uint32_t* packed_flat, std::uint8_t* absmax_flat,
              cudaStream_t stream) {
  const RepackGeometry g = repack_geometry(geo);
  repack_kernel<false><<<grid_for(g.total_blocks, kThreads), kThreads, 0, stream>>>(
      g, packed_tiled, absmax_tiled, packed_flat, absmax_flat);
  KBIT_CHECK_LAUNCH();
}

namespace {

// One block a tile, 256 threads (t = 32 w + 4 g + c, lane = t mod 32: rows 16w + g and + 8,
// blocks 0, 1), each writing its own words of the fragment order and, for c = 0, its code word:
// reference/fragment.hpp. K = 4: words 4t .. 4t + 3 (one uint4); K = 2: words 2t, 2t + 1 (one
// uint2); K = 3: words 96w + 2 lane, + 1 (one uint2) and 96w + 64 + lane; K = 5: words
// 160w + 4 lane .. + 3 (one uint4) and the fifth word 160w + 128 + lane.
template <int K>
__global__ void fragment_order_kernel(const uint32_t* __restrict__ tiled,
                                      const uint8_t* __restrict__ codes, uint32_t* __restrict__ out,
                                      uint8_t* __restrict__ out_codes) {
  constexpr int kTileWords = 256 * K;  // fragment_tile_words(K)
  const long long tile = blockIdx.x;
  const int t = threadIdx.x, w = t >> 5, lane = t & 31, g = (t >> 2) & 7, c = t & 3;
  const uint32_t* in = tiled + tile * kTileWords;
  uint32_t* dst = out + tile * kTileWords;
  // pairs[i], i = 2 rr + kb: byte Q = the interleaved code of pair Q (bit 2p + s = plane p of
  // element 8Q + 2c + s), bits 2K .. 7 zero; K = 5: planes 0..3 there, plane 4 in `fifth` at the
  // bits the decoder's rotation by 2i and LOP3 masks expect (reference/fragment.cpp).
  constexpr int kPairPlanes = K < 4 ? K : 4;
  uint32_t pairs[4];
  uint32_t fifth = 0, code_word = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int rr = i >> 1, kb = i & 1, r = 16 * w + g + 8 * rr;
    const uint32_t* planes = in + (r * 2 + kb) * K;
    uint32_t v = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int p = 0; p < kPairPlanes; ++p)
          v |= ((planes[p] >> (8 * q + 2 * c + s)) & 1u) << (8 * q + 2 * p + s);
    pairs[i] = v;
    if constexpr (K == 5) {
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const int bit = q < 2 ? (s == 0 ? 16 : 7) + 8 * q + 2 * i
                                : ((s == 0 ? 0 : 23) + 8 * (q - 2) + 2 * i) % 32;
          fifth |= ((planes[4] >> (8 * q + 2 * c + s)) & 1u) << bit;
        }
    }
    code_word |= uint32_t(codes[tile * FragmentTile::kCodes + r * 2 + kb]) << (8 * i);
  }
  if constexpr (K == 4) {
    reinterpret_cast<uint4*>(dst)[t] = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  } else if constexpr (K == 5) {  // K = 4's words in the row block's 160-word chunk, then plane 4
    reinterpret_cast<uint4*>(dst + 160 * w)[lane] =
        make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
    dst[160 * w + 128 + lane] = fifth;
  } else if constexpr (K == 2) {  // word kb: row r0's pairs low, row r0 + 8's high
    reinterpret_cast<uint2*>(dst)[t] =
        make_uint2(pairs[0] | (pairs[2] << 4), pairs[1] | (pairs[3] << 4));
  } else {  // K == 3: pair word 3's planes p in bits 6, 7 of each byte of word p
    constexpr uint32_t kLow2 = 0x03030303u;
    const uint32_t w0 = pairs[0] | ((pairs[3] & kLow2) << 6);
    const uint32_t w1 = pairs[1] | (((pairs[3] >> 2) & kLow2) << 6);
    const uint32_t w2 = pairs[2] | (((pairs[3] >> 4) & kLow2) << 6);
    reinterpret_cast<uint2*>(dst + 96 * w)[lane] = make_uint2(w0, w1);
    dst[96 * w + 64 + lane] = w2;
  }
  if (c == 0)
    reinterpret_cast<uint32_t*>(out_codes + tile * FragmentTile::kCodes)[t >> 2] = code_word;
}

}  // namespace

void fragment_order(int k_bits, const std::uint32_t* tiled, const std::uint8_t* codes,
                    std::int64_t tiles, std::uint32_t* out, std::uint8_t* out_codes,
                    cudaStream_t stream) {
  if (k_bits < FragmentTile::kMinBits || k_bits > FragmentTile::kMaxBits)
    throw Error("fragment_order: the fragment-order layout is K = 2..5, not K = " +
                std::to_string(k_bits));
  if (tiles <= 0) return;
  if (tiles >= (1ll << 31))
    throw Error("fragment_order: " + std::to_string(tiles) + " tiles reach the grid limit 2^31");
  const unsigned grid = unsigned(tiles);
  switch (k_bits) {
    case 2:
      fragment_order_kernel<2><<<grid, 256, 0, stream>>>(tiled, codes, out, out_codes);
      break;
    case 3:
      fragment_order_kernel<3><<<grid, 256, 0, stream>>>(tiled, codes, out, out_codes);
      break;
    case 4:
      fragment_order_kernel<4><<<grid, 256, 0, stream>>>(tiled, codes, out, out_codes);
      break;
    default:
      fragment_order_kernel<5><<<grid, 256, 0, stream>>>(tiled, codes, out, out_codes);
      break;
  }
  KBIT_CHECK_LAUNCH();
}

}  // namespace kbit::gpu
