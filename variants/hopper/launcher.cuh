// The shared Hopper kernel's host launcher: a compiled kernel and what its launch needs (Kernel),
// the token tiles and MMA paths a row may ask for, the device check (require_wgmma_device), the
// shared-memory opt-in and residency (prepare_kernel), the dense plan (plan_dense: token tile,
// stream-K stripes, m-tile groups, the split-K workspace) and the launches (launch_mainloop, and
// launch_dense for a planned dense problem). launcher.cu holds the definitions; a variant's setup
// picks a kernel (mainloop.cuh's kernel_of, kbit_weights.cuh's kernel_for), plans and launches.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "reference/dtype.hpp"
#include "variants/common/dispatch.hpp"
#include "variants/common/launch.hpp"
#include "variants/common/splitk_workspace.hpp"
#include "variants/common/tensor_map.hpp"
#include "variants/hopper/config.cuh"
#include "variants/hopper/stream_k.hpp"
#include "variants/variant_api.hpp"

namespace kbit::variants::ws {

// The kernel of (weight format, token tile, element type, tile policy) and what its launch needs.
struct Kernel {
  const void* fn;
  int smem_bytes, stages, k_tiles_per_stage;
  int register_pool;  // registers the block's setmaxnreg trades: threads x what ptxas must allocate
  bool sync = false;  // MmaPath::sync (for describe())
  int threads = Config::kThreads;  // a block's threads
  int pipelines = 1;  // walks a block runs (variant 07: two over one table), each a "block" of
                      // the plan: the launch has grid / pipelines blocks
  int tile_rows = Config::kTileN;  // weight rows a tile: 128, or 256 (DenseTilePairs: two n-tiles)
};

inline constexpr int kTokenTiles[] = {8, 16, 32, 64, 128, 256};

// Maps a token tile to its constant; `who` names the caller in the refusal.
template <typename Fn>
decltype(auto) with_token_tile(int tt, const char* who, Fn&& fn) {
  return with_one_of<8, 16, 32, 64, 128, 256>(tt, std::forward<Fn>(fn), [&] {
    return std::string(who) + ": token_tile = " + std::to_string(tt) +
           " is not one of 8, 16, 32, 64, 128, 256 (or 0: chosen by the rows)";
  });
}

// The MMA path a row asks for: its `mma` option (0: default_mma_path, 1: wgmma, 2: sync),
// where that path has a kernel for token tile tt (sync 8..64, wgmma 16..256), else the other.
inline MmaPath mma_path_of(std::int64_t option, int tt) {
  const MmaPath want = option == 1   ? MmaPath::wgmma
                       : option == 2 ? MmaPath::sync
                                     : default_mma_path(tt);
  if (has_mma_path(tt, want)) return want;
  return want == MmaPath::sync ? MmaPath::wgmma : MmaPath::sync;
}

// Launches kernel k over `grid` blocks with its Args and the activations A [M][K_dim] (dtype t) as
// a TMA tensor of boxes of token_tile rows x 64 elements (128 B, the 128-byte swizzle wgmma's
// descriptor names); rows past M and k past K_dim land as zeros.
template <typename Args>
void launch_mainloop(const Kernel& k, int grid, Args& a, const void* A, DType t, std::int64_t M,
                     std::int64_t K_dim, int token_tile, cudaStream_t stream, bool pdl) {
  CUtensorMap amap = encode_tensor_map(
      A, t == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
      {{std::uint64_t(K_dim), 0, std::uint32_t(Config::kTileK)},
       {std::uint64_t(M), std::uint64_t(K_dim) * 2, std::uint32_t(token_tile)}},
      CU_TENSOR_MAP_SWIZZLE_128B);
  void* params[] = {&a, &amap};
  launch_kernel(k.fn, dim3(unsigned(grid)), dim3(unsigned(k.threads)), k.smem_bytes, stream, params,
                pdl);
}

// Throws (naming `who` and what the device or build lacks) unless the current device is
// compute capability 9.0 and this build's device code is sm_90a (wgmma, setmaxnreg).
void require_wgmma_device(const char* who);

// Makes the kernel launchable (its shared memory opted in: variants/common/occupancy.hpp) and
// returns the walks that run at once (SMs x blocks per SM x the kernel's pipelines). Throws,
// naming `who`, when the device lacks the shared memory or the kernel's registers cannot cover its
// warpgroups' setmaxnreg.
int prepare_kernel(const Kernel& k, const char* who);

// The token tile by M: the smallest that holds M up to 128 (the weights are read once per
// m-tile, so fewer m-tiles win while the tensor work is small), 256 from there (tensor-bound:
// the widest wgmma halves the activation traffic per weight).
int token_tile_for(std::int64_t m);

// A dense problem's plan: set token_tile and kernel, then plan_dense fills the rest.
struct DensePlan : VariantState {
  int token_tile = 16, m_tiles = 0, n_tiles = 0, k_tiles = 0, k_steps = 0, group_m = 1, tiles = 0;
  int dp_tiles = 0, units = 0, per = 0, grid = 0;
  WalkOrder walk_order = WalkOrder::block_major;  // set before plan_dense (several pipelines)
  bool pipeline_major = false;                    // DenseTiles::Args::pipeline_major
  int wait_hint_ns = 0;                           // DenseTiles::Args::wait_hint_ns
  bool split_owner = false;                       // DenseTiles::Args::split_owner
  bool staged_store = false;                      // DenseTiles::Args::staged_store
  bool store_sole_partial = false;                // DenseTiles::Args::store_sole_partial
  Kernel kernel{};
  SplitKWorkspace split;  // its split tiles; allocated when a tile is split
  std::string describe() const override;
  // Split-K partial sums and the accumulator sets' sum on top of the K_dim additions.
  std::int64_t extra_additions() const override { return split.max_contributors + 2; }
};
// Tiles, whole tiles and stripes over the blocks that run at once (prepares the kernel);
// allocates the split-K workspace when a tile is split. Throws, naming `who`, past the limits.
void plan_dense(DensePlan& s, const GemmDims& d, const VariantOptions& o, const char* who);
// Launches the planned kernel on the format's weight and scale tiles (`group`: AWQ's G).
void launch_dense(const DensePlan& s, const GemmDims& d, const GemmArgs& g, const void* weights,
                  const void* scales, int group, cudaStream_t stream);
// launch_dense on the AWQ tiled repack (rows awq_gemm and awq_fragment_mma): refuses, naming
// `who`, weights in another layout or of another group than the problem's.
void launch_awq_dense(const DensePlan& s, const GemmDims& d, const GemmArgs& g, cudaStream_t stream,
                      const char* who);

}  // namespace kbit::variants::ws
