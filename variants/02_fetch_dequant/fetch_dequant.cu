// Variant 02: dequantize during the fetch (the design documents' phase 2, 001 sections 3-5).
// Variant 01 dequantizes every B fragment inside the MMA loop, once per k16 step and per warp
// that needs it (98% of its instructions). Here each quantization block is dequantized once per
// k-tile, by one thread, into an fp16/bf16 B tile in shared memory laid out for ldmatrix; the
// MMA loop is then ldmatrix + mma.sync only, as cuBLAS's. README.md beside this file says what
// is the design documents' and what the H100 changed, with what each step bought.
//
// * A stage of the cp.async ring (kStages deep, Option A of the design documents) holds one
//   k-tile: the A tile (16 * MB rows x 64, XOR-swizzled 16-byte chunks) and the raw tile of the
//   tiled layout (128 columns x 2 blocks x K plane words, then 256 E4M4 codes), both copied
//   16 bytes at a time; the loads walk the block's units with a cursor (no division per stage).
// * Dequantization (the fetch side): thread t takes block t of the raw tile (column t / 2,
//   k-block t % 2): its planes -> 4x4 bit transposes -> 16 natural-order index pairs -> 16
//   lookups in the 64 KB pair table (variants/common/pair_lut.cuh, one PRMT + one LDS a pair,
//   bank-conflict free) -> 16 HMUL2 by the decoded scale -> four 16-byte stores into the B tile,
//   [column][k] rows of 128 bytes with the A tile's XOR swizzle (ldmatrix-ready, conflict free).
//   The design documents' sketch extracts each index bit by bit and looks it up with a shuffle
//   (~20 instructions a weight); this is ~2.5.
// * The B tile is double-buffered in the unused halves of the table's rows, so one barrier per
//   k-tile serves both: in iteration i each warp issues the MMAs of k-tile i and, between its k16
//   steps, dequantizes a quarter of k-tile i + 1 into the other buffer (the ALU and table work of
//   the fetch overlaps the tensor pipe inside each warp: Option B's order on Option A's ring).
//   Table and buffers in 64 KB let two blocks (16 warps) share an SM up to M = 64.
// * Blocks own contiguous stripes of (tile, k-tile) units over every resident slot, the stream
//   continuing across tile boundaries; a tile split between stripes ends through the
//   self-cleaning split-K workspace (variants/common/splitk.cuh). Tiles are ordered n-tile
//   major, so the m-tiles of one n-tile follow each other and re-read its weights from L2.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "reference/error.hpp"
#include "variants/02_fetch_dequant/fetch_dequant.hpp"
#include "variants/common/cp_async.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/dispatch.hpp"
#include "variants/common/dtype.cuh"
#include "variants/common/e4m4.cuh"
#include "variants/common/load.cuh"
#include "variants/common/mma.cuh"
#include "variants/common/occupancy.hpp"
#include "variants/common/pair_lut.cuh"
#include "variants/common/splitk.cuh"
#include "variants/common/splitk_workspace.hpp"

