// Variant 07 (fragment_mma.cu): the shared mainloop (variants/hopper/mainloop.cuh)
// on the fragment-order layout (reference/fragment.hpp), K = 4, mma.sync consumers at small
// token tiles. Host entry points and options (the layout's GPU repack: variants/format/).
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// Tokens per tile, as variant 03's option; 0 picks by M.
inline constexpr OptionSpec kFragmentMmaTokenTile{
    "token_tile",
    0,
    0,
    256,
    false,
    "tokens per tile (the MMA's N): 8 (mma.sync only), 16, 32, 64, 128 or 256; 0 = by M",
    /*multiple_of=*/8,
    /*power_of_two=*/true};
// The consumers' MMA, as variant 03's option.
inline constexpr OptionSpec kFragmentMmaMma{
    "mma",
    0,
    0,
    2,
    false,
    "consumer MMA where it exists: 0 = by token tile (mma.sync to 32 tokens on the own kernel, "
    "wgmma from 64), 1 = wgmma (16..256 tokens), 2 = mma.sync (8..64)"};

// k-tiles a stage: on the own kernel 2 at 8 and 16 tokens, 1 or 2 at 32 and 64 (0 = 1); on the
// shared mainloop at 8..32 tokens (two blocks per SM) as before (README.md).
inline constexpr OptionSpec kFragmentMmaStageKTiles{
    "stage_k_tiles",
    0,
    0,
    2,
    false,
    "k-tiles (64 k) a ring stage holds: 1 or 2; 0 = by token tile (own kernel: 2 at 8 and 16 "
    "tokens, 1 or 2 at 32 and 64; shared mainloop: 2 to 16)"};
// Which kernel runs the mma.sync path: the own one (sync_kernel.cuh: two pipelines a block,
// no per-stage tile-end test) or the shared mainloop's (variant 03's, the ladder's earlier rows).
inline constexpr OptionSpec kFragmentMmaKernel{
    "kernel",
    0,
    0,
    1,
    false,
    "kernel of the mma.sync path: 0 = own (8..64 tokens), 1 = the shared mainloop (variant 03's)"};
// Where the block scales are applied on the own kernel: to the weight pairs before the MMA
// (HMUL2) or to each block's products after it (FFMA, fp32 scales).
inline constexpr OptionSpec kFragmentMmaScaleAfter{
    "scale_after_mma",
    0,
    0,
    2,
    false,
    "own kernel, 8 and 16 tokens: 0 = by token tile (after), 1 = before the MMA (HMUL2 on the "
    "pairs), 2 = after (FFMA on each block's products, fp32 scales)"};

// Pipelines a block of the own kernel runs over its one table: 2 (8 consumer warps each, one
// 16-row block a warp), 3 or 4 (4 consumer warps each, two row blocks a warp: each activation
// fragment loaded once for two MMAs; at 16 tokens 4 pipelines of 2 consumer warps holding four,
// row_blocks).
inline constexpr OptionSpec kFragmentMmaPipelines{
    "pipelines",
    0,
    0,
    4,
    false,
    "own kernel: walks a block runs over one table: 2 (one 16-row block a warp), 3 or 4 (two "
    "row blocks a warp, or four: row_blocks); 0 = 4 to 16 tokens, 3 at 32 and 64"};

// How the own kernel lays its walks (each one stream-K stripe of the plan) on blocks
// (variants/hopper/stream_k.hpp's WalkOrder).
inline constexpr OptionSpec kFragmentMmaWalkOrder{
    "walk_order",
    0,
    0,
    3,
    false,
    "own kernel: 0 = by problem (spread when block-major would leave a tenth of the SMs idle), "
    "1 = pipeline-major (neighbouring stripes on different SMs), 2 = block-major (a block's "
    "pipelines take neighbouring stripes), 3 = spread (pipeline-major over min(SMs, walks) "
    "blocks)"};
// Row blocks (16 weight rows) a consumer warp of the own kernel holds: each activation
// fragment it loads feeds that many MMAs.
inline constexpr OptionSpec kFragmentMmaRowBlocks{
    "row_blocks",
    0,
    0,
    4,
    false,
    "own kernel: 16-row blocks a consumer warp holds: 0 = by token tile and pipelines (4 at 16 "
    "tokens on 4 pipelines, else 1 with 2 pipelines, 2 with 3 or 4), 1, 2, 4 (4 pipelines of 2 "
    "consumer warps, 8 and 16 tokens)"};
// How the own kernel's producers and consumers wait on the ring's barriers.
inline constexpr OptionSpec kFragmentMmaWaitHint{
    "wait_hint_ns",
    0,
    0,
    1000000,
    false,
    "own kernel: the suspend-time hint (ns) of the ring's barrier waits (the producer's for a "
    "free stage, the consumers' for a full one): asleep until the stage is ready or the time "
    "passes (measured slower); 0 = re-poll (try_wait's own short limit)"};

std::unique_ptr<VariantState> fragment_mma_setup(const GemmDims& dims, const VariantOptions& opts);
void fragment_mma_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                      cudaStream_t stream);

}  // namespace kbit::variants
