// Variant 04's host side (the kernels: scalar_gemv.cu): the registry's setup and run functions.
// Setup picks the kernel, cuts the (tile, k-unit) units into one stripe per resident block
// (stripes.hpp), chooses how split tiles end (a cluster, tagged L2 slots or the workspace; the
// row's options `cluster_end` and `tagged_end` may rule the first two out) and uploads the
// stripes; run checks the operands and launches.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reference/error.hpp"
#include "variants/04_scalar_gemv/kernels.hpp"
#include "variants/04_scalar_gemv/scalar_gemv.hpp"
#include "variants/04_scalar_gemv/stripes.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/launch.hpp"

namespace kbit::variants {
namespace {

namespace sg = scalar_gemv;
using gemv::OutTile;

// The weight decode of the K-bit kernels (decode.cuh).
const char* decode_name(int k) {
  return k == 2 ? "quad (LDS.64)" : k == 5 ? "10-bit pair" : "pair";
}

struct GemvState : VariantState {
  GemmDims dims;
  bool cluster_end = true, tagged_end = true;  // the row's options
  sg::Launch launch;                           // the kernel, its grid and the device pointers below
  int k_units = 0, units_per_block = 0, split_tiles = 0;  // n_tiles, k_tiles: in launch
  int blocks_per_sm = 0;
  DeviceBuffer<gemv::Segment> segs;
  DeviceBuffer<int> first_seg;
  DeviceBuffer<float> ws;
  DeviceBuffer<int> counters;
  DeviceBuffer<unsigned long long> tags;
  std::string describe() const override {
    const int cluster = launch.cluster, tagged = launch.tagged;
    return "units of 1 n-tile x " + std::to_string(sg::kUnitTiles) + " k-tiles, " +
           decode_name(dims.k_bits) + " table + mma.m16n8k16, stripes of " +
           std::to_string(units_per_block) + " units over " + std::to_string(launch.grid) +
           " blocks, " + std::to_string(split_tiles) + " tiles split" +
           (cluster > 1 ? " (combined in clusters of " + std::to_string(cluster) + ")" : "") +
           (tagged > 1 ? " (combined through tagged L2 slots)" : "") + ", " +
           std::to_string(sg::Config::kStages) + "-stage bulk-copy ring, " +
           std::to_string(blocks_per_sm) + " blocks/SM";
  }
  // Per-block scale steps (one per block of 32, and the zero-initialised MMA sum), split-K
  // partial sums (one per unit at most) and the two-lane reduction.
  std::int64_t extra_additions() const override { return dims.K_dim / 32 + 2 * (k_units + 1); }
};

// Dynamic shared memory with rank 0's receive area for clusters of c blocks (c - 1 ranks' sums).
int cluster_smem(const GemvState& s, int base, int c) {
  return base + sg::cluster_recv_bytes(c, int(s.dims.M));
}

// Uploads the stripes (of `per` units, over `tiles` output tiles), whose split tiles end in
// clusters of `cluster` blocks, through `tagged`-contributor slots, or else through a clean
// workspace and counters.
void build_stripes(GemvState& s, const gemv::Stripes& st, std::size_t tiles, int per, int base,
                   int cluster, int tagged) {
  sg::Launch& l = s.launch;
  l.grid = st.grid;
  s.units_per_block = per;
  s.split_tiles = st.split_tiles;
  l.cluster = cluster;
  l.tagged = tagged;
  l.smem_bytes = cluster_smem(s, base, cluster);
  KBIT_CUDA_CHECK(
      cudaFuncSetAttribute(l.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, l.smem_bytes));
  const std::vector<gemv::Segment>& segs = st.segs;
  s.segs = DeviceBuffer<gemv::Segment>(segs.size());
  KBIT_CUDA_CHECK(cudaMemcpy(s.segs.get(), segs.data(), segs.size() * sizeof(gemv::Segment),
                             cudaMemcpyHostToDevice));
  s.first_seg = DeviceBuffer<int>(st.first);
  if (s.split_tiles > 0 && tagged > 1) {
    s.tags = DeviceBuffer<unsigned long long>(tiles * (tagged - 1) * s.dims.M * sg::kTileN);
    s.tags.fill_bytes(0);
  } else if (s.split_tiles > 0 && cluster == 1) {
    s.ws = DeviceBuffer<float>(std::size_t(s.dims.M * s.dims.N));
    s.counters = DeviceBuffer<int>(tiles);
    s.ws.fill_bytes(0);
    s.counters.fill_bytes(0);
  }
  l.segs = s.segs.get();
  l.first_seg = s.first_seg.get();
  l.ws = s.ws.get();
  l.counters = s.counters.get();
  l.tags = s.tags.get();
  KBIT_CUDA_CHECK(cudaDeviceSynchronize());
}

// How the split tiles of stripes `st` end: {cluster, tagged}, each 1 where not used. In a
// cluster where every stripe is one k-band of one tile and the clusters all fit at once; else
// through tagged slots where every contributor is resident at once (rank 0 waits for the
// others); otherwise through the workspace. Not in the grouped kernel (registers). (Longer
// k-bands chosen for clusters that fit lost more than the end gained: 8B down, F-020.)
std::pair<int, int> choose_end(const GemvState& s, const gemv::Stripes& st, int base, int slots) {
  if (s.dims.grouped()) return {1, 1};
  const int c = gemv::cluster_size(st, sg::kMaxCluster);
  if (c < 2) return {1, 1};
  if (s.cluster_end &&
      clusters_fit_at_once(s.launch.kernel, s.launch.threads, cluster_smem(s, base, c), c, st.grid,
                           s.blocks_per_sm, slots))
    return {c, 1};
  if (s.tagged_end && st.grid <= slots && sg::has_tagged_end(s.dims.k_bits, int(s.dims.M)) &&
      (c - 1) * s.dims.M * sg::kTileN <= sg::kTaggedLoads * sg::kConsumers)
    return {1, c};
  return {1, 1};
}

void plan(GemvState& s, const std::vector<OutTile>& tiles, int rows_template,
          const VariantOptions& o) {
  const char* who = rows_template == 0 ? "grouped_scalar_gemv" : "scalar_gemv";
  require_compute_capability(9, who, "cp.async.bulk into an mbarrier ring");
  s.cluster_end = o.flag(kScalarGemvClusterEnd);
  s.tagged_end = o.flag(kScalarGemvTaggedEnd);
  sg::Launch& l = s.launch;
  l.kernel = sg::kernel_for(s.dims.k_bits, rows_template, s.dims.dtype, false);
  l.threads = sg::threads_for(rows_template);
  const int base = sg::smem_bytes(s.dims.k_bits, rows_template);
  l.smem_bytes = base;
  KBIT_CUDA_CHECK(
      cudaFuncSetAttribute(l.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, base));
  int per_sm = 0, dev = 0, sms = 0;
  KBIT_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel, l.threads, base));
  if (per_sm < 1)
    throw Error(std::string(who) + ": a block of " + std::to_string(l.threads) + " threads with " +
                std::to_string(base) + " bytes of shared memory does not fit on this device");
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  s.blocks_per_sm = per_sm;
  if (tiles.empty()) return;  // grouped problem with no rows at all: nothing to launch
  const long long units = (long long)tiles.size() * s.k_units;
  const int slots = per_sm * sms;
  const int per =
      gemv::stripe_units(units, s.k_units, slots, o.split_k, sg::Config::kAlignSlackPct);
  const gemv::Stripes st = gemv::cut_stripes(tiles, s.k_units, per);
  const auto [cluster, tagged] = choose_end(s, st, base, slots);
  // Same registers and shared memory: the occupancy above holds for it.
  if (rows_template > 0 && st.split_tiles == 0)
    l.kernel = sg::kernel_for(s.dims.k_bits, rows_template, s.dims.dtype, true);
  l.one_window = sg::has_window_warp(rows_template) &&
                 gemv::max_windows_per_block(
                     st, sg::Config::window_row_units(s.dims.k_bits) / rows_template) == 1;
  build_stripes(s, st, tiles.size(), per, base, cluster, tagged);
}