namespace kbit::variants {
namespace {

struct Config {
  static constexpr int kThreads = 256;  // 8 warps; thread t dequantizes block t of a k-tile
  static constexpr int kTileK = 64;     // one tile of the tiled layout per k-step:
  static constexpr int kTileN = 128;    //   128 columns x 2 blocks of 32 = 256 blocks
  static constexpr int kKbPerTile = kTileK / 32;
  static constexpr int kRowBytes = kTileK * 2;            // A and B rows: 8 chunks of 16 B
  static constexpr int kCodeBytes = kTileN * kKbPerTile;  // 256 E4M4 codes per tile
  // The 64 KB pair table (rows of 256 bytes) uses bytes 0..127 of each row; the two B tiles
  // (128 rows of 128 bytes each) live in bytes 128..255 of rows 0..127 and 128..255, so table
  // and B buffers take 64 KB, not 96: what lets two blocks share an SM at M <= 64.
  static constexpr int kLutBytes = dev::pair_lut::kBytes;
  static_assert(dev::pair_lut::kRowBytes == 2 * kRowBytes && dev::pair_lut::kRows == 2 * kTileN,
                "a B row in the unused half of every table row");
  // Shared memory per block: two blocks per SM (16 warps to hide the dequantization's latency)
  // where the ring still gets 3 stages, else one with the H100's 227 KB (less 1 KB static).
  static constexpr int kSmemPerSm = 233472;              // the H100's 228 KB per SM
  static constexpr int kReservedPerBlock = 1024 + 1024;  // the driver's 1 KB + static smem
  static constexpr int kMaxStages = 8;                   // 7 k-tiles in flight per block at most
  static constexpr int kMinUnits = 4;  // k-tiles per stripe at least: a stripe pays one prologue
  static_assert(kTileN * kKbPerTile == kThreads, "one block of 32 per thread");
};

// The warps' tiling of the block's (16 * MB) x 128 output: WM x WN warps, each WMB m16 blocks
// x WNB n8 blocks. One m-row of warps below M = 64 (every warp shares the A fragments of all
// rows); 2 x 4 warps from there (fewer ldmatrix per MMA: 4 for 8 MMAs at 64 rows, against 5).
template <int MB>
struct WarpTile {
  static constexpr int WM = MB >= 4 ? 2 : 1;
  static constexpr int WN = 8 / WM;
  static constexpr int WMB = MB / WM;
  static constexpr int WNB = Config::kTileN / 8 / WN;
  static_assert(WM * WMB == MB && WN * WNB * 8 == Config::kTileN && WNB % 2 == 0, "tiling");
};

// Shared memory: the pair table with the two B tiles in its rows' unused halves, then the ring
// of kStages stages, each the A tile, the raw planes and the raw codes of one k-tile.
template <int K, int MB>
struct Layout {
  static constexpr int kABytes = 16 * MB * Config::kRowBytes;
  static constexpr int kPlaneBytes = Config::kTileN * Config::kKbPerTile * K * 4;
  static constexpr int kStageBytes = kABytes + kPlaneBytes + Config::kCodeBytes;
  static constexpr int stages_for(int blocks) {
    return std::min(Config::kMaxStages,
                    (Config::kSmemPerSm / blocks - Config::kReservedPerBlock - Config::kLutBytes) /
                        kStageBytes);
  }
  static constexpr int kBlocksPerSm = stages_for(2) >= 3 ? 2 : 1;
  static constexpr int kStages = stages_for(kBlocksPerSm);
  static constexpr int kRing = Config::kLutBytes;  // the stages follow the table
  static constexpr int kBytes = kRing + kStages * kStageBytes;
  static_assert(kStages >= 3, "the loop waits for k-tile i + 1 while i + 2 may be in flight");
};

struct Args {
  const void* A;
  void* C;
  const uint32_t* packed;
  const uint8_t* absmax;
  int M, N, K_dim, m_tiles, n_tiles, k_tiles;
  int units, per;  // units = tiles x k_tiles; block b streams units [b * per, (b + 1) * per)
  float* ws;       // split-K workspace [M][N] fp32, zero between calls
  int* counters;   // one per tile, zero between calls
  float cb[32];
};

// Byte offset of 16-byte chunk `ch` of row `row` in an A or B tile (XOR swizzle: the 8 rows an
// ldmatrix phase reads land in 8 different chunks, all 32 banks).
__device__ __forceinline__ int swizzled(int row, int ch) {
  return row * Config::kRowBytes + ((ch ^ (row & 7)) << 4);
}

// The load side's walk over the block's units, one step per issued stage, and each thread's
// share of a stage's copies, whose offsets are fixed per thread: no division in the loop (a
// division of the unit index per stage, with generic copy loops, is ~350 of ~520 instructions per
// k-tile: README.md beside this file, v1 -> v2).
template <int K, int MB, typename T>
struct Loader {
  using L = Layout<K, MB>;
  static constexpr int kAChunks = 16 * MB * 8;  // 16-byte chunks of the A tile
  static constexpr int kAIters = (kAChunks + Config::kThreads - 1) / Config::kThreads;
  static constexpr int kPChunks = L::kPlaneBytes / 16;
  static constexpr int kPIters = (kPChunks + Config::kThreads - 1) / Config::kThreads;
  static_assert(Config::kThreads % 8 == 0, "a thread keeps its chunk column in every A row");
  int nt, mt, kt;               // the next unit to load
  const T* a_row;               // A + (row of chunk 0 in m-tile 0) * K_dim + chunk column * 8
  int a_row0, a_k0;             // that row and element column, for the bounds
  const unsigned char* planes;  // the next unit's raw tile + this thread's first chunk
  const uint8_t* codes;
  long long tile_step;  // bytes of planes from one k-tile of an n-tile to the next k-tile
  __device__ Loader(const Args& a, int u) {
    const int t = u / a.k_tiles;  // once per block
    kt = u - t * a.k_tiles;
    nt = t / a.m_tiles;
    mt = t - nt * a.m_tiles;
    a_row0 = int(threadIdx.x) >> 3;
    a_k0 = (int(threadIdx.x) & 7) * 8;
    a_row = static_cast<const T*>(a.A) + (long long)a_row0 * a.K_dim + a_k0;
    tile_step = (long long)a.n_tiles * L::kPlaneBytes;
    set_tile(a);
  }
  __device__ void set_tile(const Args& a) {
    const long long tile = (long long)kt * a.n_tiles + nt;
    planes =
        reinterpret_cast<const unsigned char*>(a.packed) + tile * L::kPlaneBytes + threadIdx.x * 16;
    codes = a.absmax + tile * Config::kCodeBytes + threadIdx.x * 16;
  }
  // Issues the copies of the next unit into `st`, then steps to the unit after it.
  __device__ __forceinline__ void load(const Args& a, unsigned char* st) {
    const int k = kt * Config::kTileK + a_k0;
    const long long m_off = (long long)mt * 16 * MB * a.K_dim + (long long)kt * Config::kTileK;
#pragma unroll
    for (int j = 0; j < kAIters; ++j) {
      if (kAChunks % Config::kThreads != 0 && int(threadIdx.x) + j * Config::kThreads >= kAChunks)
        break;
      const int row = a_row0 + j * (Config::kThreads / 8);
      const bool in = mt * 16 * MB + row < a.M && k < a.K_dim;
      const T* src = a_row + m_off + (long long)j * (Config::kThreads / 8) * a.K_dim;
      dev::cp_async_16(st + swizzled(row, a_k0 >> 3), in ? src : static_cast<const T*>(a.A),
                       in ? 16 : 0);
    }
#pragma unroll
    for (int j = 0; j < kPIters; ++j) {
      if (kPChunks % Config::kThreads != 0 && int(threadIdx.x) + j * Config::kThreads >= kPChunks)
        break;
      dev::cp_async_16(st + L::kABytes + (threadIdx.x + j * Config::kThreads) * 16,
                       planes + j * Config::kThreads * 16);
    }
    if (threadIdx.x < Config::kCodeBytes / 16)
      dev::cp_async_16(st + L::kABytes + L::kPlaneBytes + threadIdx.x * 16, codes);
    // Next unit: k-tiles fastest, then the m-tiles of the n-tile, then the n-tiles.
    if (++kt < a.k_tiles) {
      planes += tile_step;
      codes += (long long)a.n_tiles * Config::kCodeBytes;
      return;
    }
    kt = 0;
    if (++mt == a.m_tiles) mt = 0, ++nt;
    set_tile(a);
  }
};

// A thread's shared-memory offsets, the same in every k-tile (the swizzle's row term is the
// lane's low 3 bits everywhere): computed once, so that the loop adds only the stage's and the
// buffer's base. Recomputed per k-tile they are ~50 of ~230 instructions a thread spends per
// k-tile at M = 16, 7.3 instructions a weight (README.md beside this file, v3 -> v4).
template <int MB>
struct Lanes {
  int a_row;          // A: row (16-row block 0, the lane's ldmatrix row) x 128
  int a_x[4];         // A: the swizzled chunk of k16 step ks, x 16
  int b_row;          // B: the lane's ldmatrix row n in buffer 0 (n8 pair 0)
  int b_x[4];         // B: the swizzled chunk of k16 step ks, x 16
  int d_row, d_x[4];  // dequantization: this thread's B row and its 4 chunks (buffer 0)
  __device__ __forceinline__ Lanes() {
    using W = WarpTile<MB>;
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31, q = lane >> 3, r7 = lane & 7;
    a_row = ((warp / W::WN) * W::WMB * 16 + (q & 1) * 8 + r7) * Config::kRowBytes;
    b_row = b_row_of(0, (warp % W::WN) * W::WNB * 8 + (q >> 1) * 8 + r7);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      a_x[ks] = ((2 * ks + (q >> 1)) ^ r7) << 4;
      b_x[ks] = ((2 * ks + (q & 1)) ^ r7) << 4;
    }
    const int n = t >> 1, kb = t & 1;
    d_row = b_row_of(0, n);
#pragma unroll
    for (int c = 0; c < 4; ++c) d_x[c] = ((kb * 4 + c) ^ (n & 7)) << 4;
  }
  // Byte offset of row n of B buffer `buf`: the second half of table row 128 * buf + n.
  static __device__ __forceinline__ int b_row_of(int buf, int n) {
    return (buf * Config::kTileN + n) * dev::pair_lut::kRowBytes + Config::kRowBytes;
  }
};
// Bytes from B buffer 0 to buffer 1 (128 table rows further).
constexpr int kBufferStride = Config::kTileN * dev::pair_lut::kRowBytes;

// The fetch side of one block: thread t dequantizes block t of a stage's raw tile (column
// n = t / 2, elements 32 kb .. 32 kb + 31 of its B row, kb = t % 2). The bit transposes and the
// scale come first; chunk<C>() looks up and stores chunk C (8 elements, one 16-byte store), so
// that the 4 chunks can be interleaved with the MMA k-steps of the previous k-tile: the tensor
// pipe's latency and the table's hide each other within one warp.
template <int K, int MB, typename T>
struct Dequant {
  using L = Layout<K, MB>;
  dev::pair_lut::NaturalPairs<K> words;
  uint32_t scale2;
  __device__ __forceinline__ static dev::pair_lut::NaturalPairs<K> planes_of(
      const unsigned char* st) {
    uint32_t p[K];
    dev::load_planes<K>(reinterpret_cast<const uint32_t*>(st + L::kABytes) + threadIdx.x * K, p);
    return dev::pair_lut::NaturalPairs<K>(p);
  }
  __device__ __forceinline__ Dequant(const unsigned char* st) : words(planes_of(st)) {
    const float scale = dev::decode_e4m4(st[L::kABytes + L::kPlaneBytes + threadIdx.x]);
    scale2 = dev::pack2<T>(scale, scale);
  }
  // Chunk C into the B buffer that starts `b` bytes into shared memory.
  template <int C>
  __device__ __forceinline__ void chunk(unsigned char* smem, int b, const Lanes<MB>& ln) const {
    uint32_t pr[4];
    words.template chunk<C>(smem, dev::pair_lut::pair_column(threadIdx.x & 31), pr);
    const uint4 v = make_uint4(dev::mul2<T>(pr[0], scale2), dev::mul2<T>(pr[1], scale2),
                               dev::mul2<T>(pr[2], scale2), dev::mul2<T>(pr[3], scale2));
    *reinterpret_cast<uint4*>(smem + b + ln.d_row + ln.d_x[C]) = v;
  }
};

// Accumulator sets: two at M <= 32, even and odd k16 steps alternating, so that a warp's MMAs
// form chains half as deep (its 2 n8 blocks alone gave 4-deep chains per k-tile); one from
// M = 64 up, where 8 or 16 MMA blocks per warp are enough independent chains.
template <int MB>
constexpr int kAccSets = MB <= 2 ? 2 : 1;

// One k-tile of the compute side (the warp's WMB x WNB MMA blocks: ldmatrix + mma.sync only),
// with the next k-tile's dequantization (chunk ks after k-step ks) when `next` is given.
template <int K, int MB, typename T>
__device__ __forceinline__ void mma_stage(
    const unsigned char* a_tile, unsigned char* smem, int buf, const Dequant<K, MB, T>* next,
    const Lanes<MB>& ln, float (&acc)[kAccSets<MB>][WarpTile<MB>::WMB][WarpTile<MB>::WNB][4]) {
  using W = WarpTile<MB>;
  const unsigned char* b_tile = smem + buf * kBufferStride + ln.b_row;
  const unsigned char* a_base = a_tile + ln.a_row;
  dev::pair_lut::for_each_index(
      std::make_integer_sequence<int, Config::kTileK / 16>{}, [&](auto ks_c) {
        constexpr int ks = decltype(ks_c)::value, set = ks % kAccSets<MB>;
        uint32_t af[W::WMB][4], bf[W::WNB][2];
#pragma unroll
        for (int mb = 0; mb < W::WMB; ++mb)  // matrices: rows 0-7 / 8-15 x k 0-7 / 8-15
          dev::ldmatrix_x4(af[mb], a_base + mb * 16 * Config::kRowBytes + ln.a_x[ks]);
#pragma unroll
        for (int np = 0; np < W::WNB / 2;
             ++np) {  // matrices: (n8 block 2np, 2np+1) x (k 0-7, 8-15)
          uint32_t r[4];
          dev::ldmatrix_x4(r, b_tile + np * 16 * dev::pair_lut::kRowBytes + ln.b_x[ks]);
          bf[2 * np][0] = r[0], bf[2 * np][1] = r[1], bf[2 * np + 1][0] = r[2],
                 bf[2 * np + 1][1] = r[3];
        }
#pragma unroll
        for (int mb = 0; mb < W::WMB; ++mb)
#pragma unroll
          for (int nb = 0; nb < W::WNB; ++nb)
            dev::mma_m16n8k16<T>(acc[set][mb][nb], af[mb], bf[nb]);
        if (next) next->template chunk<ks>(smem, (buf ^ 1) * kBufferStride, ln);
      });
}

// Writes tile t's sums: straight to C when this stripe is its only contributor, else through the
// workspace, whose last contributor converts them (one L2 round trip for all its sums).
template <int MB, typename T>
__device__ void store_tile(
    const Args& a, int t, int contributors,
    const float (&acc)[kAccSets<MB>][WarpTile<MB>::WMB][WarpTile<MB>::WNB][4]) {
  using W = WarpTile<MB>;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nt = t / a.m_tiles, mt = t - nt * a.m_tiles;
  const int row0 = mt * 16 * MB + (warp / W::WN) * W::WMB * 16 + (lane >> 2);
  const int col0 = nt * Config::kTileN + (warp % W::WN) * W::WNB * 8 + 2 * (lane & 3);
  T* C = static_cast<T*>(a.C);
  // fn(r, index into C and the workspace or -1 outside M x N, sum); M * N < 2^31 (setup).
  auto for_each = [&](auto&& fn) {
#pragma unroll
    for (int mb = 0; mb < W::WMB; ++mb)
#pragma unroll
      for (int nb = 0; nb < W::WNB; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row0 + mb * 16 + (e >> 1) * 8, col = col0 + nb * 8 + (e & 1);
          float v = acc[0][mb][nb][e];
#pragma unroll
          for (int set = 1; set < kAccSets<MB>; ++set) v += acc[set][mb][nb][e];
          fn((mb * W::WNB + nb) * 4 + e, row < a.M && col < a.N ? row * a.N + col : -1, v);
        }
  };
  dev::splitk::store_tile<W::WMB * W::WNB * 4>(C, a.ws, a.counters + t, contributors, for_each);
}

template <int K, int MB, typename T>
__global__ void __launch_bounds__(Config::kThreads, Layout<K, MB>::kBlocksPerSm)
    fetch_dequant_kernel(const __grid_constant__ Args a) {
  using L = Layout<K, MB>;
  using W = WarpTile<MB>;
  constexpr int S = L::kStages;
  extern __shared__ __align__(128) unsigned char smem[];
  auto stage = [&](int i) { return smem + L::kRing + (i % S) * L::kStageBytes; };

  const int u0 = blockIdx.x * a.per, n = min(a.units, u0 + a.per) - u0;
  Loader<K, MB, T> loader(a, u0);
  // The ring's prologue first (its copies fly while the table is built).
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < n) loader.load(a, stage(s));
    dev::cp_async_commit();
  }
  {
    __shared__ float s_cb[32];  // the codebook, copied once (see pair_lut::build)
    if (threadIdx.x < 32) s_cb[threadIdx.x] = a.cb[threadIdx.x];
    __syncthreads();
    dev::pair_lut::build<K, T>(smem, s_cb, threadIdx.x, Config::kThreads);
  }
  dev::cp_async_wait<S - 2>();  // unit 0 has landed (this thread's copies) ...
  __syncthreads();              // ... every thread's, and the table is built (B rows too)
  const Lanes<MB> ln;
  {
    const Dequant<K, MB, T> first(stage(0));
    dev::pair_lut::for_each_index(std::make_integer_sequence<int, 4>{}, [&](auto c) {
      first.template chunk<decltype(c)::value>(smem, 0, ln);
    });
  }

  float acc[kAccSets<MB>][W::WMB][W::WNB][4];
  auto zero = [&] {
#pragma unroll
    for (int set = 0; set < kAccSets<MB>; ++set)
#pragma unroll
      for (int mb = 0; mb < W::WMB; ++mb)
#pragma unroll
        for (int nb = 0; nb < W::WNB; ++nb)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[set][mb][nb][e] = 0.0f;
  };
  zero();
  int t = u0 / a.k_tiles, kt = u0 - t * a.k_tiles;  // the compute side's tile and k-tile
  for (int i = 0; i < n; ++i) {
    dev::cp_async_wait<S - 3>();  // unit i + 1 has landed (this thread's copies) ...
    __syncthreads();              // ... every thread's; B tile i is complete; stage i - 1 is free
    if (i + S - 1 < n) loader.load(a, stage(i + S - 1));
    dev::cp_async_commit();
    if (i + 1 < n) {
      const Dequant<K, MB, T> next(stage(i + 1));
      mma_stage<K, MB, T>(stage(i), smem, i & 1, &next, ln, acc);
    } else {
      mma_stage<K, MB, T>(stage(i), smem, i & 1, nullptr, ln, acc);
    }
    if (++kt == a.k_tiles || i == n - 1) {  // the stripe's part of tile t ends
      // Stripes whose unit ranges meet tile t's k-tiles.
      const int contributors = dev::splitk::stripe_contributors(t, a.k_tiles, a.per);
      store_tile<MB, T>(a, t, contributors, acc);
      zero();
      ++t, kt = 0;
    }
  }
  dev::cp_async_wait<0>();
}

