// Variant 01: the Phase-1 fused GEMM with inline dequantization, as the seeds describe it
// (000_f5114e19a8f68624.txt sections 3-8 and 13; 001_d16da8e7c420d2c2.txt sections 1 and
// 4.1). The baseline every later variant is measured against; README.md beside this file.
//
// * Tensor cores: mma.sync.m16n8k16, fp32 accumulation, fp16 or bf16 in and out.
// * A tile by cp.async into XOR-swizzled shared memory, read with ldmatrix.x4.
// * B tile: the raw bit-plane words and E4M4 bytes by cp.async. In the inner loop each thread
//   reads its column's K plane words, extracts the 4 indices of its B fragment (interleaved
//   across elements), looks the codebook up with __shfl_sync from a lane register loaded once,
//   scales by the decoded absmax, packs and issues the MMA.
// * The B column stride in shared memory is padded by one word so the 8 column groups of a
//   warp hit distinct banks (seed 001 section 4.1); the row inline_dequant_nopad keeps the
//   unpadded stride to measure the fix.
// * Persistent grid of #SMs blocks over work items (m-tile, n-tile, k-chunk), k-chunk fastest;
//   a block merges the consecutive chunks of one tile into one pipelined k-range. Split-K per
//   the seeds' two-tier heuristic, reduced through the shared self-cleaning workspace
//   (variants/common/splitk.cuh: all contributors add, the last converts).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "reference/error.hpp"
#include "variants/01_inline_dequant/inline_dequant.hpp"
#include "variants/common/bitplane.cuh"
#include "variants/common/cp_async.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/dispatch.hpp"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/splitk.cuh"
#include "variants/common/splitk_workspace.hpp"

