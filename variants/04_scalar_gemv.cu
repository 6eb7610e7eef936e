// Variant 04: scalar GEMV for M = 1..4 over the tiled layout (tile_k 64, tile_n 128), no
// tensor cores. Source: seeds 002_16a44ede122cec4e.txt, reworked for the H100's instruction
// budget (docs/variants/04_scalar_gemv.md):
//
// * 256 threads, 128 columns per block, two threads per column; thread t owns column t/2 and
//   block (t & 1) of every k-tile, so the block's loads are one contiguous 4 KB stream.
// * Bit-planes go straight to registers (no shared-memory round trip), kPrefetch k-tiles
//   ahead in a register ring: 16 B in flight per thread per k-tile.
// * Index extraction by "residue fields": one shift + one select per plane builds a word
//   holding the indices of elements r, r+F, r+2F, ... in F-bit fields; then one shift per
//   weight feeds shfl directly (shfl reads only bits 0..4 of its lane operand, and the
//   codebook is replicated over the lanes so the don't-care bits are harmless).
// * The scale is applied once per block of 32 (acc += s * sum(cb[idx] * a)), and A is staged
//   once per block in shared memory as fp32, permuted so that a residue class is contiguous
//   (two LDS.128 per 8 weights).
// * Split-K across blocks (shared helper, variants/common/splitk.cuh) when there are too few
//   n-tiles to cover the GPU several times.
//
// grouped_scalar_gemv runs the same block routine over host-computed work items
// (expert, rows <= 4, n-tile, k-range) for MoE decode.
#include <cuda_runtime.h>

#include <algorithm>
#include <utility>
#include <string>
#include <vector>

#include "reference/error.hpp"
#include "variants/common/bitplane.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/common/load.cuh"
#include "variants/common/splitk.cuh"
#include "variants/gemv_variants.hpp"

