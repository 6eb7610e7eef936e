// Variant 05: grouped MMA for MoE layers. Variant 03's mainloop (mainloop.cuh: TMA producer
// warpgroup, two consumer warpgroups, weights decoded into wgmma's register operand) runs every
// active expert's tiles in one launch. README.md beside this file has the design and numbers.
//
// * A one-block kernel (list_mtiles) turns the device's expert offsets into the list of m-tiles:
//   (expert, first row, end row), experts in order, each expert's rows cut into token tiles, no
//   entry for an expert without rows. It runs inside the captured step: no host sync, and the
//   GEMM launches behind it with programmatic dependent launch, so the GEMM's prologue (table,
//   barriers) overlaps it.
// * The GEMM's tiles are (m-tile, n-tile), n-tiles inner: tile t = g x n_tiles + nt. They go
//   round-robin over a persistent grid of one block per slot, each block reading the list's
//   length after its PDL wait. Every tile is the same work (token tile x 128 x K_dim), so the
//   round-robin is balanced however the routing skews the rows: a hot expert just has more
//   m-tiles. A wave of consecutive tiles shares each m-tile's activations and each expert's
//   weights in L2.
// * The TMA box of an m-tile starts at its expert's row; the rows past the expert's end belong to
//   the next expert (or are past M: zeros) and are computed but never stored.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "reference/error.hpp"
#include "variants/05_grouped_mma/grouped_mma.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/launch.hpp"
#include "variants/common/pdl.cuh"
#include "variants/common/tensor_map.hpp"
#include "variants/hopper/grouped_tiles.cuh"
#include "variants/hopper/kbit_weights.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants {
namespace {

constexpr int kListThreads = 1024;  // one block lists every expert's m-tiles
constexpr int kListExpertsPerThread = 4;
constexpr int kMaxExperts = kListThreads * kListExpertsPerThread;
static_assert(kMaxExperts == kGroupedMmaMaxExperts, "grouped_mma.hpp names the same limit");

// Checked mode's codes: the first malformed offset is reported as expert * 4 + code.
enum OffsetFault : int { kStartNotZero = 1, kDecreasing = 2, kPastRows = 3 };
constexpr int kNoFault = 0x7f7f7f7f;  // what a cudaMemsetAsync of 0x7f bytes writes

// v clamped into [lo, hi].
__device__ __forceinline__ int clamp_row(std::int64_t v, int lo, int hi) {
  return v < lo ? lo : v > hi ? hi : int(v);
}

// x + y saturated at cap, for counts in [0, cap] with cap < 2^30 (setup: M x N < 2^31): an
// associative sum, so the scan below stays ordered even when malformed offsets (overlapping
// experts) would sum past 2^31 entries.
__device__ __forceinline__ int add_capped(int x, int y, int cap) {
  return min(x + y, cap);
}

// Lists the m-tiles of every expert: entry g is (expert, first row, end row, 0). Offsets are
// clamped into [0, M] and each end to at least its start, so malformed offsets never make the
// GEMM read or write outside A and C; the list is cut at `capacity` entries (only malformed
// offsets can reach it). With `status` (checked mode) it also records the first malformed offset.
__global__ void __launch_bounds__(kListThreads)
    list_mtiles(const std::int64_t* __restrict__ off, int experts, int rows, int tt, int capacity,
                int4* __restrict__ mtiles, int* __restrict__ count, int* __restrict__ status) {
  __shared__ int s_first[kMaxExperts + 1];  // an expert's first entry; s_first[E] = entries
  __shared__ int s_lo[kMaxExperts];         // its first row
  __shared__ int s_warp[kListThreads / 32];
  dev::pdl::launch_dependents();  // the GEMM's prologue may start now; it waits for our end
  dev::pdl::wait();               // the offsets may be the previous kernel's output
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int e0 = tid * kListExpertsPerThread;
  int n[kListExpertsPerThread], local = 0;
#pragma unroll
  for (int j = 0; j < kListExpertsPerThread; ++j) {
    const int e = e0 + j;
    n[j] = 0;
    if (e >= experts) continue;
    const std::int64_t a = off[e], b = off[e + 1];
    const int lo = clamp_row(a, 0, rows), hi = clamp_row(b, lo, rows);
    s_lo[e] = lo;
    n[j] = min((hi - lo + tt - 1) / tt, capacity);
    local = add_capped(local, n[j], capacity);
    if (status) {
      const int fault = e == 0 && a != 0               ? kStartNotZero
                        : b < a                        ? kDecreasing
                        : e == experts - 1 && b > rows ? kPastRows
                                                       : 0;
      if (fault) atomicMin(status, e * 4 + fault);
    }
  }
  // Exclusive scan of the threads' counts, capped at the capacity: within each warp, then over
  // the warps' sums.
  int incl = local;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl = add_capped(incl, v, capacity);
  }
  int excl = __shfl_up_sync(0xffffffffu, incl, 1);
  if (lane == 0) excl = 0;
  if (lane == 31) s_warp[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int w = s_warp[lane];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, w, d);
      if (lane >= d) w = add_capped(w, v, capacity);
    }
    s_warp[lane] = w;  // inclusive over warps 0..lane
  }
  __syncthreads();
  int run = add_capped(warp > 0 ? s_warp[warp - 1] : 0, excl, capacity);
