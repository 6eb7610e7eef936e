// Variant 07's own kernels by their host-side shape: the compiled kernel of a token tile, k-tiles
// a stage, MMA path, pipelines and row blocks, over a weight format W (FragmentWeightsT:
// fragment_mma.cu; AwqFragmentWeights: awq_fragment_mma.cu). Included by those two .cu files
// only: each instantiates its format's kernels.
#pragma once
#include <memory>
#include <string>
#include <type_traits>

#include "reference/error.hpp"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/07_fragment_mma/pipelines.cuh"
#include "variants/07_fragment_mma/sync_kernel.cuh"
#include "variants/07_fragment_mma/wgmma_kernel.cuh"
#include "variants/hopper/launcher.cuh"

namespace kbit::variants::fragment {

// The own kernel of token tile tt (8..128), kt k-tiles a stage. wgmma (wgmma_kernel.cuh, 32..128
// tokens): 1 pipeline of two consumer warpgroups; 2 pipelines of two warpgroups (18 warps: 96
// registers a thread, a sub-partition's 64 KB over 5 warps; they hold 32 tokens, and 64 with kt
// = 1; at 128 tokens, kt = 1, beside a producer warpgroup that gives them 112); or 2 or 3 pipelines
// of one warpgroup of two row blocks a warp (row_blocks 2) beside a producer warpgroup that gives
// them its registers (232 a consumer thread on 2 pipelines: kt = 2 to 64 tokens, 1 at 128; 152-160
// on 3: kt = 2 at 32 tokens, 1 at 64). A group in flight (pending): kt = 2 on 1 pipeline, or on 2
// of one warpgroup. The rest spill in the k-step loop or leave no two ring stages; the setup
// refuses them (on AWQ weights the 3-pipeline kernels at 32 and 64 tokens spill 40-44 bytes
// outside the loop, the walk's state and the producer's: measured as they are). mma.sync
// (sync_kernel.cuh, 8..64 tokens; W::kSyncMaxTokens): the scale after the MMA (8 and 16 tokens)
// or before it, on `pipelines` pipelines a block (2: one 16-row block a warp; 3, 4: two; 4 with
// row_blocks 4: four, at 8 and 16 tokens), kt = 2 only at 8 and 16 tokens.
// Tiles of 256 rows (tile_rows, W::kTilePairs): 1 pipeline at 64 and 128 tokens, 1 k-tile a
// stage, of four warpgroups (row_blocks 1, 112 registers a thread: 2 k-tiles spill, and K = 5's
// 1 k-tile spills 20 bytes) or, at 128
// tokens, of two warpgroups of two row blocks, beside a producer warpgroup.
template <typename T, typename W>
ws::Kernel own_kernel(int tt, int kt, bool wgmma, bool after, int pipelines, int row_blocks,
                      bool pending, int tile_rows, const char* who) {
  return ws::with_token_tile(tt, who, [&](auto tt_const) {
    constexpr int TT = decltype(tt_const)::value;
    const auto none = [&](const char* path) {
      throw Error(std::string(who) + ": the own kernel has no " + path + " token tile " +
                  std::to_string(TT));
      return ws::Kernel{};
    };
    if (tile_rows == 256) {
      if constexpr (W::kTilePairs && (TT == 64 || TT == 128)) {
        if (wgmma && pipelines == 1 && !pending) {
          // Four warpgroups beside a producer warpgroup that keeps 32 registers: the consumers
          // take 112 (20 warps launch at 96 a thread; 17 without it get 96 too, and spill).
          using FourWarpgroups = PipelineConfig<1, 1, 32, 256>;
          if (row_blocks == 1 && kt == 1) return wgmma_kernel<TT, 1, T, FourWarpgroups, false, W>();
          if constexpr (TT == 128) {
            if (row_blocks == 2 && kt == 1)
              return wgmma_kernel<TT, 1, T, PipelineConfig<1, 2, 40, 256>, false, W>();
          }
        }
      }
      throw Error(std::string(who) + ": no 256-row tile kernel at " + std::to_string(TT) +
                  " tokens with " + std::to_string(pipelines) + " pipelines, row_blocks = " +
                  std::to_string(row_blocks) + ", stage_k_tiles = " + std::to_string(kt));
      return ws::Kernel{};
    }
    if (wgmma) {
      if constexpr (TT >= 32 && TT <= 128) {
        using TwoWarpgroups = PipelineConfig<1, 1>;
        // One consumer warpgroup a pipeline beside a producer warpgroup that keeps 40 registers a
        // thread (2 pipelines, and 3 with 2 k-tiles) or 32 (3 with 1: the consumers need 160).
        using TwoPipelines = PipelineConfig<2, 2, 40>;
        if (pipelines == 1) {
          if (kt == 1) return wgmma_kernel<TT, 1, T, TwoWarpgroups, false, W>();
          return pending ? wgmma_kernel<TT, 2, T, TwoWarpgroups, true, W>()
                         : wgmma_kernel<TT, 2, T, TwoWarpgroups, false, W>();
        }
        if (row_blocks == 2 && pipelines == 3) {
          if constexpr (TT == 32) {
            if (kt == 2) return wgmma_kernel<TT, 2, T, PipelineConfig<3, 2, 40>, false, W>();
          }
          if constexpr (TT <= 64)
            return wgmma_kernel<TT, 1, T, PipelineConfig<3, 2, 32>, false, W>();
        }
        if (row_blocks == 2) {
          if constexpr (TT <= 64) {
            if (kt == 2)
              return pending ? wgmma_kernel<TT, 2, T, TwoPipelines, true, W>()
                             : wgmma_kernel<TT, 2, T, TwoPipelines, false, W>();
          }
          return wgmma_kernel<TT, 1, T, TwoPipelines, false, W>();
        }
        if constexpr (TT <= 64) {
          if constexpr (TT == 32) {
            if (kt == 2) return wgmma_kernel<TT, 2, T, PipelineConfig<2, 1>, false, W>();
          }
          return wgmma_kernel<TT, 1, T, PipelineConfig<2, 1>, false, W>();
        }
        // 128 tokens, 1 k-tile: 2 pipelines of two warpgroups beside a producer warpgroup that
        // keeps 32 registers (the consumers' 112 hold 64 accumulators and a k-tile's fragments;
        // 18 warps without it share 112 and spill).
        if constexpr (TT == 128)
          return wgmma_kernel<TT, 1, T, PipelineConfig<2, 1, 32>, false, W>();
      }
      return none("wgmma");
    }
    if constexpr (TT > W::kSyncMaxTokens) {
      return none("mma.sync");
    } else {
      auto with_config = [&](auto after_const, auto kt_const) {
        constexpr bool A = decltype(after_const)::value;
        constexpr int KT = decltype(kt_const)::value;
        if constexpr (TT <= 16) {
          if (row_blocks == 4) return sync_kernel<TT, KT, A, T, PipelineConfig<4, 4>, W>();
        }
        if (pipelines == 3) return sync_kernel<TT, KT, A, T, PipelineConfig<3, 2>, W>();
        if constexpr (PipelineLayout<TT, KT, PipelineConfig<4, 2>, W>::kFits) {
          if (pipelines == 4) return sync_kernel<TT, KT, A, T, PipelineConfig<4, 2>, W>();
        }
        return sync_kernel<TT, KT, A, T, PipelineConfig<2, 1>, W>();
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

// The ring stages a pipeline gets with `pipelines` pipelines (1..4) at token tile tt (8..128) and
// kt k-tiles a stage beside W's table (0 for another count; fewer than 2: the configuration is not
// compiled). Beside the 64 KB table 4 pipelines at 64 tokens with 2 k-tiles have 1; beside K = 5's
// 128 KB table 4 with 2 k-tiles have 1 (8..32 tokens) or none, 4 with 1 k-tile 1 from 64 tokens,
// 3 with 2 k-tiles 1 or none from 32 tokens. Only the pipeline count and the tile's rows size the
// ring (PipelineLayout), so any row-block count answers.
template <typename W>
int ring_stages(int tt, int kt, int pipelines, const char* who, int tile_rows = 128) {
  return ws::with_token_tile(tt, who, [&](auto tt_const) {
    constexpr int TT = decltype(tt_const)::value;
    if constexpr (TT > 128) {
      return 0;
    } else {
      const auto stages = [&](auto kt_const) {
        constexpr int KT = decltype(kt_const)::value;
        if (tile_rows == 256)  // 1 pipeline (own_kernel)
          return pipelines == 1 ? PipelineLayout<TT, KT, PipelineConfig<1, 1, 32, 256>, W>::kStages
                                : 0;
        switch (pipelines) {
          case 1:
            return PipelineLayout<TT, KT, PipelineConfig<1, 1>, W>::kStages;
          case 2:
            return PipelineLayout<TT, KT, PipelineConfig<2, 1>, W>::kStages;
          case 3:
            return PipelineLayout<TT, KT, PipelineConfig<3, 1>, W>::kStages;
          case 4:
            return PipelineLayout<TT, KT, PipelineConfig<4, 1>, W>::kStages;
          default:
            return 0;
        }
      };
      return kt == 1 ? stages(std::integral_constant<int, 1>{})
                     : stages(std::integral_constant<int, 2>{});
    }
  });
}

// The dense plan of a choice (fragment_mma_setup, awq_fragment_mma_setup): its kernel, the own
// kernel's walk order and wait hint (the shared mainloop walks block-major), the stream-K plan.
inline std::unique_ptr<VariantState> plan_choice(const FragmentMmaChoice& c, ws::Kernel kernel,
                                                 const GemmDims& d, const VariantOptions& o,
                                                 const char* who) {
  if (kernel.fn == nullptr)  // the choice refuses what is not compiled; this guards the two
    throw Error(std::string(who) + ": no compiled kernel for K = " + std::to_string(c.k_bits) +
                " at " + std::to_string(c.token_tile) + " tokens with " +
                std::to_string(c.pipelines) + " pipelines");
  auto s = std::make_unique<ws::DensePlan>();
  s->token_tile = c.token_tile;
  s->kernel = kernel;
  s->walk_order = c.own ? ws::WalkOrder(c.walk_order) : ws::WalkOrder::block_major;
  s->wait_hint_ns = c.wait_hint_ns;
  s->split_owner = c.own && c.split_owner;
  s->staged_store = c.own && c.staged_store;
  s->store_sole_partial = c.stored_partials;  // set under the own kernel's fixed owner only
  ws::plan_dense(*s, d, o, who);
  return s;
}

}  // namespace kbit::variants::fragment
