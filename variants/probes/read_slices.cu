// read_slices: the streaming probe of a column-slice GEMV design (registry family "probe": no
// GEMM, C = 0, never checked for values). It reads the tiled weights (64 x 128 tiles) in
// S-column slices of KT k-tiles each (S = 16..128 cuts a tile; 256 and 512 take 2 or 4
// consecutive n-tiles, whose pieces of a k-tile are contiguous), the unit such a GEMV would
// compute: one TMA tensor copy of the slice's planes (a 3-D box: 128-byte rows along the k-tile's
// row of tiles, KT k-tiles far apart) and one of its E4M4 codes (a 2-D box) per unit, into a ring
// of shared-memory stages. Its question (F-027): which unit shapes stream as fast as
// scalar_gemv's, so that Llama3-8B's tiles could end in pairs or not be split at all? A first
// column-slice GEMV (F-027) used 4 << j small bulk copies per unit and lost to the copy issue; a
// tensor copy is one instruction per box. The option bulk = 1 (below) copies per k-tile piece
// with cp.async.bulk instead, as scalar_gemv's producer does.
//
// Shape of a block (192 threads): lane 0 of warp 5 issues the copies; warp 0 reads each landed
// stage (an XOR of every word, so that a test can prove each byte arrived once) and frees it,
// once warps 1-4 have read, after griddepcontrol.wait, the A its stripe would stage (the k-range
// of its units, all of A when its stripe crosses a slice: what a slice costs beyond the weights).
// Units are dealt to blocks in contiguous stripes, slice-major: the blocks of one slice walk its
// k-range side by side, as scalar_gemv's k-band stripes do. K = 4 only (its registry row): its
// question was asked at K = 4, and at K = 3 its 512-column units do not land every word (its GPU
// test found it; not pursued: F-027).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "reference/error.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/launch.hpp"
#include "variants/common/pdl.cuh"
#include "variants/common/tensor_map.hpp"
#include "variants/common/tma_tensor.cuh"
#include "variants/probes/probe.cuh"
#include "variants/probes/probes.hpp"

