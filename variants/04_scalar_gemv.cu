// Variant 04: scalar GEMV for M = 1..4 over the tiled layout (tile_k 64, tile_n 128), no
// tensor cores. Source: seeds 002_16a44ede122cec4e.txt, reworked for the H100
// (docs/variants/04_scalar_gemv.md says what changed and what each change bought):
//
// * 288 threads per block: 8 consumer warps and one producer warp. Consumer thread t owns
//   column t/2 and k-block (t & 1) of each k-tile, in up to 4 adjacent n-tiles at once, so one
//   load of activations serves 4 blocks.
// * The producer streams each k-step (4 adjacent n-tiles: 16 KB of planes + 1 KB of absmax at
//   K = 4, contiguous in the tiled layout) with two cp.async.bulk copies into a kStages-deep
//   shared-memory ring on mbarriers; consumers copy their words to registers and release the
//   stage. The bytes in flight no longer depend on the consumers' registers or progress.
// * Index extraction by "residue fields": one shift + one select per plane builds a word
//   holding the indices of elements r, r+F, r+2F, ... in F-bit fields; then one shift per
//   weight feeds shfl directly (shfl reads only bits 0..4 of its lane operand, and the
//   codebook is replicated over the lanes so the don't-care bits are harmless).
// * The scale is applied once per block of 32 (acc += s * sum(cb[idx] * a)); A is staged in
//   shared memory as fp32, permuted so that a residue class is contiguous.
// * Work is cut on the host into equal contiguous stripes of (n-tile group, k-tile) units,
//   one stripe per resident block (Marlin's stripes): no tail wave; a stripe that ends inside
//   a tile reduces through the self-cleaning split-K workspace (variants/common/splitk.cuh).
//
// grouped_scalar_gemv runs the same segments over (expert, rows <= 4) pairs: MoE decode in
// one launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "reference/error.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/bitplane.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/dispatch.hpp"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/common/load.cuh"
#include "variants/common/splitk.cuh"
#include "variants/gemv_variants.hpp"