namespace kbit::variants {
namespace {

struct Config {
  static constexpr int kThreads = 256;   // 8 warps: 128 columns x 2 blocks of one k-tile
  static constexpr int kTileK = 64;      // the tiled layout this variant reads
  static constexpr int kTileN = 128;
  static constexpr int kBlocksPerTile = kTileN * kTileK / 32;  // 256: one per thread
  static constexpr int kPrefetch = 4;    // k-tiles in flight per thread (register ring)
  static constexpr int kWindow = 16;     // k-tiles of A staged in shared memory at a time
  static constexpr int kBlockFloats = 36;  // 32 activations + 4 pad: kb = 0 and 1 hit other banks
  static constexpr int kTileFloats = 2 * kBlockFloats;
  static constexpr int kMaxRows = 4;
  static constexpr int kMinTilesPerChunk = 4;  // split-K never below this many k-tiles per block
  static_assert(kWindow % kPrefetch == 0, "window boundaries must fall on ring boundaries");
};

static_assert(Config::kThreads == Config::kBlocksPerTile, "one quantization block per thread");

template <int K>
__host__ __device__ constexpr int tile_words() { return Config::kBlocksPerTile * K; }

// One work item: rows [row0, row0 + rows) of A and C against one weight's n-tile nt over
// k-tiles [kt0, kt1). tile_id/contributors drive split-K (contributors == 1: no split).
struct WorkItem {
  int expert, row0, rows, nt, kt0, kt1, tile_id, contributors;
};

struct KernelArgs {
  const void* A;
  void* C;
  const uint32_t* packed;
  const uint8_t* absmax;
  long long expert_words, expert_bytes;  // per-expert strides (grouped)
  int N, K_dim, n_tiles, k_tiles;
  int k_chunks, chunk_tiles;             // dense items: (chunk, n-tile)
  const WorkItem* items;                 // grouped items (host-computed)
  float* ws;                             // split-K workspace [rows of C][N], zero between calls
  int* counters;                         // one per output tile, zero between calls
  float cb[32];
  int k_bits;
};

// Shared memory of one window: [row][tile][kb][36] floats.
template <int MV>
__host__ __device__ constexpr int smem_floats() { return MV * Config::kWindow * Config::kTileFloats; }

// Calls fn(integral_constant<int, R>) for R = 0, 1, ...: a loop whose index is a constant.
template <int... R, typename Fn>
__device__ __forceinline__ void for_each_index(std::integer_sequence<int, R...>, Fn&& fn) {
  (fn(std::integral_constant<int, R>{}), ...);
}

// Position of element j of a block after the residue permutation: residue class r = j % F
// is contiguous, element r + F*q at r*(32/F) + q.
template <int F>
__device__ __forceinline__ int permuted(int j) { return (j % F) * (32 / F) + j / F; }

// Stages rows [row0, row0 + MV) of A, k-tiles [kt, kt + ntiles), into shared memory as fp32.
// Elements past K_dim (padding of the last k-tile) are zero: 0 * padded weight (0) stays 0.
template <int K, int MV, typename T>
__device__ void stage_a(const KernelArgs& a, int row0, int kt, int ntiles, float* s_a) {
  constexpr int F = dev::field_width<K>();
  const T* A = static_cast<const T*>(a.A);
  const int groups = MV * ntiles * (Config::kTileK / 8);
  for (int g = threadIdx.x; g < groups; g += Config::kThreads) {
    const int r = g / (ntiles * 8), rem = g % (ntiles * 8), tile = rem / 8, e0 = (rem % 8) * 8;
    const long long k = (long long)(kt + tile) * Config::kTileK + e0;
    float v[8];
    if (k < a.K_dim) {
      const uint4 raw = __ldg(reinterpret_cast<const uint4*>(A + (long long)(row0 + r) * a.K_dim + k));
      const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = dev::unpack2<T>(w[i]);
        v[2 * i] = f.x, v[2 * i + 1] = f.y;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = 0.0f;
    }
    float* dst = s_a + (r * Config::kWindow + tile) * Config::kTileFloats;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int e = e0 + i;
      dst[(e / 32) * Config::kBlockFloats + permuted<F>(e % 32)] = v[i];
    }
  }
}

// sum_j cb[idx_j] * a[m][j] over one block, scaled once: acc[m] += s * sum.
template <int K, int MV>
__device__ __forceinline__ void block_dot(const uint32_t (&p)[K], uint32_t absmax_code, const float* s_blk,
                                          float cb_lane, float (&acc)[MV]) {
  constexpr int F = dev::field_width<K>();
  constexpr int T = 32 / F;  // weights per residue class
  constexpr int kRowStride = Config::kWindow * Config::kTileFloats;
  float part[MV];
#pragma unroll
  for (int m = 0; m < MV; ++m) part[m] = 0.0f;
  auto residue = [&](auto r_const) {
    constexpr int R = decltype(r_const)::value;
    const uint32_t fields = dev::residue_fields<K, R>(p);
    float a[MV][T];
#pragma unroll
    for (int m = 0; m < MV; ++m) {
#pragma unroll
      for (int q = 0; q < T; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(s_blk + m * kRowStride + R * T + q);
        a[m][q] = v.x, a[m][q + 1] = v.y, a[m][q + 2] = v.z, a[m][q + 3] = v.w;
      }
    }
#pragma unroll
    for (int q = 0; q < T; ++q) {
      // shfl reads bits 0..4 of the lane operand: the field sits there after one shift.
      const float w = __shfl_sync(dev::kFullMask, cb_lane, int(fields >> (F * q)));
#pragma unroll
      for (int m = 0; m < MV; ++m) part[m] = fmaf(w, a[m][q], part[m]);
    }
  };
  for_each_index(std::make_integer_sequence<int, F>{}, residue);
  const float s = dev::decode_e4m4(absmax_code);
#pragma unroll
  for (int m = 0; m < MV; ++m) acc[m] = fmaf(s, part[m], acc[m]);
}

// One work item's dot products: thread t accumulates column t/2, block t&1 of each k-tile.
template <int K, int MV, typename T>
__device__ void gemv_item(const KernelArgs& a, const WorkItem& it, float* s_a, float (&acc)[MV]) {
  constexpr int D = Config::kPrefetch;
  const int t = threadIdx.x, kb = t & 1;
  const float cb_lane = dev::codebook_lane_value(a.cb, a.k_bits, t & 31);
  const long long tile_stride_w = (long long)a.n_tiles * tile_words<K>();
  const long long tile_stride_a = (long long)a.n_tiles * Config::kBlocksPerTile;
  const uint32_t* wp = a.packed + it.expert * a.expert_words +
                       ((long long)it.kt0 * a.n_tiles + it.nt) * tile_words<K>() + t * K;
  const uint8_t* ap = a.absmax + it.expert * a.expert_bytes +
                      ((long long)it.kt0 * a.n_tiles + it.nt) * Config::kBlocksPerTile + t;
  const int ntiles = it.kt1 - it.kt0;
  uint32_t ring[D][K], ring_abs[D];
#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < ntiles) {
      dev::load_planes_global<K>(wp + s * tile_stride_w, ring[s]);
      ring_abs[s] = __ldg(ap + s * tile_stride_a);
    }
  }