namespace kbit::variants {
namespace {

// The unit and ring come from the row's options (probes.hpp: kReadSlicesOptions). `smem` pads
// each block's shared memory to at least that many bytes, so that no more blocks share an SM than
// a GEMV with the 64 KB pair table would let (under PDL, every slot left free takes the next
// launch's blocks early: F-023). `bulk` 1 copies each k-tile's piece of a unit with its own
// cp.async.bulk instead (2 x kt copies per unit; at 128 x 4 exactly what scalar_gemv's producer
// issues), to tell the copy order from the copy kind.
struct SliceConfig {
  // warp 0 reads and frees the stages; warps 1-4 read the stripe's A first (the GEMV's
  // consumers would stage it before their first unit); warp 5 issues the copies
  static constexpr int kThreads = 192;
  static constexpr int kReaders = 160;  // warps 0-4: the named barrier after the A
  // The defaults (kReadSlicesOptions): 32 columns x 16 k-tiles (8B down's tiles would end in
  // pairs; 17 KB at K = 4), scalar_gemv's ring depth 2, occupancy 2 and footprint 108 KB.
  static constexpr int kMaxSmem = 232448;  // the H100's 227 KB per block
  static constexpr int kMaxStages = 8;
  static constexpr int kBarrierBytes = 16 * kMaxStages;  // a full and an empty barrier per stage
  static constexpr int kAlign = 1024;  // a box with a 128-byte swizzle lands on 1024 bytes
};

// The tiled layout's planes, seen as a tensor the TMA can cut into column slices: a k-tile's
// row of tiles (every n-tile's 128 columns x 2 k-blocks x K words, columns contiguous) is
// n_tiles x 8K rows of 128 bytes; a column slice of S columns is S x K / 16 of those rows.
struct SliceArgs {
  CUtensorMap planes;        // 3-D: 32 words of a 128-byte row, rows along the k-tile row, k-tiles
  CUtensorMap codes;         // 2-D: 32-bit words along the k-tile row (2 codes per column), k-tiles
  int rows_per_slice;        // 128-byte plane rows per k-tile in one slice: S x K / 16
  int code_bytes_per_slice;  // 2 x S
  int kt_per_unit, units_per_slice, units, per_block, stages, k_tiles;
  uint32_t plane_bytes, code_bytes, stage_bytes;  // one unit's boxes; stage stride
  uint32_t piece_bytes, code_piece_bytes;  // one k-tile of a slice: S x 8K B of planes, 2S of codes
  int slice_cols, total_cols;              // S; the padded columns of the layout (n_tiles x 128)
  int bulk;      // 1: copy each k-tile's piece with its own cp.async.bulk (scalar_gemv's producer)
  int nt_major;  // 1: tile (nt, kt) read at nt x k_tiles + kt (the same tiles, another order)
  const unsigned char* packed;  // bulk mode: the planes and codes themselves
  const unsigned char* absmax;
  long long plane_row_bytes, code_row_bytes;  // one k-tile's row of tiles
  const uint4* A;
  int a_rows;
  long long k_dim;
  unsigned short* C;
  long long c_elems;
  unsigned* sink;  // [block]: XOR of the weight words landed; [grid + block]: XOR of A read
};

// XOR of n16 16-byte words from p, words first, first + stride, ... (a warp or a group of
// warps), four loads in flight per lane: the stage reader must free a stage faster than the
// copies land, and the A readers must not serialize on L2 round trips, or the probe would time
// its own reads.
__device__ __forceinline__ uint32_t xor_range(const uint4* p, uint32_t n16, uint32_t first,
                                              uint32_t stride) {
  uint32_t acc = 0, i = first;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    const uint4 v0 = p[i], v1 = p[i + stride], v2 = p[i + 2 * stride], v3 = p[i + 3 * stride];
    acc ^= dev::xor4(v0) ^ dev::xor4(v1) ^ dev::xor4(v2) ^ dev::xor4(v3);
  }
  for (; i < n16; i += stride) acc ^= dev::xor4(p[i]);
  return acc;
}

// The A a stripe of units [u0, u1) would stage: the k-range of its units when they lie in one
// slice, else all of K (M rows of it), XORed by warps 1-4 (first: this lane, stride: their lanes).
__device__ uint32_t read_stripe_a(const SliceArgs& a, int u0, int u1, uint32_t first,
                                  uint32_t stride) {
  long long k0 = 0, k1 = a.k_dim;
  if (u0 / a.units_per_slice == (u1 - 1) / a.units_per_slice) {
    k0 = (long long)(u0 % a.units_per_slice) * a.kt_per_unit * 64;
    k1 = ((long long)((u1 - 1) % a.units_per_slice) + 1) * a.kt_per_unit * 64;
    if (k1 > a.k_dim) k1 = a.k_dim;
  }
  uint32_t acc = 0;
  for (int m = 0; m < a.a_rows; ++m)
    acc ^= xor_range(a.A + (m * a.k_dim + k0) / 8, uint32_t((k1 - k0) / 8), first, stride);
  return acc;
}

// The k-tiles of a unit starting at k-tile kt0 that exist (the last unit of a slice may reach
// past K_dim: a tensor copy lands zeros there, the bulk copies skip it).
__device__ __forceinline__ int valid_k_tiles(const SliceArgs& a, int kt0) {
  return a.k_tiles - kt0 < a.kt_per_unit ? a.k_tiles - kt0 : a.kt_per_unit;
}

// The columns of slice `slice` that exist: a slice wider than a tile (S = 256, 512) may reach
// past the last n-tile (a tensor copy lands zeros there, the bulk copies skip it).
__device__ __forceinline__ int valid_cols(const SliceArgs& a, int slice) {
  const int left = a.total_cols - slice * a.slice_cols;
  return left < a.slice_cols ? left : a.slice_cols;
}

// The bulk-copy unit: per k-tile one copy of the slice's planes and one of its codes, to the
// places the tensor copies would put them (k-tile j at j pieces; codes after the planes).
__device__ void copy_unit_bulk(const SliceArgs& a, uint32_t dst, int slice, int kt0, uint32_t bar) {
  const int nk = valid_k_tiles(a, kt0);
  const uint32_t cols = uint32_t(valid_cols(a, slice));
  const uint32_t piece = a.piece_bytes / uint32_t(a.slice_cols) * cols;
  const uint32_t code_piece = 2 * cols;
  dev::mbar_arrive_expect_tx(bar, uint32_t(nk) * (piece + code_piece));
  // Piece j's bytes: k-tile-major as stored, or n-tile-major (nt_major: slice = 128, a piece is
  // a whole tile; the same tiles in another order).
  auto at = [&](int j, long long row_bytes, long long piece_bytes) {
    return a.nt_major ? ((long long)slice * a.k_tiles + kt0 + j) * piece_bytes
                      : (kt0 + j) * row_bytes + (long long)slice * piece_bytes;
  };
  for (int j = 0; j < nk; ++j)
    dev::bulk_copy_g2s(dst + uint32_t(j) * a.piece_bytes,
                       a.packed + at(j, a.plane_row_bytes, a.piece_bytes), piece, bar);
  for (int j = 0; j < nk; ++j)
    dev::bulk_copy_g2s(dst + a.plane_bytes + uint32_t(j) * a.code_piece_bytes,
                       a.absmax + at(j, a.code_row_bytes, a.code_piece_bytes), code_piece, bar);
}

// Warp 0's XOR of a landed unit: the pieces that exist (bulk copies leave the rest stale). A
// full slice's pieces are contiguous; a partial one (past the last n-tile) is read piece by piece.
__device__ uint32_t xor_unit(const SliceArgs& a, const uint4* p, int slice, int kt0,
                             uint32_t lane) {
  const uint32_t nk = uint32_t(valid_k_tiles(a, kt0));
  const uint32_t cols = uint32_t(valid_cols(a, slice));
  const uint32_t piece16 = a.piece_bytes / 16, code16 = a.code_piece_bytes / 16;
  const uint4* codes = p + a.plane_bytes / 16;
  if (cols == uint32_t(a.slice_cols))
    return xor_range(p, nk * piece16, lane, 32) ^ xor_range(codes, nk * code16, lane, 32);
  const uint32_t vpiece16 = piece16 / uint32_t(a.slice_cols) * cols, vcode16 = cols / 8;
  uint32_t acc = 0;
  for (uint32_t j = 0; j < nk; ++j)
    acc ^= xor_range(p + j * piece16, vpiece16, lane, 32) ^
           xor_range(codes + j * code16, vcode16, lane, 32);
  return acc;
}

__device__ __forceinline__ uint32_t full_bar(uint32_t bars, uint32_t s) {
  return bars + 8 * s;
}
__device__ __forceinline__ uint32_t empty_bar(uint32_t bars, uint32_t s) {
  return bars + 8 * (SliceConfig::kMaxStages + s);
}

// Warp 5, lane 0: units u0 .. u0 + n - 1 into the ring, a stage refilled once warp 0 freed it.
__device__ void issue_copies(const SliceArgs& a, uint32_t ring, uint32_t bars, int u0, int n) {
  const uint32_t S = uint32_t(a.stages);
  for (int q = 0; q < n; ++q) {
    const uint32_t st = uint32_t(q) % S;
    if (uint32_t(q) >= S) {
      dev::mbar_wait(empty_bar(bars, st), (uint32_t(q) / S - 1) & 1u);
      dev::fence_proxy_async_shared();  // warp 0's reads before the refill (async proxy)
    }
    const int u = u0 + q, slice = u / a.units_per_slice, g = u % a.units_per_slice;
    const uint32_t dst = ring + st * a.stage_bytes, full = full_bar(bars, st);
    if (a.bulk) {
      copy_unit_bulk(a, dst, slice, g * a.kt_per_unit, full);
      continue;
    }
    dev::mbar_arrive_expect_tx(full, a.plane_bytes + a.code_bytes);
    dev::tma_load_3d(dst, &a.planes, 0, slice * a.rows_per_slice, g * a.kt_per_unit, full);
    dev::tma_load_2d(dst + a.plane_bytes, &a.codes, slice * a.code_bytes_per_slice / 4,
                     g * a.kt_per_unit, full);
  }
}

// Warp 0: reads (XORs) every landed unit and frees its stage.
__device__ uint32_t consume_units(const SliceArgs& a, const unsigned char* smem, uint32_t bars,
                                  uint32_t ring, int u0, int n, uint32_t lane) {
  const uint32_t S = uint32_t(a.stages);
  const uint4* ring_p = reinterpret_cast<const uint4*>(smem + (ring - bars));
  uint32_t acc = 0;
  for (int q = 0; q < n; ++q) {
    const uint32_t st = uint32_t(q) % S;
    dev::mbar_wait(full_bar(bars, st), (uint32_t(q) / S) & 1u);
    const int u = u0 + q;
    acc ^= xor_unit(a, ring_p + st * (a.stage_bytes / 16), u / a.units_per_slice,
                    u % a.units_per_slice * a.kt_per_unit, lane);
    dev::mbar_arrive(empty_bar(bars, st));
  }
  return acc;
}

__global__ void __launch_bounds__(SliceConfig::kThreads)
    read_slices_kernel(const __grid_constant__ SliceArgs a) {
  using Cfg = SliceConfig;
  extern __shared__ __align__(16) unsigned char smem[];
  dev::pdl::launch_dependents();  // weights first; A and C behind griddepcontrol.wait
  const uint32_t bars = dev::smem_addr(smem);
  const uint32_t ring = (bars + Cfg::kBarrierBytes + Cfg::kAlign - 1) & ~uint32_t(Cfg::kAlign - 1);
  const int u0 = int(blockIdx.x) * a.per_block;
  const int u1 = u0 + a.per_block < a.units ? u0 + a.per_block : a.units;
  const int n = u1 > u0 ? u1 - u0 : 0;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < uint32_t(a.stages); ++s)
      dev::mbar_init(full_bar(bars, s), 1), dev::mbar_init(empty_bar(bars, s), 32);
    dev::fence_barrier_init();
  }
  __syncthreads();
  uint32_t wacc = 0, aacc = 0;
  if (warp == 5) {
    if (lane == 0) issue_copies(a, ring, bars, u0, n);
    dev::pdl::wait();  // C belongs to the previous launch until then
  } else {
    dev::pdl::wait();  // A: the previous launch's output
    if (warp >= 1 && n > 0) aacc = read_stripe_a(a, u0, u1, threadIdx.x - 32, Cfg::kReaders - 32);
    dev::sync_threads<Cfg::kReaders>();  // the stripe's A is in before any unit is consumed
    if (warp == 0) wacc = consume_units(a, smem, bars, ring, u0, n, uint32_t(lane));
  }
  dev::zero_fill_u16(a.C, a.c_elems, (long long)blockIdx.x * blockDim.x + threadIdx.x,
                     (long long)gridDim.x * blockDim.x);
  for (int o = 16; o > 0; o >>= 1) {
    wacc ^= __shfl_xor_sync(0xffffffffu, wacc, o);
    aacc ^= __shfl_xor_sync(0xffffffffu, aacc, o);
  }
  __shared__ uint32_t a_xor[Cfg::kThreads / 32];
  if (lane == 0) a_xor[warp] = aacc;
  __syncthreads();
  if (threadIdx.x == 0) {  // warp 0 holds the weights' XOR
    a.sink[blockIdx.x] = wacc;
    a.sink[gridDim.x + blockIdx.x] = a_xor[1] ^ a_xor[2] ^ a_xor[3] ^ a_xor[4];
  }
}