// ---------------------------------------------------------------- host side

template <typename T>
const void* kernel_for_type(int k, int mb) {
  return with_k_bits(k, [&](auto k_const) -> const void* {
    constexpr int KB = decltype(k_const)::value;
    switch (mb) {
      case 1:
        return reinterpret_cast<const void*>(fetch_dequant_kernel<KB, 1, T>);
      case 2:
        return reinterpret_cast<const void*>(fetch_dequant_kernel<KB, 2, T>);
      case 4:
        return reinterpret_cast<const void*>(fetch_dequant_kernel<KB, 4, T>);
      default:
        return reinterpret_cast<const void*>(fetch_dequant_kernel<KB, 8, T>);
    }
  });
}

// {shared memory bytes, stages} of the kernel for (K, MB).
std::pair<int, int> layout_of(int k, int mb) {
  return with_k_bits(k, [&](auto k_const) {
    constexpr int KB = decltype(k_const)::value;
    switch (mb) {
      case 1:
        return std::pair{Layout<KB, 1>::kBytes, Layout<KB, 1>::kStages};
      case 2:
        return std::pair{Layout<KB, 2>::kBytes, Layout<KB, 2>::kStages};
      case 4:
        return std::pair{Layout<KB, 4>::kBytes, Layout<KB, 4>::kStages};
      default:
        return std::pair{Layout<KB, 8>::kBytes, Layout<KB, 8>::kStages};
    }
  });
}

