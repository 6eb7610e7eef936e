// awq_gemv: M = 1..4 rows on the AutoAWQ checkpoint tensors as they are (no repack), fp16. Two
// kernels, the option `tensor_cores` picks (README.md has what each measured):
//
// * AWQ's interleave is what makes the decode cheap in both: nibbles p and p + 4 of a word are
//   columns 2p and 2p + 1, so one LOP3 of word >> 4p with 0x000F000F | 0x64006400 gives the
//   fp16 pair (1024 + q) of those columns; minus the pair 1024 + z (from the qzeros word the same
//   way) is q - z exactly, and times the scale pair is the reference's fp16 weight.
// * tensor_cores = 1 (mma): a warp's lanes (g, c) = (lane / 4, lane % 4) read word column
//   j0 + g at rows 2c, 2c + 1, 2c + 8, 2c + 9 of each k16 step, which is the A fragment of
//   mma.m16n8k16 with the 16 rows = columns 2p, 2p + 1 of the 8 words (one MMA per p). A PRMT
//   of the words of rows k, k + 1 puts a column's two nibbles 16 bits apart, the LOP3 above then
//   gives the k pair. The activations are the B fragment (tokens = MMA columns, 4 of 8 used).
//   About 2.3 instructions a weight, whatever M.
// * tensor_cores = 0 (fma): a lane owns one word (8 columns) and walks k; the weights go to
//   fp32 and M FMAs each (about 3 + M instructions a weight).
// * A block is a column range x a K range. mma: its 8 warps sit side by side on 64 words (256
//   contiguous bytes of each qweight row) and walk the whole range; fma: they share 32 words and
//   take the range's 16-row chunks in turn, adding up through shared memory. Blocks of one column
//   range split K and end through the self-cleaning split-K workspace (variants/common/splitk.cuh).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "reference/error.hpp"
#include "variants/06_awq/awq.hpp"
#include "variants/common/awq_decode.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/dispatch.hpp"
#include "variants/common/launch.hpp"
#include "variants/common/mma.cuh"
#include "variants/common/occupancy.hpp"
#include "variants/common/splitk.cuh"
#include "variants/common/splitk_workspace.hpp"