#pragma unroll
  for (int m = 0; m < MV; ++m) acc[m] = 0.0f;
  for (int base = 0; base < ntiles; base += D) {
#pragma unroll
    for (int s = 0; s < D; ++s) {
      const int i = base + s;
      if (i < ntiles) {  // uniform over the block
        if (i % Config::kWindow == 0) {
          __syncthreads();  // the previous window is no longer read
          stage_a<K, MV, T>(a, it.row0, it.kt0 + i, min(Config::kWindow, ntiles - i), s_a);
          __syncthreads();
        }
        const float* s_blk = s_a + (i % Config::kWindow) * Config::kTileFloats + kb * Config::kBlockFloats;
        block_dot<K, MV>(ring[s], ring_abs[s], s_blk, cb_lane, acc);
        if (i + D < ntiles) {
          dev::load_planes_global<K>(wp + (i + D) * tile_stride_w, ring[s]);
          ring_abs[s] = __ldg(ap + (i + D) * tile_stride_a);
        }
      }
    }
  }
  // The two threads of a column (lanes t, t^1) hold its two halves.
#pragma unroll
  for (int m = 0; m < MV; ++m) acc[m] += __shfl_xor_sync(dev::kFullMask, acc[m], 1);
}

// Writes (or, split, reduces) the item's [rows x 128] output tile; even lanes own a column.
template <int MV, typename T>
__device__ void store_item(const KernelArgs& a, const WorkItem& it, const float (&acc)[MV]) {
  const int col = it.nt * Config::kTileN + (threadIdx.x >> 1);
  const bool owner = (threadIdx.x & 1) == 0 && col < a.N;
  T* C = static_cast<T*>(a.C);
  if (it.contributors == 1) {
    if (owner) {
#pragma unroll
      for (int m = 0; m < MV; ++m) C[(long long)(it.row0 + m) * a.N + col] = dev::from_float<T>(acc[m]);
    }
    return;
  }
  if (owner) {
#pragma unroll
    for (int m = 0; m < MV; ++m) dev::splitk::add(a.ws, (long long)(it.row0 + m) * a.N + col, acc[m]);
  }
  if (dev::splitk::arrive_is_last(a.counters + it.tile_id, it.contributors) && owner) {
#pragma unroll
    for (int m = 0; m < MV; ++m) {
      const long long idx = (long long)(it.row0 + m) * a.N + col;
      C[idx] = dev::from_float<T>(dev::splitk::take(a.ws, idx));
    }
  }
}

// Dense: item = (chunk, n-tile), n-tile fastest so that neighbouring blocks stream
// neighbouring 4 KB tiles.
template <int K, int MV, typename T>
__global__ void __launch_bounds__(Config::kThreads) scalar_gemv_kernel(const __grid_constant__ KernelArgs a) {
  extern __shared__ float4 smem4[];
  float* s_a = reinterpret_cast<float*>(smem4);
  const int nt = blockIdx.x % a.n_tiles, chunk = blockIdx.x / a.n_tiles;
  const int kt0 = chunk * a.chunk_tiles;
  const WorkItem it{0, 0, MV, nt, kt0, min(kt0 + a.chunk_tiles, a.k_tiles), nt, a.k_chunks};
  float acc[MV];
  gemv_item<K, MV, T>(a, it, s_a, acc);
  store_item<MV, T>(a, it, acc);
}