namespace kbit::variants {
namespace {

// Tuning knobs (docs/variants/04_scalar_gemv.md has the sweep); override with -D at configure
// time, e.g. cmake -DCMAKE_CUDA_FLAGS="-DKBIT_GEMV_STAGES=3".
#ifndef KBIT_GEMV_GROUP_TILES
#define KBIT_GEMV_GROUP_TILES 4
#endif
#ifndef KBIT_GEMV_STAGES  // 2 beat 3 and 4 on the H100 (docs/notes.md)
#define KBIT_GEMV_STAGES 2
#endif
#ifndef KBIT_GEMV_M1_REGS  // 72: 3 blocks of 288 threads per SM; 80..112: 2 blocks
#define KBIT_GEMV_M1_REGS 80
#endif
#ifndef KBIT_GEMV_ROWS_REGS  // M >= 2 and grouped: 96 = 2 blocks per SM (spills a little at M = 4)
#define KBIT_GEMV_ROWS_REGS 112
#endif

struct Config {
  static constexpr int kConsumers = 256;            // 8 warps: 128 columns x 2 blocks of one k-tile
  static constexpr int kThreads = kConsumers + 32;  // + 1 producer warp (one lane issues copies)
  static constexpr int kTileK = 64;                 // the tiled layout this variant reads
  static constexpr int kTileN = 128;
  static constexpr int kBlocksPerTile = kTileN * kTileK / 32;  // 256: one per consumer thread
  static constexpr int kGroupTiles =
      KBIT_GEMV_GROUP_TILES;  // n-tiles per thread: one activation load serves this many
  static constexpr int kStages =
      KBIT_GEMV_STAGES;  // k-steps of weights in flight per block (bulk-copy ring)
  // Register cap (__maxnreg__). Warps are allocated in pairs, so a block of 9 warps holds 10
  // warps' registers: <= 96 fits 2 blocks per SM, 104..128 only 1. M = 1 needs 80.
  // MV = 0 is the grouped kernel (up to 4 rows).
  template <int MV>
  __host__ __device__ static constexpr int max_regs() {
    return MV == 1 ? KBIT_GEMV_M1_REGS : KBIT_GEMV_ROWS_REGS;
  }
  static constexpr int kWindow = 16;       // k-tiles of A staged in shared memory at a time
  static constexpr int kBlockFloats = 36;  // 32 activations + 4 pad: kb = 0 and 1 hit other banks
  static constexpr int kTileFloats = 2 * kBlockFloats;
  static constexpr int kMaxRows = 4;
  static constexpr int kMinUnits = 4;  // a stripe holds at least this many k-tiles
  static constexpr int kBarrierBytes =
      128;  // 2 x kStages mbarriers, padded: the ring stays aligned
  static_assert(kConsumers == kBlocksPerTile, "one quantization block per thread per n-tile");
  static_assert(2 * kStages * 8 <= kBarrierBytes, "mbarriers must fit their slot");
};

template <int K>
__host__ __device__ constexpr int tile_words() {
  return Config::kBlocksPerTile * K;
}
// One ring stage: the planes of kGroupTiles adjacent n-tiles (contiguous in the tiled layout),
// then their absmax codes (also contiguous). Both sizes are multiples of 16 bytes.
template <int K>
__host__ __device__ constexpr int stage_plane_bytes() {
  return Config::kGroupTiles * tile_words<K>() * 4;
}
template <int K>
__host__ __device__ constexpr int stage_bytes() {
  return stage_plane_bytes<K>() + Config::kGroupTiles * Config::kBlocksPerTile;
}
// Dynamic shared memory: barriers, the weight ring, then the A window of `rows` rows.
template <int K>
__host__ __device__ constexpr int smem_bytes(int rows) {
  return Config::kBarrierBytes + Config::kStages * stage_bytes<K>() +
         rows * Config::kWindow * Config::kTileFloats * 4;
}

// A segment of one block's stripe: rows [row0, row0 + rows) of expert `expert` (0 when dense),
// n-tiles [nt0, nt0 + ntc) (ntc <= kGroupTiles), k-tiles [kt0, kt1). Its output tile is
// tile_id; contributors > 1 means other blocks' stripes cover the rest of its k-range.
struct Segment {
  int expert, row0, rows, nt0, ntc, kt0, kt1, tile_id, contributors;
};

struct KernelArgs {
  const void* A;
  void* C;
  const uint32_t* packed;
  const uint8_t* absmax;
  long long expert_words, expert_bytes;  // per-expert strides of the tiled weights
  int N, K_dim, n_tiles;
  const Segment* segs;   // every block's segments, in block order
  const int* first_seg;  // block b runs segs[first_seg[b] .. first_seg[b+1])
  float* ws;             // split-K workspace [rows of C][N], zero between calls
  int* counters;         // one per output tile, zero between calls
  float cb[32];
  int k_bits;
};

// The weight ring in shared memory: kStages stages, each with a `full` barrier (the producer's
// bulk copies complete on it) and an `empty` barrier (each consumer thread arrives once it has
// read the stage). Step q of the block's sequence uses stage q % kStages, phase q / kStages.
template <int K>
struct Ring {
  uint32_t bars;          // shared address of full[0..S) then empty[0..S)
  unsigned char* stages;  // generic pointer to stage 0

  __device__ explicit Ring(unsigned char* smem)
      : bars(dev::smem_addr(smem)), stages(smem + Config::kBarrierBytes) {}
  __device__ uint32_t full(int s) const { return bars + 8 * s; }
  __device__ uint32_t empty(int s) const { return bars + 8 * (Config::kStages + s); }
  __device__ unsigned char* planes(int s) const { return stages + s * stage_bytes<K>(); }
  __device__ unsigned char* codes(int s) const { return planes(s) + stage_plane_bytes<K>(); }
  static __device__ int stage(uint32_t q) { return int(q % Config::kStages); }
  static __device__ uint32_t parity(uint32_t q) { return (q / Config::kStages) & 1u; }