namespace kbit::variants {
namespace {

struct GemvConfig {
  static constexpr int kThreads = 256, kWarps = kThreads / 32;
  static constexpr int kWaves = 4;  // blocks for this many waves: equal blocks even out the SMs
};
// The fma kernel: one word a lane, the block's warps take turns over its k range.
struct FmaConfig : GemvConfig {
  static constexpr int kWordsPerBlock = 32;      // 256 output columns
  static constexpr int kChunkK = 16;             // rows of a warp step: 16 loads in flight a lane
  static constexpr int kMinChunks = 2 * kWarps;  // a block's k range: two steps a warp at least
};
// The mma kernel: 8 words a warp, 8 warps side by side over the block's whole k range.
struct MmaConfig : GemvConfig {
  static constexpr int kWordsPerWarp = 8;                        // lane / 4 picks the word
  static constexpr int kWordsPerBlock = kWordsPerWarp * kWarps;  // 512 output columns
  static constexpr int kChunkK = 32;  // two k16 steps; K_dim is a multiple of the smallest group
  static constexpr int kUnroll = 4;   // chunks loaded together: 32 loads in flight a lane
  static constexpr int kMinChunks = 2 * kUnroll;
};

struct GemvArgs {
  const __half* A;
  int M;
  __half* C;
  const uint32_t* qweight;  // [K][words]
  const uint32_t* qzeros;   // [K / G][words]
  const uint16_t* scales;   // [K / G][N]
  int N, K, group, words;
  int chunks_per_block;  // the k split: chunks (fma: 16 rows, mma: 32) per block
  int k_blocks;          // blocks that add into one column range
  float* ws;             // split-K workspace [M][N], zero between calls
  int* counters;         // one per column range
};

// Streams a weight word past L1 (read once); the read-only path for the rest.
__device__ __forceinline__ uint32_t load_stream(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.b32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
using dev::byte_perm;
using dev::awq::dequant_pair;
using dev::awq::pair_1024;
__device__ __forceinline__ __half2 as_half2(uint32_t v) {
  return *reinterpret_cast<const __half2*>(&v);
}
__device__ __forceinline__ uint32_t as_u32(__half2 v) {
  return *reinterpret_cast<const uint32_t*>(&v);
}

// One 32-k chunk of the mma kernel, loaded: the lane's 8 weight words (k16 step s, rows
// 2c + (r & 1) + 8 (r >> 1)), its word's zero points and scales, and the activations.
struct MmaChunk {
  uint32_t w[2][4];
  uint32_t zw;
  uint4 sv;
  uint32_t b[2][2];  // B fragment of step s: A[g][2c, 2c + 1] and A[g][2c + 8, 2c + 9]
};

__device__ __forceinline__ void load_chunk(const GemvArgs& a, int chunk, int jl, int c,
                                           const __half* arow, bool has_row, MmaChunk& x) {
  const int k0 = chunk * MmaConfig::kChunkK, g = k0 / a.group;
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      x.w[s][r] = load_stream(
          a.qweight + (long long)(k0 + 16 * s + 2 * c + (r & 1) + 8 * (r >> 1)) * a.words + jl);
  x.zw = __ldg(a.qzeros + (long long)g * a.words + jl);
  x.sv = __ldg(reinterpret_cast<const uint4*>(a.scales + (long long)g * a.N) + jl);
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      x.b[s][h] = has_row
                      ? __ldg(reinterpret_cast<const uint32_t*>(arow + k0 + 16 * s + 2 * c + 8 * h))
                      : 0u;
}

// Column e's pair along k from the PRMT of two rows' words: x = bytes 0, 2 of each (columns
// 0, 2 at shifts 0, 4; 1, 3 at 8, 12), y = bytes 1, 3 (columns 4, 6 and 5, 7).
__device__ __forceinline__ uint32_t column_pair(uint32_t x, uint32_t y, int e) {
  constexpr int kShift[8] = {0, 8, 4, 12, 0, 8, 4, 12};
  return pair_1024((e < 4 ? x : y) >> kShift[e]);
}

__device__ __forceinline__ void mma_chunk(const MmaChunk& x, float (&acc)[4][4]) {
  uint32_t z2[8], s2[8];  // column e's 1024 + zero and scale, in both halves
  const uint32_t sw[4] = {x.sv.x, x.sv.y, x.sv.z, x.sv.w};
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const uint32_t zp = pair_1024(x.zw >> (4 * p));  // columns 2p, 2p + 1
    z2[2 * p] = dev::awq::low_twice(zp);
    z2[2 * p + 1] = dev::awq::high_twice(zp);
    s2[2 * p] = dev::awq::low_twice(sw[p]);
    s2[2 * p + 1] = dev::awq::high_twice(sw[p]);
  }
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const uint32_t x01 = byte_perm(x.w[s][0], x.w[s][1], 0x6420),
                   y01 = byte_perm(x.w[s][0], x.w[s][1], 0x7531);
    const uint32_t x23 = byte_perm(x.w[s][2], x.w[s][3], 0x6420),
                   y23 = byte_perm(x.w[s][2], x.w[s][3], 0x7531);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      auto dq = [&](uint32_t q1024, int e) { return as_u32(dequant_pair(q1024, z2[e], s2[e])); };
      const uint32_t frag[4] = {
          dq(column_pair(x01, y01, 2 * p), 2 * p), dq(column_pair(x01, y01, 2 * p + 1), 2 * p + 1),
          dq(column_pair(x23, y23, 2 * p), 2 * p), dq(column_pair(x23, y23, 2 * p + 1), 2 * p + 1)};
      dev::mma_m16n8k16<__half>(acc[p], frag, x.b[s]);
    }
  }
}