template <int K, int MV, typename T>
__device__ void grouped_item(const KernelArgs& a, const WorkItem& it, float* s_a) {
  float acc[MV];
  gemv_item<K, MV, T>(a, it, s_a, acc);
  store_item<MV, T>(a, it, acc);
}

// Grouped: one block per host-computed item; the row count picks the unrolled body.
template <int K, typename T>
__global__ void __launch_bounds__(Config::kThreads) grouped_scalar_gemv_kernel(const __grid_constant__ KernelArgs a) {
  extern __shared__ float4 smem4[];
  float* s_a = reinterpret_cast<float*>(smem4);
  const WorkItem it = a.items[blockIdx.x];
  switch (it.rows) {
    case 1: grouped_item<K, 1, T>(a, it, s_a); break;
    case 2: grouped_item<K, 2, T>(a, it, s_a); break;
    case 3: grouped_item<K, 3, T>(a, it, s_a); break;
    default: grouped_item<K, 4, T>(a, it, s_a); break;
  }
}

// ---------------------------------------------------------------- host side

constexpr int kTargetBlocks = 132 * 8;  // cover the H100's 132 SMs several times

// k-chunks per output tile: none when the tiles alone fill the GPU, else enough to reach
// kTargetBlocks, never below kMinTilesPerChunk k-tiles per chunk.
int choose_k_chunks(long long base_items, int k_tiles, SplitMode mode) {
  const int max_chunks = std::max(1, k_tiles / Config::kMinTilesPerChunk);
  if (mode == SplitMode::force_off) return 1;
  if (mode == SplitMode::force_on) return std::max(2, std::min(k_tiles, std::max(2, max_chunks)));
  const long long want = (kTargetBlocks + base_items - 1) / base_items;
  return int(std::max<long long>(1, std::min<long long>(want, max_chunks)));
}

void check_weights(const GemmArgs& g, const char* who) {
  if (g.w.layout.kind != LayoutKind::tiled || g.w.layout.tiles.tile_k != Config::kTileK ||
      g.w.layout.tiles.tile_n != Config::kTileN) {
    throw Error(std::string(who) + ": needs the tiled 64x128 layout, got " + layout_name(g.w.layout));
  }
}

struct GemvState : VariantState {
  GemmDims dims;
  int k_tiles = 0, n_tiles = 0, k_chunks = 1, chunk_tiles = 0, grid = 0;
  DeviceBuffer<float> ws;
  DeviceBuffer<int> counters;
  DeviceBuffer<WorkItem> items;  // grouped
  int max_rows = 1;
  std::string describe() const override {
    return "tile 64x128, " + std::to_string(k_chunks) + " k-chunks of " + std::to_string(chunk_tiles) +
           " k-tiles, grid " + std::to_string(grid) + ", prefetch " + std::to_string(Config::kPrefetch);
  }
  std::int64_t extra_additions() const override { return dims.K_dim / 32 + k_chunks; }
};

void zero_workspace(GemvState& s, std::size_t ws_elems, std::size_t tiles) {
  s.ws = DeviceBuffer<float>(ws_elems);
  s.counters = DeviceBuffer<int>(tiles);
  s.ws.fill_bytes(0);
  s.counters.fill_bytes(0);
  KBIT_CUDA_CHECK(cudaDeviceSynchronize());
}

KernelArgs make_args(const GemvState& s, const GemmDims& d, const GemmArgs& g) {
  KernelArgs a{};
  a.A = g.A;
  a.C = g.C;
  a.packed = g.w.packed;
  a.absmax = g.w.absmax;
  a.expert_words = g.w.expert_words;
  a.expert_bytes = g.w.expert_bytes;
  a.N = int(d.N);
  a.K_dim = int(d.K_dim);
  a.n_tiles = s.n_tiles;
  a.k_tiles = s.k_tiles;
  a.k_chunks = s.k_chunks;
  a.chunk_tiles = s.chunk_tiles;
  a.items = s.items.get();
  a.ws = s.ws.get();
  a.counters = s.counters.get();
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  a.k_bits = g.codebook.k_bits;
  return a;
}

