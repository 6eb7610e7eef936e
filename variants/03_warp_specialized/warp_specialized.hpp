// Variant 03 (warp_specialized.cu): warp-specialized Hopper kernel, TMA producer warpgroup and
// two consumer warpgroups issuing wgmma with the dequantized weights as the register operand.
// Host entry points and options for the registry.
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// Tokens per tile (the MMA's N). 0 picks by M: the smallest of 8, 16, 32, 64, 128 that holds M,
// 256 above 128 (README.md has the measured choice).
inline constexpr OptionSpec kWarpSpecializedTokenTile{
    "token_tile",
    0,
    0,
    256,
    false,
    "tokens per tile (the MMA's N): 8 (mma.sync only), 16, 32, 64, 128 or 256; 0 = by M",
    /*multiple_of=*/8,
    /*power_of_two=*/true};
// The consumers' MMA (variants/hopper/config.cuh, MmaPath): 0 by token tile (mma.sync up to 16
// tokens, wgmma above), 1 wgmma (16..256 tokens), 2 mma.sync (8..64 tokens).
inline constexpr OptionSpec kWarpSpecializedMma{
    "mma",
    0,
    0,
    2,
    false,
    "consumer MMA where it exists: 0 = by token tile (mma.sync to 16 tokens), 1 = wgmma (16..256 "
    "tokens), 2 = mma.sync (8..64)"};

std::unique_ptr<VariantState> warp_specialized_setup(const GemmDims& dims,
                                                     const VariantOptions& opts);
void warp_specialized_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                          cudaStream_t stream);

}  // namespace kbit::variants