// Two blocks an SM (128 registers a thread): the loaded words are the bytes in flight.
__global__ void __launch_bounds__(MmaConfig::kThreads, 2)
    awq_gemv_mma_kernel(const __grid_constant__ GemvArgs a) {
  using Cfg = MmaConfig;
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int g = lane >> 2, c = lane & 3;
  const int j = int(blockIdx.x) * Cfg::kWordsPerBlock + warp * Cfg::kWordsPerWarp + g;
  const int jl = min(j, a.words - 1);  // lanes past N load a valid word and store nothing
  const bool has_row = g < a.M;        // MMA column g is token g
  const __half* arow = a.A + (long long)(has_row ? g : 0) * a.K;
  const int chunks = a.K / Cfg::kChunkK;
  const int c0 = int(blockIdx.y) * a.chunks_per_block;
  const int c1 = min(c0 + a.chunks_per_block, chunks);
  float acc[4][4] = {};
  int ch = c0;
#pragma unroll 1
  for (; ch + Cfg::kUnroll <= c1; ch += Cfg::kUnroll) {
    MmaChunk x[Cfg::kUnroll];
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u) load_chunk(a, ch + u, jl, c, arow, has_row, x[u]);
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u) mma_chunk(x[u], acc);
  }
#pragma unroll 1
  for (; ch < c1; ++ch) {  // the range's last chunks, fewer than kUnroll
    MmaChunk x;
    load_chunk(a, ch, jl, c, arow, has_row, x);
    mma_chunk(x, acc);
  }
  // acc[p][q]: column 8j + 2p + (q >> 1), token 2c + (q & 1).
  dev::splitk::store_tile<16>(a.C, a.ws, a.counters + blockIdx.x, a.k_blocks, [&](auto&& fn) {
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int n = 8 * j + 2 * p + (q >> 1), m = 2 * c + (q & 1);
        fn(4 * p + q, j < a.words && m < a.M ? m * a.N + n : -1, acc[p][q]);
      }
  });
}