void launch(const GemvState& s, const GemmDims& d, const GemmArgs& g, cudaStream_t stream,
            const char* who) {
  require_tiled_args(g, d, TileConfig{sg::kTileK, sg::kTileN}, who);
  if (s.launch.grid == 0) return;
  sg::launch(s.launch, d, g, stream);
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
  s->launch.n_tiles = int((d.N + sg::kTileN - 1) / sg::kTileN);
  s->launch.k_tiles = int((d.K_dim + sg::kTileK - 1) / sg::kTileK);
  s->k_units = (s->launch.k_tiles + sg::kUnitTiles - 1) / sg::kUnitTiles;
  return s;
}

}  // namespace

std::unique_ptr<VariantState> scalar_gemv_setup(const GemmDims& d, const VariantOptions& o) {
  check_common(d, "scalar_gemv");
  if (d.grouped()) throw Error("scalar_gemv: grouped problems go to grouped_scalar_gemv");
  if (d.M < 1 || d.M > sg::kMaxRows)
    throw Error("scalar_gemv: M = " + std::to_string(d.M) +
                " is outside 1..4 (use an MMA variant for larger M)");
  auto s = new_state(d);
  plan(*s, gemv::dense_tiles(int(d.M), s->launch.n_tiles), int(d.M), o);
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
  auto s = new_state(d);
  const std::vector<OutTile> tiles =
      gemv::grouped_tiles(d.expert_offsets, int(d.num_experts), d.M, s->launch.n_tiles,
                          sg::kMaxRows, "grouped_scalar_gemv");
  plan(*s, tiles, 0, o);
  return s;
}

void grouped_scalar_gemv_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                             cudaStream_t stream) {
  launch(*static_cast<GemvState*>(state), d, g, stream, "grouped_scalar_gemv");
}

}  // namespace kbit::variants
