// Variant 07: the shared mainloop (variants/hopper/mainloop.cuh) on the
// fragment-order layout (reference/fragment.hpp), K = 4. The layout moves the tiled layout's
// plane merge (2K + 1 instructions per block-row a thread decodes) into a one-off repack, so a
// consumer's k-tile is one LDS.128, one LDS.32 of codes and per pair one PRMT + LDS + HMUL2.
// Dense problems only, with the shared dense tile order and plan (variants/hopper/dense_tiles.cuh,
// launcher.cuh); the MMA path by
// token tile (mma.sync up to 32 tokens) or the `mma` option. README.md beside this file.
#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "reference/error.hpp"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/07_fragment_mma/fragment_weights.cuh"
#include "variants/07_fragment_mma/sync_kernel.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants {

namespace {

// The own kernel (sync_kernel.cuh) of token tile tt (8..64), kt k-tiles a stage (2 only at 8
// and 16 tokens), the scale after the MMA (8 and 16 tokens) or before it, on `pipelines`
// pipelines a block (2: one 16-row block a warp; 3, 4: two; 4 with row_blocks 4: four, at 8 and
// 16 tokens).
template <typename T>
ws::Kernel own_kernel(int tt, int kt, bool after, int pipelines, int row_blocks, const char* who) {
  return ws::with_token_tile(tt, who, [&](auto tt_const) {
    constexpr int TT = decltype(tt_const)::value;
    if constexpr (TT > 64) {
      throw Error(std::string(who) + ": the own kernel has no token tile " + std::to_string(TT));
      return ws::Kernel{};
    } else {
      auto with_config = [&](auto after_const, auto kt_const) {
        constexpr bool A = decltype(after_const)::value;
        constexpr int KT = decltype(kt_const)::value;
        using fragment::SyncConfig;
        using fragment::sync_kernel;
        if constexpr (TT <= 16) {
          if (row_blocks == 4) return sync_kernel<TT, KT, A, T, SyncConfig<4, 4>>();
        }
        if (pipelines == 3) return sync_kernel<TT, KT, A, T, SyncConfig<3, 2>>();
        if constexpr (fragment::SyncLayout<TT, KT, SyncConfig<4, 2>>::kFits) {  // own_fits
          if (pipelines == 4) return sync_kernel<TT, KT, A, T, SyncConfig<4, 2>>();
        }
        return sync_kernel<TT, KT, A, T, SyncConfig<2, 1>>();
      };
      using K1 = std::integral_constant<int, 1>;
      using K2 = std::integral_constant<int, 2>;
      if constexpr (TT <= 16)
        return after ? with_config(std::true_type{}, K2{}) : with_config(std::false_type{}, K2{});
      else
        return kt == 2 ? with_config(std::false_type{}, K2{})
                       : with_config(std::false_type{}, K1{});
    }
  });
}

// Whether 4 pipelines leave room for a ring of two stages at token tile tt (8..64) and kt
// k-tiles a stage (not at 64 tokens with 2).
bool four_pipelines_fit(int tt, int kt, const char* who) {
  return ws::with_token_tile(tt, who, [&](auto tt_const) {
    constexpr int TT = decltype(tt_const)::value;
    if constexpr (TT > 64) {
      return false;
    } else {
      using C = fragment::SyncConfig<4, 2>;
      return kt == 1 ? fragment::SyncLayout<TT, 1, C>::kFits
                     : fragment::SyncLayout<TT, 2, C>::kFits;
    }
  });
}

}  // namespace

