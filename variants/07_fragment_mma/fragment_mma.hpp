// Variant 07 (fragment_mma.cu): the shared mainloop (variants/03_warp_specialized/mainloop.cuh)
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
    "consumer MMA where it exists: 0 = by token tile (mma.sync to 16 tokens), 1 = wgmma (16..256 "
    "tokens), 2 = mma.sync (8..64)"};

// k-tiles a stage at 8..32 tokens (two blocks per SM): 1 or 2; 0 = by token tile (2 at 8 and
// 16 tokens, 1 at 32: measured, README.md).
inline constexpr OptionSpec kFragmentMmaStageKTiles{
    "stage_k_tiles",
    0,
    0,
    2,
    false,
    "k-tiles (64 k) a ring stage holds at 8..32 tokens: 1 or 2; 0 = by token tile (2 to 16)"};

std::unique_ptr<VariantState> fragment_mma_setup(const GemmDims& dims, const VariantOptions& opts);
void fragment_mma_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                      cudaStream_t stream);

}  // namespace kbit::variants
