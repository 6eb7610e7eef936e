// The shared Hopper kernel's host launcher (launcher.cuh): the device check, the shared-memory
// opt-in and residency, the dense plan (whole tiles and stream-K stripes) and the dense launch.
//
// * Tiles are token tile x 128 weight rows (256 where the kernel's tile_rows says so: two
//   n-tiles, DenseTilePairs), numbered in groups of m-tiles (16 MB of activations
//   a group, n-tiles outer inside a group), so a wave shares its activations in L2.
// * Whole tiles round-robin over the blocks when they keep >= 90% of the slots busy or two waves
//   or more remain; the rest are equal stripes of (tile, k-step) units (stream-K), ended through
//   the self-cleaning split-K workspace (variants/common/splitk.cuh).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/occupancy.hpp"
#include "variants/common/splitk.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/stream_k.hpp"

namespace kbit::variants::ws {

namespace {

// 1 where the device code was compiled for sm_90a (wgmma, setmaxnreg), 0 for a plain sm_90
// build, whose wrappers trap: setup refuses that build instead of losing the context.
__global__ void wgmma_compiled_probe(int* out) {
#ifdef KBIT_NO_WGMMA
  *out = 0;
#else
  *out = 1;
#endif
}

bool wgmma_compiled() {
  static const bool compiled = [] {
    DeviceBuffer<int> flag(1);
    flag.fill_bytes(0);
    wgmma_compiled_probe<<<1, 1>>>(flag.get());
    KBIT_CUDA_CHECK(cudaGetLastError());
    KBIT_CUDA_CHECK(cudaDeviceSynchronize());
    return flag.download()[0] == 1;
  }();
  return compiled;
}

}  // namespace

void require_wgmma_device(const char* who) {
  const int sm = current_device_sm();
  if (sm != 90)
    throw Error(
        std::string(who) + ": needs compute capability 9.0 (wgmma, setmaxnreg: sm_90a); " +
        (sm == 0 ? std::string("no CUDA device")
                 : "this device is " + std::to_string(sm / 10) + "." + std::to_string(sm % 10)));
  if (!wgmma_compiled())
    throw Error(std::string(who) +
                ": this build's device code is not sm_90a (CMAKE_CUDA_ARCHITECTURES must include "
                "90a): wgmma and setmaxnreg are missing");
}

int prepare_kernel(const Kernel& k, const char* who) {
  // setmaxnreg.inc waits until the block's pool holds what it asks: a kernel with fewer
  // registers a thread than the Layout's count (another toolchain's allocation) would hang.
  cudaFuncAttributes attr{};
  KBIT_CUDA_CHECK(cudaFuncGetAttributes(&attr, k.fn));
  if (attr.numRegs * k.threads < k.register_pool)
    throw Error(std::string(who) + ": the kernel has " + std::to_string(attr.numRegs) +
                " registers a thread; its warpgroups' setmaxnreg needs " +
                std::to_string(k.register_pool / k.threads));
  return resident_blocks(k.fn, k.threads, k.smem_bytes, who) * k.pipelines;
}

int token_tile_for(std::int64_t m) {
  for (int tt : kTokenTiles)
    if (m <= tt) return tt;
  return 256;
}

std::string DensePlan::describe() const {
  return "tile " + std::to_string(token_tile) + " tokens x " + std::to_string(kernel.tile_rows) +
         " weight rows x " + std::to_string(64 * kernel.k_tiles_per_stage) + " k, " +
         std::to_string(kernel.stages) + "-stage TMA ring, " +
         (kernel.sync ? "mma.sync (weights from registers, activations by ldmatrix), "
                      : "RS wgmma (weights from registers), ") +
         std::to_string(dp_tiles) + " of " + std::to_string(tiles) + " tiles whole over " +
         std::to_string(grid) +
         (kernel.pipelines > 1
              ? " walks (" + std::to_string(kernel.pipelines) + " pipelines a block, " +
                    (pipeline_major ? "pipeline-major)" : "block-major)")
              : std::string(" blocks")) +
         ", the rest in stripes of " + std::to_string(per) + " k-steps (" +
         std::to_string(split.split_tiles) + " tiles split), m-tile groups of " +
         std::to_string(group_m);
}

void plan_dense(DensePlan& s, const GemmDims& d, const VariantOptions& o, const char* who) {
  s.m_tiles = int((d.M + s.token_tile - 1) / s.token_tile);
  s.n_tiles = int((d.N + Config::kTileN - 1) / Config::kTileN);
  s.k_tiles = int((d.K_dim + Config::kTileK - 1) / Config::kTileK);
  s.k_steps = (s.k_tiles + s.kernel.k_tiles_per_stage - 1) / s.kernel.k_tiles_per_stage;
  // Tiles of two n-tiles (DenseTilePairs) where the kernel's are 256 rows.
  const int row_tiles = s.kernel.tile_rows / Config::kTileN;
  const long long tiles = (long long)s.m_tiles * ((s.n_tiles + row_tiles - 1) / row_tiles);
  if (tiles * s.k_steps >= (1ll << 31))
    throw Error(std::string(who) + ": " + std::to_string(tiles * s.k_steps) +
                " (tile, k-step) units reach the 32-bit limit 2^31");
  s.tiles = int(tiles);
  s.units = int(tiles * s.k_steps);
  const long long m_tile_bytes = (long long)s.token_tile * d.K_dim * 2;
  s.group_m = int(std::clamp<long long>(Config::kGroupBytes / m_tile_bytes, 1, s.m_tiles));

  // Whole tiles and stream-K stripes over the walks that run at once (stream_k.hpp: the
  // arithmetic, CPU-tested).
  const int slots = prepare_kernel(s.kernel, who);
  const StreamK w = plan_stream_k(s.tiles, s.k_steps, slots, s.kernel.pipelines, o.split_k);
  s.dp_tiles = w.dp_tiles;
  s.per = w.per;
  // Whole blocks of the kernel's pipelines, laid out by the walk order (stream_k.hpp).
  const WalkGrid g = walk_grid(w, s.kernel.pipelines, slots / s.kernel.pipelines, s.walk_order);
  s.grid = g.blocks * s.kernel.pipelines;
  s.pipeline_major = g.pipeline_major;
  // The workspace and counters, zeroed once when a tile is split; each call leaves them so (but a
  // stored sole partial's slots, which the next call overwrites: epilogue.cuh's stored_partial).
  // store_tile_sums's workspace is tile-local: TT x tile rows sums a tile (epilogue.cuh).
  s.split.plan(std::int64_t(s.tiles) * s.token_tile * s.kernel.tile_rows, s.dp_tiles, s.tiles,
               [&](int t) { return tile_contributors(w, t); });
}

void launch_dense(const DensePlan& s, const GemmDims& d, const GemmArgs& g, const void* weights,
                  const void* scales, int group, cudaStream_t stream) {
  DenseTiles::Args a{};
  a.C = g.C;
  a.weights = static_cast<const unsigned char*>(weights);
  a.scales = static_cast<const unsigned char*>(scales);
  a.group = group;
  a.M = int(d.M);
  a.N = int(d.N);
  a.m_tiles = s.m_tiles;
  a.n_tiles = s.n_tiles;
  a.k_tiles = s.k_tiles;
  a.k_steps = s.k_steps;
  a.group_m = s.group_m;
  a.token_tile = s.token_tile;
  a.pipeline_major = s.pipeline_major;
  a.wait_hint_ns = s.wait_hint_ns;
  a.split_owner = s.split_owner ? 1 : 0;
  a.staged_store = s.staged_store ? 1 : 0;
  a.store_sole_partial = s.store_sole_partial ? 1 : 0;
  a.dp_tiles = s.dp_tiles;
  a.units = s.units;
  a.per = s.per;
  a.ws = s.split.sums.get();
  a.counters = s.split.counters.get();
  for (int i = 0; i < 32; ++i) a.cb[i] = g.codebook.v[i];
  launch_mainloop(s.kernel, s.grid / s.kernel.pipelines, a, g.A, d.dtype, d.M, d.K_dim,
                  s.token_tile, stream, g.pdl);
}

void launch_awq_dense(const DensePlan& s, const GemmDims& d, const GemmArgs& g, cudaStream_t stream,
                      const char* who) {
  if (g.w.layout.kind != LayoutKind::awq_tiled || g.w.awq_tiles == nullptr ||
      g.w.awq_meta == nullptr)
    throw Error(std::string(who) + ": needs the weights in the AWQ tiled layout, got " +
                layout_name(g.w.layout));
  if (g.w.awq_group != d.awq_group)
    throw Error(std::string(who) + ": the weights' group is " + std::to_string(g.w.awq_group) +
                ", the problem's " + std::to_string(d.awq_group));
  launch_dense(s, d, g, g.w.awq_tiles, g.w.awq_meta, d.awq_group, stream);
}

}  // namespace kbit::variants::ws