template <int MV>
__global__ void __launch_bounds__(GemvConfig::kThreads)
    awq_gemv_kernel(const __grid_constant__ GemvArgs a) {
  using Cfg = FmaConfig;
  // The warps' sums, [warp][row][e][lane] (column 8 lane + e): stores and loads conflict-free.
  __shared__ float red[Cfg::kWarps][MV][8][32];
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int j = int(blockIdx.x) * Cfg::kWordsPerBlock + lane;
  const int jl = min(j, a.words - 1);  // lanes past N load a valid word and store nothing
  const int chunks = a.K / Cfg::kChunkK;
  const int c0 = int(blockIdx.y) * a.chunks_per_block;
  const int c1 = min(c0 + a.chunks_per_block, chunks);

  float acc[MV][8];
#pragma unroll
  for (int m = 0; m < MV; ++m)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[m][e] = 0.0f;

#pragma unroll 1
  for (int c = c0 + warp; c < c1; c += Cfg::kWarps) {
    const int k0 = c * Cfg::kChunkK, g = k0 / a.group;
    uint32_t w[Cfg::kChunkK];
#pragma unroll
    for (int u = 0; u < Cfg::kChunkK; ++u)
      w[u] = load_stream(a.qweight + (long long)(k0 + u) * a.words + jl);
    const uint32_t zw = __ldg(a.qzeros + (long long)g * a.words + jl);
    const uint4 sv = __ldg(reinterpret_cast<const uint4*>(a.scales + (long long)g * a.N) + jl);
    uint4 av[MV][2];  // A[m][k0 .. k0 + 15]: the same 32 bytes in every lane (broadcast)
#pragma unroll
    for (int m = 0; m < MV; ++m) {
      const uint4* src = reinterpret_cast<const uint4*>(a.A + (long long)m * a.K + k0);
      av[m][0] = __ldg(src);
      av[m][1] = __ldg(src + 1);
    }
    const uint32_t s2[4] = {sv.x, sv.y, sv.z, sv.w};  // scales of columns (2p, 2p + 1)
    uint32_t z2[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) z2[p] = pair_1024(zw >> (4 * p));
#pragma unroll
    for (int u = 0; u < Cfg::kChunkK; ++u) {
      float x[MV];
#pragma unroll
      for (int m = 0; m < MV; ++m) {
        const uint4 v = av[m][u / 8];
        const int q = (u % 8) / 2;
        const uint32_t h2 = q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
        x[m] = u % 2 == 0 ? __low2float(as_half2(h2)) : __high2float(as_half2(h2));
      }
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const float2 wf = __half22float2(dequant_pair(pair_1024(w[u] >> (4 * p)), z2[p], s2[p]));
#pragma unroll
        for (int m = 0; m < MV; ++m) {
          acc[m][2 * p] = fmaf(x[m], wf.x, acc[m][2 * p]);
          acc[m][2 * p + 1] = fmaf(x[m], wf.y, acc[m][2 * p + 1]);
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < MV; ++m)
#pragma unroll
    for (int e = 0; e < 8; ++e) red[warp][m][e][lane] = acc[m][e];
  __syncthreads();
  // Thread t sums slot (e, l) = (t / 32, t % 32) over the warps: column 8 (first word + l) + e.
  const int e = int(threadIdx.x) >> 5, l = int(threadIdx.x) & 31;
  const int n = (int(blockIdx.x) * Cfg::kWordsPerBlock + l) * 8 + e;
  float sum[MV];
#pragma unroll
  for (int m = 0; m < MV; ++m) {
    sum[m] = 0.0f;
#pragma unroll
    for (int wp = 0; wp < Cfg::kWarps; ++wp) sum[m] += red[wp][m][e][l];
  }
  dev::splitk::store_tile<MV>(a.C, a.ws, a.counters + blockIdx.x, a.k_blocks, [&](auto&& fn) {
#pragma unroll
    for (int m = 0; m < MV; ++m) fn(m, n < a.N ? m * a.N + n : -1, sum[m]);
  });
}

struct AwqGemvState : VariantState {
  bool mma = true;
  std::int64_t rows = 1, n = 0, k_dim = 0;  // the problem the plan is for
  int col_blocks = 0, k_blocks = 1, chunks_per_block = 0, chunk_k = 0, columns = 0;
  const void* fn = nullptr;
  SplitKWorkspace split;
  std::string describe() const override {
    return std::string(mma ? "mma.m16n8k16" : "fp32 FMA") + ", " + std::to_string(col_blocks) +
           " x " + std::to_string(k_blocks) + " blocks of " + std::to_string(columns) +
           " columns x " + std::to_string(chunks_per_block * chunk_k) +
           " k, AutoAWQ tensors read as they are";
  }
  // The split blocks' sums through the workspace; in the fma kernel also its 8 warps' partial sums.
  std::int64_t extra_additions() const override { return mma ? k_blocks : 8 + k_blocks; }
};

}  // namespace

std::unique_ptr<VariantState> awq_gemv_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "awq_gemv";
  require_awq_dims(d, who);
  if (d.M > 4)
    throw Error(std::string(who) + ": M = " + std::to_string(d.M) +
                " is above 4 (awq_gemm runs M >= 5)");
  auto s = std::make_unique<AwqGemvState>();
  s->rows = d.M, s->n = d.N, s->k_dim = d.K_dim;
  const std::int64_t tc = o.get(kAwqGemvTensorCores);
  s->mma = tc == 1 || (tc == 2 && d.M >= kAwqGemvMmaFromRows);
  int words_per_block = 0, min_chunks = 0;
  if (s->mma) {
    s->fn = reinterpret_cast<const void*>(awq_gemv_mma_kernel);
    words_per_block = MmaConfig::kWordsPerBlock, s->chunk_k = MmaConfig::kChunkK;
    min_chunks = MmaConfig::kMinChunks;
  } else {
    s->fn = with_rows_1_to_4(int(s->rows), [](auto r) {
      return reinterpret_cast<const void*>(awq_gemv_kernel<decltype(r)::value>);
    });
    words_per_block = FmaConfig::kWordsPerBlock, s->chunk_k = FmaConfig::kChunkK;
    min_chunks = FmaConfig::kMinChunks;
  }
  s->columns = 8 * words_per_block;
  const int words = int(d.N / 8), chunks = int(d.K_dim / s->chunk_k);
  s->col_blocks = (words + words_per_block - 1) / words_per_block;
  const int slots = resident_blocks(s->fn, GemvConfig::kThreads, 0, who);
  // Enough blocks for kWaves waves, each with at least min_chunks chunks.
  const int want = (GemvConfig::kWaves * slots + s->col_blocks - 1) / s->col_blocks;
  const int most = std::max(1, chunks / min_chunks);
  // validate's split modes: one block a column range (each sum in one order: two runs agree bit
  // for bit), or at least two.
  s->k_blocks = o.split_k == SplitMode::force_off  ? 1
                : o.split_k == SplitMode::force_on ? std::clamp(want, std::min(2, most), most)
                                                   : std::clamp(want, 1, most);
  s->chunks_per_block = (chunks + s->k_blocks - 1) / s->k_blocks;
  s->k_blocks = (chunks + s->chunks_per_block - 1) / s->chunks_per_block;
  if (s->k_blocks > 1) s->split.allocate(d.M * d.N, s->col_blocks);
  return s;
}