  // Thread 0 initializes; every thread of the block must call (one __syncthreads).
  __device__ void init() const {
    if (threadIdx.x == 0) {
      for (int s = 0; s < Config::kStages; ++s) {
        dev::mbar_init(full(s), 1);
        dev::mbar_init(empty(s), Config::kConsumers);
      }
      dev::fence_barrier_init();
    }
    __syncthreads();
  }
};

// The producer (one lane of the last warp): walks the block's segments in the consumers' order
// and copies each k-step's planes and codes into the next free stage. It runs up to kStages
// steps ahead, so the block keeps kStages x 17 KB (K = 4) in flight whatever the consumers do.
template <int K>
__device__ void produce(const KernelArgs& a, const Ring<K>& ring) {
  uint32_t q = 0;
  for (int s = a.first_seg[blockIdx.x]; s < a.first_seg[blockIdx.x + 1]; ++s) {
    const Segment g = a.segs[s];
    const uint32_t plane_bytes = uint32_t(g.ntc) * tile_words<K>() * 4;
    const uint32_t code_bytes = uint32_t(g.ntc) * Config::kBlocksPerTile;
    const uint32_t* planes = a.packed + g.expert * a.expert_words;
    const uint8_t* codes = a.absmax + g.expert * a.expert_bytes;
    for (int kt = g.kt0; kt < g.kt1; ++kt, ++q) {
      const int st = Ring<K>::stage(q);
      dev::mbar_wait(ring.empty(st), Ring<K>::parity(q) ^ 1u);  // fresh barrier: passes at once
      const long long tile = (long long)kt * a.n_tiles + g.nt0;
      dev::mbar_arrive_expect_tx(ring.full(st), plane_bytes + code_bytes);
      dev::bulk_copy_g2s(dev::smem_addr(ring.planes(st)), planes + tile * tile_words<K>(),
                         plane_bytes, ring.full(st));
      dev::bulk_copy_g2s(dev::smem_addr(ring.codes(st)), codes + tile * Config::kBlocksPerTile,
                         code_bytes, ring.full(st));
    }
  }
}

// Calls fn(integral_constant<int, R>) for R = 0, 1, ...: a loop whose index is a constant.
template <int... R, typename Fn>
__device__ __forceinline__ void for_each_index(std::integer_sequence<int, R...>, Fn&& fn) {
  (fn(std::integral_constant<int, R>{}), ...);
}

// Position of element j of a block after the residue permutation: residue class r = j % F
// is contiguous, element r + F*q at r*(32/F) + q.
template <int F>
__device__ __forceinline__ int permuted(int j) {
  return (j % F) * (32 / F) + j / F;
}

// Stages rows [row0, row0 + MV) of A, k-tiles [kt, kt + ntiles), into shared memory as fp32:
// [row][tile][kb][36]. Elements past K_dim (padding of the last k-tile) are zero.
template <int K, int MV, typename T>
__device__ void stage_a(const KernelArgs& a, int row0, int kt, int ntiles, float* s_a) {
  constexpr int F = dev::field_width<K>();
  const T* A = static_cast<const T*>(a.A);
  const int groups = MV * ntiles * (Config::kTileK / 8);
  for (int g = threadIdx.x; g < groups; g += Config::kConsumers) {
    const int r = g / (ntiles * 8), rem = g % (ntiles * 8), tile = rem / 8, e0 = (rem % 8) * 8;
    const long long k = (long long)(kt + tile) * Config::kTileK + e0;
    float v[8];
    if (k < a.K_dim) {
      const uint4 raw =
          __ldg(reinterpret_cast<const uint4*>(A + (long long)(row0 + r) * a.K_dim + k));
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

// One k-tile of a thread: the same k-block of G n-tiles against one set of activations.
// acc[j][m] += s_j * sum_i cb[idx_ij] * a[m][i]. No branches inside: the G blocks' shuffle
// and FMA chains interleave freely (an n-tile missing from the last group has scale code 0
// and contributes 0). At M = 1 two partial sums per block halve the FFMA dependency chain; with
// more rows the rows' chains interleave already and a second sum would only cost registers.
template <int K, int MV, int G>
__device__ __forceinline__ void dot_blocks(const uint32_t (&p)[G][K], const uint32_t (&code)[G],
                                           const float* s_blk, float cb_lane, float (&acc)[G][MV]) {
  constexpr int F = dev::field_width<K>();
  constexpr int T = 32 / F;  // weights per residue class
  constexpr int kRowStride = Config::kWindow * Config::kTileFloats;
  constexpr int P = MV == 1 ? 2 : 1;  // partial sums per (block, row)
  float part[G][MV][P];
#pragma unroll
  for (int j = 0; j < G; ++j)
#pragma unroll
    for (int m = 0; m < MV; ++m)
#pragma unroll
      for (int h = 0; h < P; ++h) part[j][m][h] = 0.0f;
  auto residue = [&](auto r_const) {
    constexpr int R = decltype(r_const)::value;
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
    for (int j = 0; j < G; ++j) {
      const uint32_t fields = dev::residue_fields<K, R>(p[j]);
#pragma unroll
      for (int q = 0; q < T; ++q) {
        // shfl reads bits 0..4 of the lane operand: the field sits there after one shift.
        const float w = __shfl_sync(dev::kFullMask, cb_lane, int(fields >> (F * q)));
#pragma unroll
        for (int m = 0; m < MV; ++m) part[j][m][q % P] = fmaf(w, a[m][q], part[j][m][q % P]);
      }
    }
  };
  for_each_index(std::make_integer_sequence<int, F>{}, residue);
#pragma unroll
  for (int j = 0; j < G; ++j) {
    const float s = dev::decode_e4m4(code[j]);
#pragma unroll
    for (int m = 0; m < MV; ++m)
      acc[j][m] = fmaf(s, P == 2 ? part[j][m][0] + part[j][m][P - 1] : part[j][m][0], acc[j][m]);
  }
}

// Writes (or, split, reduces) a segment's [rows x ntc*128] output; even lanes own columns.
template <int MV, int G, typename T>
__device__ void store_segment(const KernelArgs& a, const Segment g, const float (&acc)[G][MV]) {
  T* C = static_cast<T*>(a.C);
  const bool even = (threadIdx.x & 1) == 0;
  auto column = [&](int j) { return (g.nt0 + j) * Config::kTileN + (threadIdx.x >> 1); };
  if (g.contributors == 1) {
#pragma unroll
    for (int j = 0; j < G; ++j) {
      if (j < g.ntc && even && column(j) < a.N) {
#pragma unroll
        for (int m = 0; m < MV; ++m)
          C[(long long)(g.row0 + m) * a.N + column(j)] = dev::from_float<T>(acc[j][m]);
      }
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < G; ++j) {
    if (j < g.ntc && even && column(j) < a.N) {
#pragma unroll
      for (int m = 0; m < MV; ++m)
        dev::splitk::add(a.ws, (long long)(g.row0 + m) * a.N + column(j), acc[j][m]);
    }
  }
  if (!dev::splitk::arrive_is_last<Config::kConsumers>(a.counters + g.tile_id, g.contributors))
    return;
#pragma unroll
  for (int j = 0; j < G; ++j) {
    if (j < g.ntc && even && column(j) < a.N) {
#pragma unroll
      for (int m = 0; m < MV; ++m) {
        const long long idx = (long long)(g.row0 + m) * a.N + column(j);
        C[idx] = dev::from_float<T>(dev::splitk::take(a.ws, idx));
      }
    }
  }
}

// One segment of a consumer thread. q is the block's ring step, carried across segments.
template <int K, int MV, typename T>
__device__ __forceinline__ void run_segment(const KernelArgs& a, const Segment g,
                                            const Ring<K>& ring, float* s_a,
                                            uint32_t& q) {  // g by value: registers
  constexpr int G = Config::kGroupTiles;
  const int t = threadIdx.x;
  const float cb_lane = dev::codebook_lane_value(a.cb, a.k_bits, t & 31);
  const int n = g.kt1 - g.kt0;
  float acc[G][MV];
#pragma unroll
  for (int j = 0; j < G; ++j)
#pragma unroll
    for (int m = 0; m < MV; ++m) acc[j][m] = 0.0f;
  for (int i = 0; i < n; ++i, ++q) {
    if (i % Config::kWindow == 0) {
      dev::sync_threads<Config::kConsumers>();  // nobody still reads the old window
      stage_a<K, MV, T>(a, g.row0, g.kt0 + i, min(Config::kWindow, n - i), s_a);
      dev::sync_threads<Config::kConsumers>();
    }
    const int st = Ring<K>::stage(q);
    dev::mbar_wait(ring.full(st), Ring<K>::parity(q));
    // Copy this thread's planes and codes to registers, then free the stage at once: the
    // producer refills it while this warp computes.
    uint32_t p[G][K], code[G];
    const uint32_t* planes = reinterpret_cast<const uint32_t*>(ring.planes(st));
#pragma unroll
    for (int j = 0; j < G; ++j) {
      dev::load_planes<K>(planes + (j * Config::kBlocksPerTile + t) * K, p[j]);
      // n-tiles past the group hold stale bits: any bits are valid indices, and scale 0 zeroes
      // them.
      code[j] = j < g.ntc ? ring.codes(st)[j * Config::kBlocksPerTile + t] : 0u;
    }
    dev::mbar_arrive(ring.empty(st));  // every consumer thread: its own reads are done
    const float* s_blk =
        s_a + (i % Config::kWindow) * Config::kTileFloats + (t & 1) * Config::kBlockFloats;
    dot_blocks<K, MV, G>(p, code, s_blk, cb_lane, acc);
  }
  // The two threads of a column (lanes t, t^1) hold its two k-blocks.
#pragma unroll
  for (int j = 0; j < G; ++j)
#pragma unroll
    for (int m = 0; m < MV; ++m) acc[j][m] += __shfl_xor_sync(dev::kFullMask, acc[j][m], 1);
  store_segment<MV, G, T>(a, g, acc);
}

// A segment of the grouped kernel: its row count (1..4) picks the unrolled body.
template <int K, typename T>
__device__ void run_rows(const KernelArgs& a, const Segment g, const Ring<K>& ring, float* s_a,
                         uint32_t& q) {
  switch (g.rows) {
    case 1:
      return run_segment<K, 1, T>(a, g, ring, s_a, q);
    case 2:
      return run_segment<K, 2, T>(a, g, ring, s_a, q);
    case 3:
      return run_segment<K, 3, T>(a, g, ring, s_a, q);
    default:
      return run_segment<K, 4, T>(a, g, ring, s_a, q);
  }
}

// Initializes the ring; returns true in the consumer threads (the producer lane streams the
// ring and returns false once it has issued every copy; the rest of its warp leaves at once).
template <int K>
__device__ bool start_block(const KernelArgs& a, const Ring<K>& ring) {
  ring.init();
  if (threadIdx.x < Config::kConsumers) return true;
  if (threadIdx.x == Config::kConsumers) produce<K>(a, ring);
  return false;
}

// MV = 1..4: dense, every segment has MV rows. MV = 0: grouped (scalar_gemv's MoE row).
template <int K, int MV, typename T>
__global__ void __maxnreg__(Config::max_regs<MV>())
    scalar_gemv_kernel(const __grid_constant__ KernelArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  Ring<K> ring(smem);
  float* s_a =
      reinterpret_cast<float*>(smem + Config::kBarrierBytes + Config::kStages * stage_bytes<K>());
  if (!start_block<K>(a, ring)) return;
  uint32_t q = 0;
  for (int s = a.first_seg[blockIdx.x]; s < a.first_seg[blockIdx.x + 1]; ++s) {
    if constexpr (MV == 0)
      run_rows<K, T>(a, a.segs[s], ring, s_a, q);
    else
      run_segment<K, MV, T>(a, a.segs[s], ring, s_a, q);
  }
}

// ---------------------------------------------------------------- host side

// The kernel for (K, rows, dtype); rows == 0 selects the grouped kernel.
template <typename T>
const void* kernel_for_type(int k, int rows) {
  return with_k_bits(k, [&](auto k_const) {
    constexpr int KB = decltype(k_const)::value;
    if (rows == 0) return reinterpret_cast<const void*>(scalar_gemv_kernel<KB, 0, T>);
    return with_rows_1_to_4(rows, [&](auto r_const) {
      return reinterpret_cast<const void*>(scalar_gemv_kernel<KB, decltype(r_const)::value, T>);
    });
  });
}

const void* kernel_for(int k, int rows, DType t) {
  return t == DType::f16 ? kernel_for_type<__half>(k, rows)
                         : kernel_for_type<__nv_bfloat16>(k, rows);
}

struct GemvState : VariantState {
  GemmDims dims;
  const void* kernel = nullptr;
  int grid = 0, smem_bytes = 0, n_tiles = 0, k_tiles = 0, units_per_block = 0, split_tiles = 0;
  int blocks_per_sm = 0;
  DeviceBuffer<Segment> segs;
  DeviceBuffer<int> first_seg;
  DeviceBuffer<float> ws;
  DeviceBuffer<int> counters;
  std::string describe() const override {
    return "tile 64x128, " + std::to_string(Config::kGroupTiles) + " n-tiles/thread, stripes of " +
           std::to_string(units_per_block) + " (n-group, k-tile) units over " +
           std::to_string(grid) + " blocks, " + std::to_string(split_tiles) + " tiles split, " +
           std::to_string(Config::kStages) + "-stage bulk-copy ring, " +
           std::to_string(blocks_per_sm) + " blocks/SM";
  }
  std::int64_t extra_additions() const override { return dims.K_dim / 32 + 2 * (k_tiles + 1); }
};

// An output tile before striping: rows of one expert, a group of up to 4 n-tiles.
struct OutTile {
  int expert, row0, rows, nt0, ntc;
};

// Cuts units (tile-major, k-tile minor) into stripes of `per` units, one per block.
void build_stripes(GemvState& s, const std::vector<OutTile>& tiles, int per) {
  const long long units = (long long)tiles.size() * s.k_tiles;
  s.grid = int((units + per - 1) / per);
  s.units_per_block = per;
  std::vector<Segment> segs;
  std::vector<int> first(std::size_t(s.grid) + 1, 0), contributors(tiles.size(), 0);
  for (int b = 0; b < s.grid; ++b) {
    first[std::size_t(b)] = int(segs.size());
    for (long long u = (long long)b * per, end = std::min(units, (long long)(b + 1) * per);
         u < end;) {
      const int ti = int(u / s.k_tiles), kt0 = int(u % s.k_tiles);
      const int kt1 = int(std::min<long long>(s.k_tiles, kt0 + (end - u)));
      const OutTile& o = tiles[std::size_t(ti)];
      segs.push_back({o.expert, o.row0, o.rows, o.nt0, o.ntc, kt0, kt1, ti, 0});
      ++contributors[std::size_t(ti)];
      u += kt1 - kt0;
    }
  }
  first[std::size_t(s.grid)] = int(segs.size());
  s.split_tiles = 0;
  for (auto& g : segs) g.contributors = contributors[std::size_t(g.tile_id)];
  for (int c : contributors) s.split_tiles += c > 1;
  s.segs = DeviceBuffer<Segment>(segs.size());
  KBIT_CUDA_CHECK(
      cudaMemcpy(s.segs.get(), segs.data(), segs.size() * sizeof(Segment), cudaMemcpyHostToDevice));
  s.first_seg = DeviceBuffer<int>(first);
  if (s.split_tiles > 0) {
    s.ws = DeviceBuffer<float>(std::size_t(s.dims.M * s.dims.N));
    s.counters = DeviceBuffer<int>(tiles.size());
    s.ws.fill_bytes(0);
    s.counters.fill_bytes(0);
  }
  KBIT_CUDA_CHECK(cudaDeviceSynchronize());
}

// Stripe length: one stripe per resident block (balanced, no tail wave), never below
// kMinUnits k-tiles; split-K forced off keeps whole tiles, forced on splits every tile.
int stripe_units(long long units, int k_tiles, int slots, SplitMode mode) {
  if (mode == SplitMode::force_off) {
    const long long tiles = units / k_tiles;
    return int((tiles + std::min<long long>(tiles, slots) - 1) /
               std::min<long long>(tiles, slots)) *
           k_tiles;
  }
  if (mode == SplitMode::force_on && k_tiles >= 2) return (k_tiles + 1) / 2;
  const long long per = (units + slots - 1) / slots;
  return int(std::max<long long>(per, std::min(k_tiles, Config::kMinUnits)));
}

// The weight ring is fed by cp.async.bulk and mbarrier transaction counts: sm_90 and newer.
void require_bulk_copy(const char* who) {
  int dev = 0, major = 0, minor = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major < 9)
    throw Error(std::string(who) + ": needs compute capability 9.0 or newer (cp.async.bulk); " +
                "this device is " + std::to_string(major) + "." + std::to_string(minor));
}

void plan(GemvState& s, const std::vector<OutTile>& tiles, int rows_template,
          const VariantOptions& o) {
  require_bulk_copy(rows_template == 0 ? "grouped_scalar_gemv" : "scalar_gemv");
  s.kernel = kernel_for(s.dims.k_bits, rows_template, s.dims.dtype);
  s.smem_bytes = with_k_bits(s.dims.k_bits, [&](auto k_const) {
    return smem_bytes<decltype(k_const)::value>(rows_template == 0 ? Config::kMaxRows
                                                                   : rows_template);
  });
  KBIT_CUDA_CHECK(
      cudaFuncSetAttribute(s.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, s.smem_bytes));
  int per_sm = 0, dev = 0, sms = 0;
  KBIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, s.kernel, Config::kThreads,
                                                                s.smem_bytes));
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  s.blocks_per_sm = per_sm;
  if (tiles.empty()) return;  // grouped problem with no rows at all: nothing to launch
  const long long units = (long long)tiles.size() * s.k_tiles;
  build_stripes(s, tiles, stripe_units(units, s.k_tiles, std::max(1, per_sm) * sms, o.split_k));
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
  a.segs = s.segs.get();
  a.first_seg = s.first_seg.get();
  a.ws = s.ws.get();
  a.counters = s.counters.get();
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  a.k_bits = g.codebook.k_bits;
  return a;
}

void launch(const GemvState& s, const GemmDims& d, const GemmArgs& g, cudaStream_t stream,
            const char* who) {
  if (g.w.layout.kind != LayoutKind::tiled ||
      !(g.w.layout.tiles == TileConfig{Config::kTileK, Config::kTileN}))
    throw Error(std::string(who) + ": needs the tiled 64x128 layout, got " +
                layout_name(g.w.layout));
  if (s.grid == 0) return;
  KernelArgs a = make_args(s, d, g);
  void* params[] = {&a};
  KBIT_CUDA_CHECK(cudaLaunchKernel(s.kernel, dim3(s.grid), dim3(Config::kThreads), params,
                                   s.smem_bytes, stream));
}

void check_common(const GemmDims& d, const char* who) {
  if (d.dtype == DType::f32)
    throw Error(std::string(who) + ": dtype fp32 is not supported (fp16, bf16)");
  if (d.K_dim % 32 != 0 || d.K_dim < 32)
    throw Error(std::string(who) + ": K_dim = " + std::to_string(d.K_dim) +
                " must be a positive multiple of 32");
  if (d.N < 1)
    throw Error(std::string(who) + ": N = " + std::to_string(d.N) + " must be at least 1");
}

std::unique_ptr<GemvState> new_state(const GemmDims& d) {
  auto s = std::make_unique<GemvState>();
  s->dims = d;
  s->n_tiles = int((d.N + Config::kTileN - 1) / Config::kTileN);
  s->k_tiles = int((d.K_dim + Config::kTileK - 1) / Config::kTileK);
  return s;
}

// The output tiles of `rows` rows starting at row0: groups of up to 4 n-tiles.
void add_tiles(std::vector<OutTile>& out, int expert, int row0, int rows, int n_tiles) {
  for (int nt = 0; nt < n_tiles; nt += Config::kGroupTiles)
    out.push_back({expert, row0, rows, nt, std::min(Config::kGroupTiles, n_tiles - nt)});
}

}  // namespace

std::unique_ptr<VariantState> scalar_gemv_setup(const GemmDims& d, const VariantOptions& o) {
  check_common(d, "scalar_gemv");
  if (d.grouped()) throw Error("scalar_gemv: grouped problems go to grouped_scalar_gemv");
  if (d.M < 1 || d.M > Config::kMaxRows)
    throw Error("scalar_gemv: M = " + std::to_string(d.M) +
                " is outside 1..4 (use an MMA variant for larger M)");
  auto s = new_state(d);
  std::vector<OutTile> tiles;
  add_tiles(tiles, 0, 0, int(d.M), s->n_tiles);
  plan(*s, tiles, int(d.M), o);
  return s;
}

void scalar_gemv_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                     cudaStream_t stream) {
  launch(*static_cast<GemvState*>(state), d, g, stream, "scalar_gemv");
}

std::unique_ptr<VariantState> grouped_scalar_gemv_setup(const GemmDims& d,
                                                        const VariantOptions& o) {
  check_common(d, "grouped_scalar_gemv");
  if (!d.grouped()) throw Error("grouped_scalar_gemv: needs a grouped (MoE) problem");
  const auto& off = d.expert_offsets;
  if (off.size() != std::size_t(d.num_experts) + 1)
    throw Error("grouped_scalar_gemv: expert_offsets has " + std::to_string(off.size()) +
                " entries; " + std::to_string(d.num_experts) + " experts need " +
                std::to_string(d.num_experts + 1));
  if (off.front() != 0)
    throw Error("grouped_scalar_gemv: expert_offsets[0] = " + std::to_string(off.front()) +
                " must be 0");
  for (std::size_t e = 0; e + 1 < off.size(); ++e) {
    if (off[e + 1] < off[e])
      throw Error("grouped_scalar_gemv: expert_offsets is not monotonic at expert " +
                  std::to_string(e) + " (" + std::to_string(off[e]) + " then " +
                  std::to_string(off[e + 1]) + ")");
  }
  if (off.back() > d.M)
    throw Error("grouped_scalar_gemv: expert_offsets ends at row " + std::to_string(off.back()) +
                ", past the end of A (" + std::to_string(d.M) + " rows)");
  auto s = new_state(d);
  std::vector<OutTile> tiles;  // row groups of at most 4 rows per expert
  for (int e = 0; e < d.num_experts; ++e)
    for (std::int64_t r = off[std::size_t(e)]; r < off[std::size_t(e) + 1]; r += Config::kMaxRows)
      add_tiles(tiles, e, int(r),
                int(std::min<std::int64_t>(Config::kMaxRows, off[std::size_t(e) + 1] - r)),
                s->n_tiles);
  plan(*s, tiles, 0, o);
  return s;
}

void grouped_scalar_gemv_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                             cudaStream_t stream) {
  launch(*static_cast<GemvState*>(state), d, g, stream, "grouped_scalar_gemv");
}

}  // namespace kbit::variants