#pragma unroll
  for (int j = 0; j < kListExpertsPerThread; ++j) {
    const int e = e0 + j;
    if (e < experts) s_first[e] = run;
    run = add_capped(run, n[j], capacity);
  }
  if (tid == kListThreads - 1) s_first[experts] = run;
  __syncthreads();
  const int total = s_first[experts];  // at most the capacity
  if (tid == 0) *count = total;
  for (int g = tid; g < total; g += kListThreads) {
    // The expert of entry g: the last e with s_first[e] <= g (never an empty one: its successor
    // starts at the same entry). s_first[e] <= g < capacity is an exact count (a capped one is
    // the capacity), so g - s_first[e] < n_e and the entry's rows lie inside [lo_e, hi_e).
    int lo = 0, hi = experts - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (s_first[mid] <= g)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int first = s_lo[lo] + (g - s_first[lo]) * tt;
    const int end = clamp_row(off[lo + 1], s_lo[lo], rows);
    mtiles[g] = make_int4(lo, first, end, 0);
  }
}

struct GroupedMmaState : VariantState {
  int token_tile = 16, n_tiles = 0, k_tiles = 0, k_steps = 0, capacity = 0, grid = 0;
  bool checked = false;
  ws::Kernel kernel{};
  DeviceBuffer<int4> mtiles;
  DeviceBuffer<int> count, status;
  // The last checked run's offsets and rows (check_after_run reads the offsets it names; a
  // graph replay of the run writes `status` again over the same offsets).
  const std::int64_t* checked_offsets = nullptr;
  std::int64_t checked_rows = 0;
  std::string describe() const override {
    return "tile " + std::to_string(token_tile) + " tokens x 128 weight rows x " +
           std::to_string(64 * kernel.k_tiles_per_stage) + " k, " + std::to_string(kernel.stages) +
           "-stage TMA ring, " +
           (kernel.sync ? "mma.sync (weights from registers, activations by ldmatrix)"
                        : "RS wgmma (weights from registers)") +
           "; (expert, m-tile, n-tile) tiles listed on the device (at most " +
           std::to_string(capacity) + " m-tiles x " + std::to_string(n_tiles) +
           " n-tiles), round-robin over " + std::to_string(grid) + " blocks" +
           (checked ? ", offsets checked" : "");
  }
  // The accumulator sets' sum on top of the K_dim additions (as variant 03 without split-K).
  std::int64_t extra_additions() const override { return 3; }
  void check_after_run(cudaStream_t stream) override;
};

