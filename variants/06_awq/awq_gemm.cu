// awq_gemm: the shared Hopper mainloop (variants/hopper/mainloop.cuh, dense_tiles.cuh,
// launcher.cuh) on the AWQ tiled repack (awq_weights.cuh). Everything but the weight format is
// shared with variant 03: the TMA ring, the RS wgmma, the stream-K plan. README.md beside this
// file has the numbers.
#include <cuda_fp16.h>

#include <string>

#include "reference/error.hpp"
#include "variants/06_awq/awq.hpp"
#include "variants/hopper/awq_weights.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants {

std::unique_ptr<VariantState> awq_gemm_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "awq_gemm";
  require_awq_dims(d, who);
  ws::require_wgmma_device(who);
  auto s = std::make_unique<ws::DensePlan>();
  const std::int64_t tt_opt = o.get(kAwqGemmTokenTile);
  s->token_tile = tt_opt == 0 ? ws::token_tile_for(d.M) : int(tt_opt);
  s->kernel = ws::kernel_of<awq::AwqWeights, __half, ws::DenseTiles>(s->token_tile, who);
  ws::plan_dense(*s, d, o, who);
  return s;
}

void awq_gemm_run(VariantState* state, const GemmDims& d, const GemmArgs& g, cudaStream_t stream) {
  ws::launch_awq_dense(*static_cast<ws::DensePlan*>(state), d, g, stream, "awq_gemm");
}

}  // namespace kbit::variants