std::unique_ptr<VariantState> fragment_mma_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "fragment_mma";
  require_dense_gemm_dims(d, who);
  if (d.k_bits != 4)
    throw Error(std::string(who) + ": K = " + std::to_string(d.k_bits) +
                "; the fragment-order layout is K = 4");
  auto s = std::make_unique<ws::DensePlan>();
  const std::int64_t tt_opt = o.get(kFragmentMmaTokenTile);
  s->token_tile = tt_opt == 0 ? ws::token_tile_for(d.M) : int(tt_opt);
  const int tt = s->token_tile;
  const std::int64_t mma = o.get(kFragmentMmaMma);
  const std::int64_t kt_opt = o.get(kFragmentMmaStageKTiles);
  // The own kernel: mma.sync to 32 tokens by default (measured faster than wgmma there,
  // README.md), to 64 with mma = 2; wgmma from 64 tokens (and with mma = 1) on the shared
  // mainloop.
  const bool own = o.get(kFragmentMmaKernel) == 0 && (mma == 2 ? tt <= 64 : mma == 0 && tt <= 32);
  const int kt = kt_opt != 0 ? int(kt_opt) : tt <= 16 ? 2 : 1;
  const std::int64_t pipes_opt = o.get(kFragmentMmaPipelines);
  const int pipes = pipes_opt != 0 ? int(pipes_opt) : tt <= 16 ? 4 : 3;
  if (own && pipes_opt == 1)
    throw Error(std::string(who) + ": pipelines = 1 is not one of 2, 3, 4 (or 0: by token tile)");
  const std::int64_t rb_opt = o.get(kFragmentMmaRowBlocks);
  // An option that would change nothing where it is given is refused too, so that a run's
  // config says what ran: the own kernel's options off it, and values it does not take.
  const auto refuse = [&](const std::string& what) {
    throw Error(std::string(who) + ": " + what + ", and " + std::to_string(tt) + " tokens run " +
                (own ? std::string("the own kernel")
                     : "the shared mainloop (the own kernel: kernel = 0, to 32 tokens, or to 64 "
                       "with mma = 2)"));
  };
  if (!own) {
    for (const OptionSpec* spec : {&kFragmentMmaPipelines, &kFragmentMmaWalkOrder,
                                   &kFragmentMmaRowBlocks, &kFragmentMmaWaitHint})
      if (const std::int64_t v = o.get(*spec); v != spec->default_value)
        refuse(std::string(spec->name) + " = " + std::to_string(v) + " is the own kernel's");
  }
  if (o.get(kFragmentMmaScaleAfter) == 2 && !(own && tt <= 16))
    refuse("scale_after_mma = 2 (after the MMA) is the own kernel's at 8 and 16 tokens");
  if (own && tt <= 16 && kt_opt == 1)
    refuse("stage_k_tiles = 1: the own kernel takes 2 k-tiles a stage at 8 and 16 tokens");
  if (own && rb_opt != 0 && rb_opt != (pipes == 2 ? 1 : 2) &&
      !(rb_opt == 4 && pipes == 4 && tt <= 16))
    throw Error(std::string(who) + ": row_blocks = " + std::to_string(rb_opt) +
                " does not exist with " + std::to_string(pipes) + " pipelines at " +
                std::to_string(tt) +
                " tokens (1 with 2 pipelines, 2 with 3 or 4, 4 with 4 at 8 "
                "and 16 tokens)");
  if (own && pipes == 4 && !four_pipelines_fit(tt, kt, who))
    throw Error(std::string(who) + ": pipelines = 4 leaves no room for two ring stages at " +
                std::to_string(tt) + " tokens and stage_k_tiles = " + std::to_string(kt) +
                " (at most 3 there)");
  ws::require_wgmma_device(who);
  if (own) {
    const bool after = tt <= 16 && o.get(kFragmentMmaScaleAfter) != 1;
    // Four row blocks a warp at 16 tokens on 4 pipelines: half the activation loads and
    // per-k-step work a weight of two (README.md's ladder); at 8 tokens two were faster.
    const int rb = rb_opt != 0 ? int(rb_opt) : tt == 16 && pipes == 4 ? 4 : 0;
    s->kernel = d.dtype == DType::f16 ? own_kernel<__half>(tt, kt, after, pipes, rb, who)
                                      : own_kernel<__nv_bfloat16>(tt, kt, after, pipes, rb, who);
  } else {
    const bool two = kt_opt == 2 || (kt_opt == 0 && tt <= 16);
    auto kernel = [&](auto f) {
      using F = decltype(f);
      return d.dtype == DType::f16
                 ? ws::kernel_of<F, __half, ws::DenseTiles, true>(tt, who, mma)
                 : ws::kernel_of<F, __nv_bfloat16, ws::DenseTiles, true>(tt, who, mma);
    };
    s->kernel = two ? kernel(fragment::FragmentWeightsT<true>{})
                    : kernel(fragment::FragmentWeightsT<false>{});
  }
  s->walk_order = own ? ws::WalkOrder(o.get(kFragmentMmaWalkOrder)) : ws::WalkOrder::block_major;
  s->wait_hint_ns = own ? int(o.get(kFragmentMmaWaitHint)) : 0;
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
