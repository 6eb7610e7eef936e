// The definitions behind fragment_kernels.cuh, for fragment_kernels_k{2,3,4,5}.cu alone.
#pragma once
#include "variants/07_fragment_mma/fragment_kernels.cuh"
#include "variants/07_fragment_mma/fragment_weights.cuh"
#include "variants/07_fragment_mma/own_kernel.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants::fragment {

template <int K>
ws::Kernel fragment_mma_kernel_k(const FragmentMmaChoice& c, DType t) {
  const char* who = "fragment_mma";
  const int tt = c.token_tile;
  using Own = FragmentWeightsT<K, true>;
  if (c.own)
    return t == DType::f16
               ? own_kernel<__half, Own>(tt, c.k_tiles, c.wgmma, c.scale_after, c.pipelines,
                                         c.row_blocks, c.group_in_flight, c.tile_rows, who)
               : own_kernel<__nv_bfloat16, Own>(tt, c.k_tiles, c.wgmma, c.scale_after, c.pipelines,
                                                c.row_blocks, c.group_in_flight, c.tile_rows, who);
  auto kernel = [&](auto f) {
    using F = decltype(f);
    return t == DType::f16 ? ws::kernel_of<F, __half, ws::DenseTiles, true>(tt, who, c.mma)
                           : ws::kernel_of<F, __nv_bfloat16, ws::DenseTiles, true>(tt, who, c.mma);
  };
  return c.k_tiles == 2 ? kernel(FragmentWeightsT<K, true>{})
                        : kernel(FragmentWeightsT<K, false>{});
}

}  // namespace kbit::variants::fragment