struct SliceState : VariantState {
  int grid = 0, smem = 0, per_sm = 0;
  SliceArgs args{};  // everything but the maps and the pointers
  DeviceBuffer<unsigned> sink;
  std::vector<std::pair<const void*, std::pair<CUtensorMap, CUtensorMap>>> maps;  // per copy
  std::string what;
  std::string describe() const override { return what; }
};

void check_slice_config(int slice, int kt, int stages, int per_sm, int smem, int bulk,
                        int nt_major) {
  if (bulk != 0 && bulk != 1)
    throw Error("read_slices: option bulk = " + std::to_string(bulk) + " is not 0 or 1");
  if (nt_major != 0 && (slice != 128 || bulk != 1))
    throw Error("read_slices: option nt_major = " + std::to_string(nt_major) +
                " needs slice = 128 (a piece one tile) and bulk = 1, got slice = " +
                std::to_string(slice) + ", bulk = " + std::to_string(bulk));
  if (smem < 0 || smem > SliceConfig::kMaxSmem)
    throw Error("read_slices: option smem = " + std::to_string(smem) + " B is outside 0.." +
                std::to_string(SliceConfig::kMaxSmem));
  if (slice < 16 || slice > 512 || (slice & (slice - 1)) != 0)
    throw Error("read_slices: option slice = " + std::to_string(slice) +
                " columns is not 16, 32, 64, 128, 256 or 512");
  if (kt < 1 || kt > 256)
    throw Error("read_slices: option kt = " + std::to_string(kt) +
                " k-tiles per unit is outside 1..256");
  if (stages < 1 || stages > SliceConfig::kMaxStages)
    throw Error("read_slices: option stages = " + std::to_string(stages) + " is outside 1.." +
                std::to_string(SliceConfig::kMaxStages));
  if (per_sm < 0)
    throw Error("read_slices: option blocks_per_sm = " + std::to_string(per_sm) + " < 0");
}

}  // namespace