template <typename Kernel>
void launch(Kernel kernel, int grid, int smem_bytes, const KernelArgs& a, cudaStream_t stream) {
  if (smem_bytes > 48 * 1024)
    KBIT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  kernel<<<grid, Config::kThreads, smem_bytes, stream>>>(a);
  KBIT_CHECK_LAUNCH();
}

template <int K, typename T>
void run_dense_k(const GemvState& s, const KernelArgs& a, cudaStream_t stream) {
  const int bytes_per_row = smem_floats<1>() * 4;
  switch (s.dims.M) {
    case 1: launch(scalar_gemv_kernel<K, 1, T>, s.grid, 1 * bytes_per_row, a, stream); break;
    case 2: launch(scalar_gemv_kernel<K, 2, T>, s.grid, 2 * bytes_per_row, a, stream); break;
    case 3: launch(scalar_gemv_kernel<K, 3, T>, s.grid, 3 * bytes_per_row, a, stream); break;
    case 4: launch(scalar_gemv_kernel<K, 4, T>, s.grid, 4 * bytes_per_row, a, stream); break;
  }
}

template <int K, typename T>
void run_grouped_k(const GemvState& s, const KernelArgs& a, cudaStream_t stream) {
  if (s.grid == 0) return;  // no expert has rows
  launch(grouped_scalar_gemv_kernel<K, T>, s.grid, smem_floats<Config::kMaxRows>() * 4, a, stream);
}

template <template <int, typename> class Fn, typename... Args>
void dispatch(int k, DType t, Args&&... args) {
  auto by_type = [&](auto k_const) {
    constexpr int KB = decltype(k_const)::value;
    if (t == DType::f16) Fn<KB, __half>::run(args...);
    else Fn<KB, __nv_bfloat16>::run(args...);
  };
  switch (k) {
    case 2: by_type(std::integral_constant<int, 2>{}); break;
    case 3: by_type(std::integral_constant<int, 3>{}); break;
    case 4: by_type(std::integral_constant<int, 4>{}); break;
    case 5: by_type(std::integral_constant<int, 5>{}); break;
    default: throw Error("K = " + std::to_string(k) + " is outside 2..5");
  }
}

template <int K, typename T>
struct DenseRun {
  static void run(const GemvState& s, const KernelArgs& a, cudaStream_t st) { run_dense_k<K, T>(s, a, st); }
};
template <int K, typename T>
struct GroupedRun {
  static void run(const GemvState& s, const KernelArgs& a, cudaStream_t st) { run_grouped_k<K, T>(s, a, st); }
};

void check_common(const GemmDims& d, const char* who) {
  if (d.dtype == DType::f32) throw Error(std::string(who) + ": dtype fp32 is not supported (fp16, bf16)");
  if (d.K_dim % 32 != 0 || d.K_dim < 32)
    throw Error(std::string(who) + ": K_dim = " + std::to_string(d.K_dim) + " must be a positive multiple of 32");
  if (d.N < 1) throw Error(std::string(who) + ": N = " + std::to_string(d.N) + " must be at least 1");
}

}  // namespace

std::unique_ptr<VariantState> scalar_gemv_setup(const GemmDims& d, const VariantOptions& o) {
  check_common(d, "scalar_gemv");
  if (d.grouped()) throw Error("scalar_gemv: grouped problems go to grouped_scalar_gemv");
  if (d.M < 1 || d.M > Config::kMaxRows)
    throw Error("scalar_gemv: M = " + std::to_string(d.M) + " is outside 1..4 (use an MMA variant for larger M)");
  auto s = std::make_unique<GemvState>();
  s->dims = d;
  s->n_tiles = int((d.N + Config::kTileN - 1) / Config::kTileN);
  s->k_tiles = int((d.K_dim + Config::kTileK - 1) / Config::kTileK);
  s->k_chunks = choose_k_chunks(s->n_tiles, s->k_tiles, o.split_k);
  s->chunk_tiles = (s->k_tiles + s->k_chunks - 1) / s->k_chunks;
  s->k_chunks = (s->k_tiles + s->chunk_tiles - 1) / s->chunk_tiles;  // no empty chunk
  s->grid = s->n_tiles * s->k_chunks;
  if (s->k_chunks > 1) zero_workspace(*s, std::size_t(d.M * d.N), std::size_t(s->n_tiles));
  return s;
}

