// Variant 07: the shared mainloop (variants/03_warp_specialized/mainloop.cuh) on the
// fragment-order layout (reference/fragment.hpp), K = 4. The layout moves the tiled layout's
// plane merge (2K + 1 instructions per block-row a thread decodes) into a one-off repack, so a
// consumer's k-tile is one LDS.128, one LDS.32 of codes and per pair one PRMT + LDS + HMUL2.
// Dense problems only, with variant 03's tile order and plan (dense_tiles.cuh); the MMA path by
// token tile (mma.sync up to 32 tokens) or the `mma` option. README.md beside this file.
#include <cuda_runtime.h>

#include <string>

#include "reference/error.hpp"
#include "variants/03_warp_specialized/dense_tiles.cuh"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/07_fragment_mma/fragment_weights.cuh"

namespace kbit::variants {

std::unique_ptr<VariantState> fragment_mma_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "fragment_mma";
  require_dense_gemm_dims(d, who);
  if (d.k_bits != 4)
    throw Error(std::string(who) + ": K = " + std::to_string(d.k_bits) +
                "; the fragment-order layout is K = 4");
  ws::require_wgmma_device(who);
  auto s = std::make_unique<ws::DensePlan>();
  const std::int64_t tt_opt = o.get(kFragmentMmaTokenTile);
  s->token_tile = tt_opt == 0 ? ws::token_tile_for(d.M) : int(tt_opt);
  const std::int64_t mma = o.get(kFragmentMmaMma);
  const std::int64_t kt_opt = o.get(kFragmentMmaStageKTiles);
  const bool two = kt_opt == 2 || (kt_opt == 0 && s->token_tile <= 16);
  auto kernel = [&](auto f) {
    using F = decltype(f);
    return d.dtype == DType::f16
               ? ws::kernel_of<F, __half, ws::DenseTiles, true>(s->token_tile, who, mma)
               : ws::kernel_of<F, __nv_bfloat16, ws::DenseTiles, true>(s->token_tile, who, mma);
  };
  s->kernel = two ? kernel(fragment::FragmentWeightsT<true>{})
                  : kernel(fragment::FragmentWeightsT<false>{});
  ws::plan_dense(*s, d, o, who);
  return s;
}

void fragment_mma_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                      cudaStream_t stream) {
  const char* who = "fragment_mma";
  if (g.w.layout.kind != LayoutKind::fragment || g.w.packed == nullptr || g.w.absmax == nullptr)
    throw Error(std::string(who) + ": needs the fragment layout's words and codes, got layout " +
                layout_name(g.w.layout));
  ws::launch_dense(*static_cast<ws::DensePlan*>(state), d, g, g.w.packed, g.w.absmax, 0, stream);
}

}  // namespace kbit::variants
