// Variant 05 (grouped_mma.cu): every active expert of an MoE layer in one launch of variant 03's
// warp-specialized wgmma mainloop, over (expert, m-tile, n-tile) tiles that a one-block kernel
// lists on the device from the expert offsets. Host entry points and options for the registry.
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// Tokens per tile (the MMA's N). 0 picks by the mean rows per expert (grouped_mma_token_tile).
inline constexpr OptionSpec kGroupedMmaTokenTile{
    "token_tile",
    0,
    0,
    256,
    false,
    "tokens per tile (the MMA's N): 8, 16, 32, 64, 128 or 256; 0 = by the mean rows per expert",
    /*multiple_of=*/8,
    /*power_of_two=*/true};
// Checked mode: the work-list kernel also records the first malformed device expert offset, and
// the state's check_after_run (which the harness calls after a run, outside the timed region)
// throws naming it; the run itself never synchronizes, so a checked run is graph-captured too.
inline constexpr OptionSpec kGroupedMmaChecked{
    "checked",
    0,
    0,
    1,
    true,
    "1: check the device expert offsets (check_after_run throws on malformed ones); 0: clamp "
    "only"};

std::unique_ptr<VariantState> grouped_mma_setup(const GemmDims& dims, const VariantOptions& opts);
void grouped_mma_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                     cudaStream_t stream);

// The most experts grouped_mma takes: its work-list kernel keeps two ints an expert in shared
// memory (1024 threads x 4 experts).
inline constexpr int kGroupedMmaMaxExperts = 4096;

// grouped_auto's crossover: grouped_mma from this many rows per expert (M / experts) on,
// grouped_scalar_gemv below (README.md: where grouped_mma starts to beat it).
inline constexpr double kGroupedMmaFromRowsPerExpert = 5.0;

// The token tile grouped_mma picks for `rows_per_expert` (M / experts) when token_tile = 0.
int grouped_mma_token_tile(double rows_per_expert);

}  // namespace kbit::variants