struct FetchState : VariantState {
  GemmDims dims;
  int m_blocks = 1, m_tiles = 0, n_tiles = 0, k_tiles = 0, units = 0, per = 0, grid = 0;
  int stages = 0, smem_bytes = 0;
  const void* kernel = nullptr;
  SplitKWorkspace split;  // its split tiles; allocated when a tile is split
  std::string describe() const override {
    return "tile " + std::to_string(16 * m_blocks) + " x 128 x 64, " + std::to_string(stages) +
           "-stage cp.async ring, B dequantized by pair table into 2 ldmatrix-ready buffers, "
           "stripes of " +
           std::to_string(per) + " k-tiles over " + std::to_string(grid) + " blocks, " +
           std::to_string(split.split_tiles) + " of " + std::to_string(m_tiles * n_tiles) +
           " tiles split";
  }
  // Split-K partial sums (one per contributor) on top of the K_dim additions.
  std::int64_t extra_additions() const override { return split.max_contributors + 1; }
};

// Units per stripe: every resident slot busy (automatic), whole tiles per stripe (split off),
// or every tile split (on, where a tile has 2 k-tiles or more).
int stripe_units(int tiles, int k_tiles, int slots, SplitMode mode) {
  const int total = tiles * k_tiles;
  const int even = (total + slots - 1) / slots;
  switch (mode) {
    case SplitMode::force_off:
      return ((tiles + slots - 1) / slots) * k_tiles;
    case SplitMode::force_on:
      return k_tiles < 2 ? even : std::max(1, std::min(even, k_tiles - 1));
    default:
      return std::max(std::min(Config::kMinUnits, k_tiles), even);
  }
}

}  // namespace