std::unique_ptr<VariantState> read_slices_setup(const GemmDims& d, const VariantOptions& o) {
  if (d.grouped()) throw Error("read_slices: dense problems only");
  if (d.dtype == DType::f32) throw Error("read_slices: dtype fp32 is not supported");
  require_compute_capability(9, "read_slices", "TMA tensor copies");
  auto s = std::make_unique<SliceState>();
  auto get = [&](int i) { return int(o.get(kReadSlicesOptions[i])); };
  const int slice = get(0), kt = get(1), stages = get(2), per_sm = get(3), smem = get(4),
            bulk = get(5), nt_major = get(6);
  check_slice_config(slice, kt, stages, per_sm, smem, bulk, nt_major);
  const TiledGeometry geo = make_tiled_geometry(d.N, d.K_dim, d.k_bits, TileConfig{64, 128});
  SliceArgs& a = s->args;
  a.rows_per_slice = slice * d.k_bits / 16;
  a.code_bytes_per_slice = 2 * slice;
  a.kt_per_unit = kt;
  a.units_per_slice = int((geo.k_tiles() + kt - 1) / kt);
  a.total_cols = int(geo.n_tiles()) * 128;
  a.slice_cols = slice;
  a.units = int((a.total_cols + slice - 1) / slice) * a.units_per_slice;
  a.stages = stages;
  a.plane_bytes = uint32_t(128 * a.rows_per_slice * kt);
  a.code_bytes = uint32_t(a.code_bytes_per_slice * kt);
  a.k_tiles = int(geo.k_tiles());
  a.piece_bytes = uint32_t(128 * a.rows_per_slice);
  a.code_piece_bytes = uint32_t(a.code_bytes_per_slice);
  a.bulk = bulk;
  a.nt_major = nt_major;
  a.stage_bytes =
      (a.plane_bytes + a.code_bytes + SliceConfig::kAlign - 1) & ~uint32_t(SliceConfig::kAlign - 1);
  s->smem = std::max(
      smem, SliceConfig::kBarrierBytes + SliceConfig::kAlign + stages * int(a.stage_bytes));
  if (s->smem > SliceConfig::kMaxSmem)
    throw Error("read_slices: " + std::to_string(stages) + " stages of " +
                std::to_string(a.stage_bytes) + " B need " + std::to_string(s->smem) +
                " B of shared memory, more than " + std::to_string(SliceConfig::kMaxSmem));
  KBIT_CUDA_CHECK(cudaFuncSetAttribute(read_slices_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, s->smem));
  int dev = 0, sms = 0, fit = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  KBIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, read_slices_kernel,
                                                                SliceConfig::kThreads, s->smem));
  if (fit < 1)
    throw Error("read_slices: " + std::to_string(s->smem) +
                " B of shared memory per block do not fit on an SM");
  if (per_sm > fit)
    throw Error("read_slices: " + std::to_string(per_sm) + " blocks per SM asked, at most " +
                std::to_string(fit) + " fit");
  s->per_sm = per_sm > 0 ? per_sm : fit;
  a.per_block = (a.units + sms * s->per_sm - 1) / (sms * s->per_sm);
  s->grid = (a.units + a.per_block - 1) / a.per_block;
  s->sink = DeviceBuffer<unsigned>(std::size_t(2 * s->grid));
  KBIT_CUDA_CHECK(cudaMemset(s->sink.get(), 0, s->sink.bytes()));
  s->what = std::to_string(slice) + "-column x " + std::to_string(kt) + "-k-tile units (" +
            std::to_string(a.plane_bytes + a.code_bytes) + " B, " +
            (bulk ? std::to_string(2 * kt) + " bulk copies" : std::string("2 TMA tensor copies")) +
            (nt_major ? ", tiles read n-tile-major" : "") + ") x " + std::to_string(stages) +
            " stages, " + std::to_string(s->grid) + " blocks of " + std::to_string(a.per_block) +
            " units, " + std::to_string(s->per_sm) + " blocks/SM, " + std::to_string(s->smem) +
            " B smem";
  return s;
}

