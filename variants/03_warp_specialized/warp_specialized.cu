// Variant 03: warp-specialized Hopper kernel, weights as wgmma's register operand (RS, A and B
// swapped). The kernel is the shared Hopper mainloop (variants/hopper/mainloop.cuh) on the kbit
// tiled layout (variants/hopper/kbit_weights.cuh) over a dense problem's tiles with stream-K
// (variants/hopper/dense_tiles.cuh), planned and launched by variants/hopper/launcher.cu; this
// file is the registry's setup and run. README.md beside this file has the picture, the register
// budget and what each step bought.
#include <cuda_runtime.h>

#include <cstdint>

#include "variants/03_warp_specialized/warp_specialized.hpp"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/kbit_weights.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants {

std::unique_ptr<VariantState> warp_specialized_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "warp_specialized";
  require_dense_gemm_dims(d, who);
  ws::require_wgmma_device(who);
  auto s = std::make_unique<ws::DensePlan>();
  const std::int64_t tt_opt = o.get(kWarpSpecializedTokenTile);
  s->token_tile = tt_opt == 0 ? ws::token_tile_for(d.M) : int(tt_opt);
  const std::int64_t mma = o.get(kWarpSpecializedMma);
  s->kernel =
      d.dtype == DType::f16
          ? ws::kernel_for<__half, ws::DenseTiles, true>(d.k_bits, s->token_tile, who, mma)
          : ws::kernel_for<__nv_bfloat16, ws::DenseTiles, true>(d.k_bits, s->token_tile, who, mma);
  ws::plan_dense(*s, d, o, who);
  return s;
}

void warp_specialized_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                          cudaStream_t stream) {
  require_tiled_args(g, d, TileConfig{ws::Config::kTileK, ws::Config::kTileN}, "warp_specialized");
  ws::launch_dense(*static_cast<ws::DensePlan*>(state), d, g, g.w.packed, g.w.absmax, 0, stream);
}

}  // namespace kbit::variants