void scalar_gemv_run(VariantState* state, const GemmDims& d, const GemmArgs& g, cudaStream_t stream) {
  auto* s = static_cast<GemvState*>(state);
  check_weights(g, "scalar_gemv");
  dispatch<DenseRun>(d.k_bits, d.dtype, *s, make_args(*s, d, g), stream);
}

std::unique_ptr<VariantState> grouped_scalar_gemv_setup(const GemmDims& d, const VariantOptions& o) {
  check_common(d, "grouped_scalar_gemv");
  if (!d.grouped()) throw Error("grouped_scalar_gemv: needs a grouped (MoE) problem");
  const auto& off = d.expert_offsets;
  if (off.size() != std::size_t(d.num_experts) + 1)
    throw Error("grouped_scalar_gemv: expert_offsets has " + std::to_string(off.size()) + " entries; " +
                std::to_string(d.num_experts) + " experts need " + std::to_string(d.num_experts + 1));
  if (off.front() != 0) throw Error("grouped_scalar_gemv: expert_offsets[0] = " + std::to_string(off.front()) + " must be 0");
  for (std::size_t e = 0; e + 1 < off.size(); ++e) {
    if (off[e + 1] < off[e])
      throw Error("grouped_scalar_gemv: expert_offsets is not monotonic at expert " + std::to_string(e) + " (" +
                  std::to_string(off[e]) + " then " + std::to_string(off[e + 1]) + ")");
  }
  if (off.back() > d.M)
    throw Error("grouped_scalar_gemv: expert_offsets ends at row " + std::to_string(off.back()) +
                ", past the end of A (" + std::to_string(d.M) + " rows)");
  auto s = std::make_unique<GemvState>();
  s->dims = d;
  s->n_tiles = int((d.N + Config::kTileN - 1) / Config::kTileN);
  s->k_tiles = int((d.K_dim + Config::kTileK - 1) / Config::kTileK);
  // Row groups of at most 4 rows per expert, times n-tiles, times k-chunks.
  std::vector<WorkItem> base;
  int tile_id = 0;
  for (int e = 0; e < d.num_experts; ++e) {
    for (std::int64_t r = off[std::size_t(e)]; r < off[std::size_t(e) + 1]; r += Config::kMaxRows) {
      const int rows = int(std::min<std::int64_t>(Config::kMaxRows, off[std::size_t(e) + 1] - r));
      for (int nt = 0; nt < s->n_tiles; ++nt) base.push_back({e, int(r), rows, nt, 0, s->k_tiles, tile_id++, 1});
    }
  }
  s->k_chunks = base.empty() ? 1 : choose_k_chunks(std::int64_t(base.size()), s->k_tiles, o.split_k);
  s->chunk_tiles = (s->k_tiles + s->k_chunks - 1) / s->k_chunks;
  s->k_chunks = (s->k_tiles + s->chunk_tiles - 1) / s->chunk_tiles;
  std::vector<WorkItem> items;
  for (int c = 0; c < s->k_chunks; ++c) {  // chunk-major: neighbouring blocks, neighbouring tiles
    for (WorkItem w : base) {
      w.kt0 = c * s->chunk_tiles;
      w.kt1 = std::min(w.kt0 + s->chunk_tiles, s->k_tiles);
      w.contributors = s->k_chunks;
      items.push_back(w);
    }
  }
  s->grid = int(items.size());
  if (!items.empty()) {
    s->items = DeviceBuffer<WorkItem>(items.size());
    KBIT_CUDA_CHECK(cudaMemcpy(s->items.get(), items.data(), items.size() * sizeof(WorkItem), cudaMemcpyHostToDevice));
  }
  if (s->k_chunks > 1) zero_workspace(*s, std::size_t(d.M * d.N), std::size_t(tile_id));
  return s;
}

void grouped_scalar_gemv_run(VariantState* state, const GemmDims& d, const GemmArgs& g, cudaStream_t stream) {
  auto* s = static_cast<GemvState*>(state);
  check_weights(g, "grouped_scalar_gemv");
  dispatch<GroupedRun>(d.k_bits, d.dtype, *s, make_args(*s, d, g), stream);
}

}  // namespace kbit::variants