void read_slices_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                     cudaStream_t stream) {
  auto* s = static_cast<SliceState*>(state);
  const TiledGeometry& geo = g.w.geo;
  if (geo.tiles.tile_k != 64 || geo.tiles.tile_n != 128)
    throw Error("read_slices: the weights are in " + layout_name(g.w.layout) +
                ", not tiled 64x128");
  auto it = std::find_if(s->maps.begin(), s->maps.end(),
                         [&](const auto& m) { return m.first == g.w.packed; });
  if (it == s->maps.end()) {  // a new L2-rotation copy: encode its two maps once
    const std::uint64_t rows = std::uint64_t(geo.n_tiles()) * 8 * std::uint64_t(d.k_bits);
    const std::uint64_t row_bytes = rows * 128, code_row = std::uint64_t(geo.n_tiles()) * 256;
    const CUtensorMap planes = encode_tensor_map(
        g.w.packed, CU_TENSOR_MAP_DATA_TYPE_UINT32, 4,
        {{32, 0, 32},
         {rows, 128, uint32_t(s->args.rows_per_slice)},
         {std::uint64_t(geo.k_tiles()), row_bytes, uint32_t(s->args.kt_per_unit)}},
        CU_TENSOR_MAP_SWIZZLE_128B);
    const CUtensorMap codes =
        encode_tensor_map(g.w.absmax, CU_TENSOR_MAP_DATA_TYPE_UINT32, 4,  // 4 codes a word:
                          {{code_row / 4, 0, uint32_t(s->args.code_bytes_per_slice / 4)},  // S / 2
                           {std::uint64_t(geo.k_tiles()), code_row, uint32_t(s->args.kt_per_unit)}},
                          CU_TENSOR_MAP_SWIZZLE_NONE);
    s->maps.push_back({g.w.packed, {planes, codes}});
    it = s->maps.end() - 1;
  }
  SliceArgs a = s->args;
  a.planes = it->second.first;
  a.codes = it->second.second;
  a.A = static_cast<const uint4*>(g.A);
  a.a_rows = int(d.M);
  a.k_dim = d.K_dim;
  a.C = static_cast<unsigned short*>(g.C);
  a.c_elems = d.M * d.N;
  a.sink = s->sink.get();
  a.packed = reinterpret_cast<const unsigned char*>(g.w.packed);
  a.absmax = g.w.absmax;
  a.plane_row_bytes = geo.n_tiles() * 1024LL * d.k_bits;
  a.code_row_bytes = geo.n_tiles() * 256LL;
  void* params[] = {&a};
  launch_kernel(reinterpret_cast<const void*>(read_slices_kernel), dim3(s->grid),
                dim3(SliceConfig::kThreads), s->smem, stream, params, g.pdl);
}

std::uint32_t read_slices_checksum(VariantState* state) {
  auto* s = static_cast<SliceState*>(state);
  const std::vector<unsigned> v = s->sink.download();
  std::uint32_t x = 0;
  for (int b = 0; b < s->grid; ++b) x ^= v[std::size_t(b)];
  return x;
}

}  // namespace kbit::variants
