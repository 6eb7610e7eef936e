// Variant 07: the shared mainloop (variants/03_warp_specialized/mainloop.cuh) on the
// fragment-order layout (reference/fragment.hpp), K = 4. The layout moves the tiled layout's
// plane merge (2K + 1 instructions per block-row a thread decodes) into a one-off repack, so a
// consumer's k-tile is one LDS.128, one LDS.32 of codes and per pair one PRMT + LDS + HMUL2.
// Dense problems only, with variant 03's tile order and plan (dense_tiles.cuh); the MMA path by
// token tile (mma.sync up to 32 tokens) or the `mma` option. README.md beside this file.
#include <cuda_runtime.h>

#include <string>

#include "reference/error.hpp"
#include "reference/fragment.hpp"
#include "variants/03_warp_specialized/dense_tiles.cuh"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/07_fragment_mma/fragment_weights.cuh"
#include "variants/common/cuda_check.hpp"

namespace kbit::gpu {
namespace {

// One block a tile, thread t writes the fragment-order words 4t .. 4t + 3 (rows 16w + g and
// + 8, blocks 0, 1: t = 32 w + 4 g + c) and, for c = 0, its code word: reference/fragment.hpp.
__global__ void fragment_order_kernel(const uint32_t* __restrict__ tiled,
                                      const uint8_t* __restrict__ codes, uint32_t* __restrict__ out,
                                      uint8_t* __restrict__ out_codes) {
  const long long tile = blockIdx.x;
  const int t = threadIdx.x, w = t >> 5, g = (t >> 2) & 7, c = t & 3;
  const uint32_t* in = tiled + tile * FragmentTile::kWords;
  uint32_t words[4];
  uint32_t code_word = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int rr = i >> 1, kb = i & 1, r = 16 * w + g + 8 * rr;
    const uint32_t* planes = in + (r * 2 + kb) * 4;
    uint32_t v = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int p = 0; p < 4; ++p)
          v |= ((planes[p] >> (8 * q + 2 * c + s)) & 1u) << (8 * q + 2 * p + s);
    words[i] = v;
    code_word |= uint32_t(codes[tile * FragmentTile::kCodes + r * 2 + kb]) << (8 * i);
  }
  reinterpret_cast<uint4*>(out + tile * FragmentTile::kWords)[t] =
      make_uint4(words[0], words[1], words[2], words[3]);
  if (c == 0)
    reinterpret_cast<uint32_t*>(out_codes + tile * FragmentTile::kCodes)[t >> 2] = code_word;
}

}  // namespace

void fragment_order(const std::uint32_t* tiled, const std::uint8_t* codes, std::int64_t tiles,
                    std::uint32_t* out, std::uint8_t* out_codes, cudaStream_t stream) {
  if (tiles <= 0) return;
  if (tiles >= (1ll << 31))
    throw Error("fragment_order: " + std::to_string(tiles) + " tiles reach the grid limit 2^31");
  fragment_order_kernel<<<unsigned(tiles), 256, 0, stream>>>(tiled, codes, out, out_codes);
  KBIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace kbit::gpu

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
  const ws::MmaPath path = ws::mma_path_of(o.get(kFragmentMmaMma), s->token_tile);
  const std::int64_t kt_opt = o.get(kFragmentMmaStageKTiles);
  const bool two = kt_opt == 2 || (kt_opt == 0 && s->token_tile <= 16);
  auto kernel = [&](auto f) {
    using F = decltype(f);
    return d.dtype == DType::f16
               ? ws::kernel_of<F, __half, ws::DenseTiles, true>(s->token_tile, who, path, false)
               : ws::kernel_of<F, __nv_bfloat16, ws::DenseTiles, true>(s->token_tile, who, path,
                                                                       false);
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