void awq_gemv_run(VariantState* state, const GemmDims& d, const GemmArgs& g, cudaStream_t stream) {
  const char* who = "awq_gemv";
  auto* s = static_cast<AwqGemvState*>(state);
  if (g.w.layout.kind != LayoutKind::awq || g.w.awq_qweight == nullptr ||
      g.w.awq_qzeros == nullptr || g.w.awq_scales == nullptr)
    throw Error(std::string(who) + ": needs the AutoAWQ tensors (layout awq), got " +
                layout_name(g.w.layout));
  if (g.w.awq_group != d.awq_group)
    throw Error(std::string(who) + ": the weights' group is " + std::to_string(g.w.awq_group) +
                ", the problem's " + std::to_string(d.awq_group));
  // The fma kernel is compiled for the plan's M and the workspace sized for its M x N.
  if (d.M != s->rows || d.N != s->n || d.K_dim != s->k_dim)
    throw Error(std::string(who) + ": planned for M = " + std::to_string(s->rows) +
                ", N = " + std::to_string(s->n) + ", K_dim = " + std::to_string(s->k_dim) +
                "; called with M = " + std::to_string(d.M) + ", N = " + std::to_string(d.N) +
                ", K_dim = " + std::to_string(d.K_dim));
  if (reinterpret_cast<std::uintptr_t>(g.A) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(g.w.awq_scales) % 16 != 0)
    throw Error(std::string(who) + ": A and the scales must be 16-byte aligned (16-byte loads)");
  GemvArgs a{};
  a.A = static_cast<const __half*>(g.A);
  a.M = int(d.M);
  a.C = static_cast<__half*>(g.C);
  a.qweight = reinterpret_cast<const uint32_t*>(g.w.awq_qweight);
  a.qzeros = reinterpret_cast<const uint32_t*>(g.w.awq_qzeros);
  a.scales = g.w.awq_scales;
  a.N = int(d.N);
  a.K = int(d.K_dim);
  a.group = d.awq_group;
  a.words = int(d.N / 8);
  a.chunks_per_block = s->chunks_per_block;
  a.k_blocks = s->k_blocks;
  a.ws = s->split.sums.get();
  a.counters = s->split.counters.get();
  void* params[] = {&a};
  launch_kernel(s->fn, dim3(unsigned(s->col_blocks), unsigned(s->k_blocks)),
                dim3(GemvConfig::kThreads), 0, stream, params, false);
}

}  // namespace kbit::variants