std::unique_ptr<VariantState> fetch_dequant_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "fetch_dequant";
  require_dense_gemm_dims(d, who);
  require_compute_capability(8, who, "cp.async, ldmatrix and bf16 mma.sync");
  auto s = std::make_unique<FetchState>();
  s->dims = d;
  s->m_blocks = d.M <= 16 ? 1 : d.M <= 32 ? 2 : d.M <= 64 ? 4 : 8;
  s->m_tiles = int((d.M + 16 * s->m_blocks - 1) / (16 * s->m_blocks));
  s->n_tiles = int((d.N + Config::kTileN - 1) / Config::kTileN);
  s->k_tiles = int((d.K_dim + Config::kTileK - 1) / Config::kTileK);
  const long long units = (long long)s->m_tiles * s->n_tiles * s->k_tiles;
  if (units >= (1ll << 31))
    throw Error(std::string(who) + ": " + std::to_string(units) +
                " (tile, k-tile) units reach the 32-bit limit 2^31");
  s->units = int(units);
  s->kernel = d.dtype == DType::f16 ? kernel_for_type<__half>(d.k_bits, s->m_blocks)
                                    : kernel_for_type<__nv_bfloat16>(d.k_bits, s->m_blocks);
  std::tie(s->smem_bytes, s->stages) = layout_of(d.k_bits, s->m_blocks);
  const int slots = resident_blocks(s->kernel, Config::kThreads, s->smem_bytes, who);
  const int tiles = s->m_tiles * s->n_tiles;
  s->per = stripe_units(tiles, s->k_tiles, slots, o.split_k);
  s->grid = int((units + s->per - 1) / s->per);
  // The workspace and counters, zeroed once when a tile is split; each call leaves them so.
  s->split.plan(d.M * d.N, 0, tiles,
                [&](int t) { return dev::splitk::stripe_contributors(t, s->k_tiles, s->per); });
  return s;
}

void fetch_dequant_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                       cudaStream_t stream) {
  auto* s = static_cast<FetchState*>(state);
  require_tiled_args(g, d, TileConfig{Config::kTileK, Config::kTileN}, "fetch_dequant");
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
  a.units = s->units;
  a.per = s->per;
  a.ws = s->split.sums.get();
  a.counters = s->split.counters.get();
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  void* params[] = {&a};
  KBIT_CUDA_CHECK(cudaLaunchKernel(s->kernel, dim3(s->grid), dim3(Config::kThreads), params,
                                   s->smem_bytes, stream));
}

}  // namespace kbit::variants