namespace kbit::variants {
namespace {

struct Config {
  static constexpr int kThreads = 256;  // 8 warps
  static constexpr int kTileK = 64;     // 2 quantization blocks per column per k-tile
  static constexpr int kTileN = 128;    // 8 warps x 16 columns
  static constexpr int kWarpCols = 16;  // a warp's columns: 2 n8 MMA blocks
  static constexpr int kNBlocks = kWarpCols / 8;
  static constexpr int kKSteps = kTileK / 16;  // m16n8k16 steps per k-tile
  static constexpr int kKbPerTile = kTileK / 32;
  static constexpr int kStages = 3;              // cp.async pipeline depth (seed 001 section 4.2)
  static constexpr int kARowBytes = kTileK * 2;  // 128 B = 8 chunks of 16 B, XOR-swizzled
  static constexpr int kAbsBytes = kTileN * kKbPerTile;  // 256 E4M4 bytes per tile
  static constexpr int kMinTilesPerChunk = 8;            // split-K keeps >= 8 k-tiles per chunk
};

// Shared memory of one pipeline stage: A [16*MB rows][64], B [128 cols][stride words], absmax.
template <int K, int MB>
struct StageLayout {
  static constexpr int kABytes = 16 * MB * Config::kARowBytes;
  static constexpr int kBWordsMax = Config::kTileN * (Config::kKbPerTile * K + 1);  // padded stride
  static constexpr int kBytes = kABytes + kBWordsMax * 4 + Config::kAbsBytes;
};

struct Args {
  const void* A;
  void* C;
  const uint32_t* packed;
  const uint8_t* absmax;
  int M, N, K_dim, m_tiles, n_tiles, k_tiles, k_chunks, chunk_tiles, items_per_block;
  int b_stride;   // words per column in shared memory: 2K (+1 when padded)
  float* ws;      // split-K workspace [M][N] fp32, zero between calls
  int* counters;  // one per (m-tile, n-tile), zero between calls
  float cb[32];
  int k_bits;
};

// Issues one k-tile's copies (A rows past M and columns past K_dim are zero-filled).
template <int K, int MB, typename T>
__device__ void load_stage(const Args& a, unsigned char* st, int mt, int nt, int kt) {
  constexpr int kRows = 16 * MB;
  const int t = threadIdx.x;
  const T* A = static_cast<const T*>(a.A);
  for (int c = t; c < kRows * 8; c += Config::kThreads) {
    const int row = c / 8, ch = c % 8;
    const int grow = mt * kRows + row, gk = kt * Config::kTileK + ch * 8;
    const bool in = grow < a.M && gk < a.K_dim;
    const T* src = A + (long long)(in ? grow : 0) * a.K_dim + (in ? gk : 0);
    dev::cp_async_16(st + row * Config::kARowBytes + ((ch ^ (row & 7)) * 16), src, in ? 16 : 0);
  }
  uint32_t* sB = reinterpret_cast<uint32_t*>(st + StageLayout<K, MB>::kABytes);
  constexpr int kColWords = Config::kKbPerTile * K;
  const uint32_t* gB = a.packed + ((long long)kt * a.n_tiles + nt) * Config::kTileN * kColWords;
  for (int w = t; w < Config::kTileN * kColWords; w += Config::kThreads) {
    dev::cp_async_4(sB + (w / kColWords) * a.b_stride + w % kColWords, gB + w);
  }
  unsigned char* sAbs = st + StageLayout<K, MB>::kABytes + StageLayout<K, MB>::kBWordsMax * 4;
  const uint8_t* gAbs = a.absmax + ((long long)kt * a.n_tiles + nt) * Config::kAbsBytes;
  if (t < Config::kAbsBytes / 4) dev::cp_async_4(sAbs + t * 4, gAbs + t * 4);
}

// The 4 B-fragment values of this thread for one k16 step and one n8 block: rows
// j0, j0+1, j0+8, j0+9 of the column's 32-element block, dequantized inline.
template <int K, typename T>
__device__ __forceinline__ void dequant_fragment(const uint32_t* planes, uint32_t absmax_code,
                                                 int j0, float cb_lane, uint32_t (&b)[2]) {
  uint32_t i0 = 0, i1 = 0, i2 = 0, i3 = 0;
#pragma unroll
  for (int p = 0; p < K; ++p) {  // interleaved over the 4 elements (seed 001 section 1)
    const uint32_t w = planes[p] >> j0;
    i0 |= (w & 1u) << p;
    i1 |= ((w >> 1) & 1u) << p;
    i2 |= ((w >> 8) & 1u) << p;
    i3 |= ((w >> 9) & 1u) << p;
  }
  const float s = dev::decode_e4m4(absmax_code);
  const float w0 = __shfl_sync(dev::kFullMask, cb_lane, int(i0)) * s;
  const float w1 = __shfl_sync(dev::kFullMask, cb_lane, int(i1)) * s;
  const float w2 = __shfl_sync(dev::kFullMask, cb_lane, int(i2)) * s;
  const float w3 = __shfl_sync(dev::kFullMask, cb_lane, int(i3)) * s;
  b[0] = dev::pack2<T>(w0, w1);
  b[1] = dev::pack2<T>(w2, w3);
}

// One k-tile from shared memory: per k16 step, ldmatrix the A fragments, dequantize the two
// B fragments of this warp's 16 columns, and issue MB x 2 MMAs.
template <int K, int MB, typename T>
__device__ __forceinline__ void compute_stage(const Args& a, const unsigned char* st, float cb_lane,
                                              float (&acc)[MB][Config::kNBlocks][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t* sB = reinterpret_cast<const uint32_t*>(st + StageLayout<K, MB>::kABytes);
  const unsigned char* sAbs = st + StageLayout<K, MB>::kABytes + StageLayout<K, MB>::kBWordsMax * 4;
#pragma unroll
  for (int ks = 0; ks < Config::kKSteps; ++ks) {
    uint32_t af[MB][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const int q = lane / 8, row = mb * 16 + (q % 2) * 8 + lane % 8, ch = ks * 2 + q / 2;
      dev::ldmatrix_x4(af[mb], st + row * Config::kARowBytes + ((ch ^ (row & 7)) * 16));
    }
    const int kb = ks / 2, j0 = (ks % 2) * 16 + 2 * (lane % 4);
#pragma unroll
    for (int nb = 0; nb < Config::kNBlocks; ++nb) {
      const int col = warp * Config::kWarpCols + nb * 8 + lane / 4;
      uint32_t planes[K];
#pragma unroll
      for (int p = 0; p < K; ++p) planes[p] = sB[col * a.b_stride + kb * K + p];
      uint32_t bf[2];
      dequant_fragment<K, T>(planes, sAbs[col * Config::kKbPerTile + kb], j0, cb_lane, bf);
#pragma unroll
      for (int mb = 0; mb < MB; ++mb) dev::mma_m16n8k16<T>(acc[mb][nb], af[mb], bf);
    }
  }
}

// k-tiles [kt0, kt1) of tile (mt, nt) through the kStages-deep cp.async pipeline.
template <int K, int MB, typename T>
__device__ void mainloop(const Args& a, unsigned char* smem, int mt, int nt, int kt0, int kt1,
                         float cb_lane, float (&acc)[MB][Config::kNBlocks][4]) {
  constexpr int S = Config::kStages, kStage = StageLayout<K, MB>::kBytes;
  const int n = kt1 - kt0;
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < n) load_stage<K, MB, T>(a, smem + s * kStage, mt, nt, kt0 + s);
    dev::cp_async_commit();
  }
  for (int i = 0; i < n; ++i) {
    dev::cp_async_wait<S - 2>();  // k-tile i has landed ...
    __syncthreads();              // ... for every thread, and stage (i-1) % S is free
    if (i + S - 1 < n)
      load_stage<K, MB, T>(a, smem + ((i + S - 1) % S) * kStage, mt, nt, kt0 + i + S - 1);
    dev::cp_async_commit();
    compute_stage<K, MB, T>(a, smem + (i % S) * kStage, cb_lane, acc);
  }
  dev::cp_async_wait<0>();
  __syncthreads();  // the next tile's prologue reuses the stages
}

// Fragment element e of (mb, nb) sits at row lane/4 (+8 for e >= 2), column 2*(lane%4) + e%2.
// Writes the tile: straight to C when this block is its only contributor, else through the
// self-cleaning workspace (common/splitk.cuh), whose last contributor takes every sum in one
// L2 round trip and stores each before zeroing it (`take_all`, as scalar_gemv's end).
template <int MB, typename T>
__device__ void store_tile(const Args& a, int mt, int nt, int tile, int contributors,
                           const float (&acc)[MB][Config::kNBlocks][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  T* C = static_cast<T*>(a.C);
  // fn(r, index into C and the workspace or -1 outside M x N, sum) for each of the thread's
  // outputs, numbered r = (mb * kNBlocks + nb) * 4 + e. M*N < 2^31 (setup), so int indexes.
  auto for_each = [&](auto&& fn) {
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < Config::kNBlocks; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = mt * 16 * MB + mb * 16 + lane / 4 + (e / 2) * 8;
          const int col =
              nt * Config::kTileN + warp * Config::kWarpCols + nb * 8 + 2 * (lane % 4) + e % 2;
          fn((mb * Config::kNBlocks + nb) * 4 + e, row < a.M && col < a.N ? row * a.N + col : -1,
             acc[mb][nb][e]);
        }
  };
  dev::splitk::store_tile<MB * Config::kNBlocks * 4>(C, a.ws, a.counters + tile, contributors,
                                                     for_each);
}

template <int K, int MB, typename T>
__global__ void __launch_bounds__(Config::kThreads)
    inline_dequant_kernel(const __grid_constant__ Args a) {
  extern __shared__ uint4 smem4[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(smem4);
  const float cb_lane = dev::codebook_lane_value(a.cb, a.k_bits, threadIdx.x % 32);
  const int total = a.m_tiles * a.n_tiles * a.k_chunks;
  const int last = min(total, (blockIdx.x + 1) * a.items_per_block);
  for (int item = blockIdx.x * a.items_per_block; item < last;) {
    const int tile = item / a.k_chunks, mt = tile / a.n_tiles, nt = tile % a.n_tiles;
    const int end = min(last, (tile + 1) * a.k_chunks);  // my consecutive chunks of this tile
    const int kt0 = (item - tile * a.k_chunks) * a.chunk_tiles;
    const int kt1 = min(a.k_tiles, (end - tile * a.k_chunks) * a.chunk_tiles);
    float acc[MB][Config::kNBlocks][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < Config::kNBlocks; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mb][nb][e] = 0.0f;
    mainloop<K, MB, T>(a, smem, mt, nt, kt0, kt1, cb_lane, acc);
    // Blocks whose item ranges meet this tile's k_chunks items.
    const int contributors = dev::splitk::stripe_contributors(tile, a.k_chunks, a.items_per_block);
    store_tile<MB, T>(a, mt, nt, tile, contributors, acc);
    item = end;
  }
}

// ---------------------------------------------------------------- host side

template <typename T>
const void* kernel_for_type(int k, int mb) {
  return with_k_bits(k, [&](auto k_const) {
    return with_rows_1_to_4(mb, [&](auto mb_const) {
      return reinterpret_cast<const void*>(
          inline_dequant_kernel<decltype(k_const)::value, decltype(mb_const)::value, T>);
    });
  });
}

int stage_bytes(int k, int mb) {
  return with_k_bits(k, [&](auto k_const) {
    return with_rows_1_to_4(mb, [&](auto mb_const) {
      return StageLayout<decltype(k_const)::value, decltype(mb_const)::value>::kBytes;
    });
  });
}

struct InlineState : VariantState {
  GemmDims dims;
  bool padded = true;
  int m_blocks = 1, m_tiles = 0, n_tiles = 0, k_tiles = 0, k_chunks = 1, chunk_tiles = 0,
      items_per_block = 1;
  int grid = 0, smem_bytes = 0;
  const void* kernel = nullptr;
  SplitKWorkspace split;  // allocated when a tile is split
  std::string describe() const override {
    return "TILE_M " + std::to_string(16 * m_blocks) + " x 128 x 64, " +
           std::to_string(Config::kStages) + " stages, B stride " + (padded ? "2K+1" : "2K") +
           ", k_chunks " + std::to_string(k_chunks) + " of " + std::to_string(chunk_tiles) +
           " k-tiles, grid " + std::to_string(grid) + " x " + std::to_string(items_per_block) +
           " items";
  }
  std::int64_t extra_additions() const override { return k_chunks + 1; }
};

// The seeds' two-tier split-K heuristic (001 section 1), with the H100's numbers: tier 1
// splits hard when the output tiles cover under a quarter of the SMs; tier 2 splits in two
// when the weights overflow half the L2 and the tiles do not fill the SMs.
int choose_k_chunks(const GemmDims& d, int mn_tiles, int k_tiles, int sms, std::int64_t l2_bytes,
                    SplitMode mode) {
  const int max_chunks = std::max(1, k_tiles / Config::kMinTilesPerChunk);
  if (mode == SplitMode::force_off) return 1;
  if (mode == SplitMode::force_on) return std::min(k_tiles, std::max(2, max_chunks));
  if (mn_tiles * 4 < sms) return std::min(max_chunks, (sms + mn_tiles - 1) / mn_tiles);
  const double weight_bytes = double(d.N) * double(d.K_dim) * (d.k_bits / 8.0 + 1.0 / 32.0);
  if (weight_bytes > 0.5 * double(l2_bytes) && mn_tiles < sms) return std::min(2, max_chunks);
  return 1;
}

std::unique_ptr<VariantState> setup(const GemmDims& d, const VariantOptions& o, bool padded,
                                    const char* who) {
  require_dense_gemm_dims(d, who);
  auto s = std::make_unique<InlineState>();
  s->dims = d;
  s->padded = padded;
  s->m_blocks = d.M <= 16 ? 1 : d.M <= 32 ? 2 : d.M <= 48 ? 3 : 4;
  s->m_tiles = int((d.M + 16 * s->m_blocks - 1) / (16 * s->m_blocks));
  s->n_tiles = int((d.N + Config::kTileN - 1) / Config::kTileN);
  s->k_tiles = int((d.K_dim + Config::kTileK - 1) / Config::kTileK);
  int dev = 0, sms = 0, l2 = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int mn = s->m_tiles * s->n_tiles;
  s->k_chunks = choose_k_chunks(d, mn, s->k_tiles, sms, l2, o.split_k);
  s->chunk_tiles = (s->k_tiles + s->k_chunks - 1) / s->k_chunks;
  s->k_chunks = (s->k_tiles + s->chunk_tiles - 1) / s->chunk_tiles;
  const int total = mn * s->k_chunks;
  // Persistent: at most one block per SM; forced split-K gives every chunk its own block so
  // that each tile really has several contributors.
  s->items_per_block = o.split_k == SplitMode::force_on ? 1 : (total + sms - 1) / sms;
  s->grid = (total + s->items_per_block - 1) / s->items_per_block;
  s->kernel = kernel_for_type<__half>(d.k_bits, s->m_blocks);
  if (d.dtype == DType::bf16) s->kernel = kernel_for_type<__nv_bfloat16>(d.k_bits, s->m_blocks);
  s->smem_bytes = Config::kStages * stage_bytes(d.k_bits, s->m_blocks);
  KBIT_CUDA_CHECK(
      cudaFuncSetAttribute(s->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, s->smem_bytes));
  if (s->k_chunks > 1) {  // a tile may be split across blocks: the workspace, zeroed once
    s->split.allocate(d.M * d.N, mn);
  }
  return s;
}

void run(VariantState* state, const GemmDims& d, const GemmArgs& g, cudaStream_t stream,
         const char* who) {
  auto* s = static_cast<InlineState*>(state);
  require_tiled_args(g, d, TileConfig{Config::kTileK, Config::kTileN}, who);
  Args a{};
  a.A = g.A;
  a.C = g.C;
  a.packed = g.w.packed;
  a.absmax = g.w.absmax;
  a.M = int(d.M);
  a.N = int(d.N);
  a.K_dim = int(d.K_dim);
  a.m_tiles = s->m_tiles;
  a.n_tiles = s->n_tiles;
  a.k_tiles = s->k_tiles;
  a.k_chunks = s->k_chunks;
  a.chunk_tiles = s->chunk_tiles;
  a.items_per_block = s->items_per_block;
  a.b_stride = Config::kKbPerTile * d.k_bits + (s->padded ? 1 : 0);
  a.ws = s->split.sums.get();
  a.counters = s->split.counters.get();
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  a.k_bits = g.codebook.k_bits;
  void* params[] = {&a};
  KBIT_CUDA_CHECK(cudaLaunchKernel(s->kernel, dim3(s->grid), dim3(Config::kThreads), params,
                                   s->smem_bytes, stream));
}

}  // namespace

std::unique_ptr<VariantState> inline_dequant_setup(const GemmDims& d, const VariantOptions& o) {
  return setup(d, o, true, "inline_dequant");
}
void inline_dequant_run(VariantState* s, const GemmDims& d, const GemmArgs& g,
                        cudaStream_t stream) {
  run(s, d, g, stream, "inline_dequant");
}
std::unique_ptr<VariantState> inline_dequant_nopad_setup(const GemmDims& d,
                                                         const VariantOptions& o) {
  return setup(d, o, false, "inline_dequant_nopad");
}
void inline_dequant_nopad_run(VariantState* s, const GemmDims& d, const GemmArgs& g,
                              cudaStream_t stream) {
  run(s, d, g, stream, "inline_dequant_nopad");
}

}  // namespace kbit::variants