// Checked mode: the list builder recorded the first malformed offset (as e * 4 + fault) in
// `status`; the run went on over the clamped list (no read or write outside A and C), and this
// names the offset, after the run, so that the run itself never synchronizes.
void GroupedMmaState::check_after_run(cudaStream_t stream) {
  if (!checked || !checked_offsets) return;
  const char* who = "grouped_mma";
  const std::int64_t* off = checked_offsets;
  int fault = kNoFault;
  KBIT_CUDA_CHECK(
      cudaMemcpyAsync(&fault, status.get(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (fault == kNoFault) return;
  const int e = fault / 4, code = fault % 4;
  const int at = code == kDecreasing || code == kPastRows ? e + 1 : e;
  std::int64_t v[2] = {0, 0};  // offsets[at - 1], offsets[at]
  KBIT_CUDA_CHECK(cudaMemcpy(v, off + std::max(at - 1, 0), sizeof(v), cudaMemcpyDeviceToHost));
  const std::string entry =
      "expert_offsets[" + std::to_string(at) + "] = " + std::to_string(at > 0 ? v[1] : v[0]);
  if (code == kStartNotZero) throw Error(std::string(who) + ": " + entry + " must be 0");
  if (code == kDecreasing)
    throw Error(std::string(who) + ": " + entry + " is below expert_offsets[" +
                std::to_string(at - 1) + "] = " + std::to_string(v[0]) +
                " (offsets must not decrease)");
  throw Error(std::string(who) + ": " + entry +
              " is past the end of A (M = " + std::to_string(checked_rows) + " rows)");
}

}  // namespace

int grouped_mma_token_tile(double rows_per_expert) {
  // Routed rows scatter around the mean (about sqrt(mean) for uniform top-k routing): a tile
  // that holds the mean alone cuts many experts into two m-tiles, and each m-tile decodes the
  // expert's weights again. So the smallest tile that holds mean + 1.5 sqrt(mean).
  const double rows = rows_per_expert + 1.5 * std::sqrt(std::max(rows_per_expert, 0.0));
  // From 16: the 8-token tile is not measured on MoE layers.
  for (int tt : ws::kTokenTiles)
    if (tt >= 16 && rows <= tt) return tt;
  return 256;
}

std::unique_ptr<VariantState> grouped_mma_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "grouped_mma";
  require_grouped_gemm_dims(d, who);
  if (d.num_experts > kMaxExperts)
    throw Error(std::string(who) + ": " + std::to_string(d.num_experts) +
                " experts; the on-device work list holds at most " + std::to_string(kMaxExperts));
  const std::int64_t tt_opt = o.get(kGroupedMmaTokenTile);
  if (tt_opt != 0)  // refused before any GPU work
    ws::with_token_tile(int(tt_opt), who, [](auto) { return 0; });
  ws::require_wgmma_device(who);
  auto s = std::make_unique<GroupedMmaState>();
  s->token_tile =
      tt_opt == 0 ? grouped_mma_token_tile(double(d.M) / double(d.num_experts)) : int(tt_opt);
  s->checked = o.flag(kGroupedMmaChecked);
  s->kernel = d.dtype == DType::f16
                  ? ws::kernel_for<__half, ws::GroupedTiles>(d.k_bits, s->token_tile, who)
                  : ws::kernel_for<__nv_bfloat16, ws::GroupedTiles>(d.k_bits, s->token_tile, who);
  s->n_tiles = int((d.N + ws::Config::kTileN - 1) / ws::Config::kTileN);
  s->k_tiles = int((d.K_dim + ws::Config::kTileK - 1) / ws::Config::kTileK);
  s->k_steps = (s->k_tiles + s->kernel.k_tiles_per_stage - 1) / s->kernel.k_tiles_per_stage;
  // Each expert's rows take ceil(rows / TT) m-tiles: at most M / TT over all, plus one partial
  // m-tile per expert that has rows.
  const long long capacity =
      (d.M + s->token_tile - 1) / s->token_tile + std::min<long long>(d.num_experts, d.M);
  if (capacity * s->n_tiles * s->k_steps >= (1ll << 31))
    throw Error(std::string(who) + ": up to " + std::to_string(capacity * s->n_tiles * s->k_steps) +
                " (tile, k-step) units reach the 32-bit limit 2^31");
  s->capacity = int(std::max<long long>(capacity, 1));
  const int slots = ws::prepare_kernel(s->kernel, who);
  s->grid = int(std::min<long long>(slots, (long long)s->capacity * s->n_tiles));
  s->mtiles = DeviceBuffer<int4>(std::size_t(s->capacity));
  s->count = DeviceBuffer<int>(1);
  s->status = DeviceBuffer<int>(1);
  return s;
}

void grouped_mma_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                     cudaStream_t stream) {
  auto* s = static_cast<GroupedMmaState*>(state);
  const char* who = "grouped_mma";
  require_tiled_args(g, d, TileConfig{ws::Config::kTileK, ws::Config::kTileN}, who);
  if (!g.expert_offsets) throw Error(std::string(who) + ": the device expert offsets are missing");
  int experts = d.num_experts, rows = int(d.M), tt = s->token_tile, capacity = s->capacity;
  const std::int64_t* off = g.expert_offsets;
  int4* mtiles = s->mtiles.get();
  int* count = s->count.get();
  int* status = s->checked ? s->status.get() : nullptr;
  if (status) KBIT_CUDA_CHECK(cudaMemsetAsync(status, 0x7f, sizeof(int), stream));
  void* list_params[] = {&off, &experts, &rows, &tt, &capacity, &mtiles, &count, &status};
  launch_kernel(reinterpret_cast<const void*>(list_mtiles), dim3(1), dim3(kListThreads), 0, stream,
                list_params, g.pdl);
  if (status) {  // reported by check_after_run, after the run
    s->checked_offsets = off;
    s->checked_rows = d.M;
  }
  if (d.M == 0) return;  // no rows: C has nothing to write (and a TMA tensor needs one row)
  ws::GroupedTiles::Args a{};
  a.C = g.C;
  a.weights = reinterpret_cast<const unsigned char*>(g.w.packed);
  a.scales = g.w.absmax;
  a.M = rows;
  a.N = int(d.N);
  a.n_tiles = s->n_tiles;
  a.k_tiles = s->k_tiles;
  a.k_steps = s->k_steps;
  a.mtiles = mtiles;
  a.count = count;
  a.expert_weight_bytes = g.w.expert_words * 4;
  a.expert_scale_bytes = g.w.expert_bytes;
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  // A as one [M][K_dim] tensor: a box starts at its expert's row. Behind list_mtiles with PDL
  // always: the GEMM waits (griddepcontrol.wait) for the list, and the list for the kernel before
  // it when the caller asked for PDL (else it started after it).
  ws::launch_mainloop(s->kernel, s->grid, a, g.A, d.dtype, d.M, d.K_dim, s->token_tile, stream,
                      true);
}

}  // namespace kbit::variants
