// awq_fragment_mma: variant 07's own kernel (pipelines.cuh: mma.sync consumers at 8 and 16
// tokens, wgmma at 32..128) on the AWQ tiled repack that awq_gemm reads (awq_fragment_weights.cuh:
// no table, the decode by the exponent trick). The choice of kernel is fragment_mma's
// (fragment_mma.cu, `choose`); M = 1..128, fp16.
#include <cuda_fp16.h>

#include <string>

#include "reference/error.hpp"
#include "variants/07_fragment_mma/awq_fragment_weights.cuh"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/07_fragment_mma/own_kernel.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/launcher.cuh"

namespace kbit::variants {

namespace {

ws::Kernel awq_fragment_mma_kernel(const FragmentMmaChoice& c) {
  return fragment::own_kernel<__half, fragment::AwqFragmentWeights>(
      c.token_tile, c.k_tiles, c.wgmma, c.scale_after, c.pipelines, c.row_blocks, c.group_in_flight,
      c.tile_rows, "awq_fragment_mma");
}

}  // namespace

FragmentMmaKernelShape awq_fragment_mma_kernel_shape(const FragmentMmaChoice& c) {
  const ws::Kernel k = awq_fragment_mma_kernel(c);
  return {k.fn != nullptr, k.threads, k.stages, k.k_tiles_per_stage,
          k.pipelines,     k.sync,    k.fn,     k.tile_rows};
}

std::unique_ptr<VariantState> awq_fragment_mma_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "awq_fragment_mma";
  const FragmentMmaChoice c = awq_fragment_mma_choose(d, o, fragment_mma_visible_sms());
  ws::require_wgmma_device(who);
  return fragment::plan_choice(c, awq_fragment_mma_kernel(c), d, o, who);
}

void awq_fragment_mma_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                          cudaStream_t stream) {
  ws::launch_awq_dense(*static_cast<ws::DensePlan*>(state), d, g, stream, "awq_fragment_mma");
}

}  // namespace kbit::variants
