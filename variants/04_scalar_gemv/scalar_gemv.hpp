// Variant 04 (scalar_gemv.cu): the GEMV for M = 1..4, and its grouped (MoE decode) form. Host
// entry points and options for the registry.
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// How split tiles may end (plan.cpp chooses among those allowed). Both on is the product
// configuration; racecheck cannot follow either end (it hangs on st.async and on the tagged
// wait), so it checks those problems with both off: the workspace end.
inline constexpr OptionSpec kScalarGemvClusterEnd{
    "cluster_end",
    1,
    0,
    1,
    true,
    "1: split tiles whose k-bands form a cluster end in it (st.async into rank 0); 0: never"};
inline constexpr OptionSpec kScalarGemvTaggedEnd{
    "tagged_end",
    1,
    0,
    1,
    true,
    "1: other split tiles end through tagged L2 slots where every contributor is resident; 0: "
    "never (the workspace and its counter)"};

std::unique_ptr<VariantState> scalar_gemv_setup(const GemmDims& dims, const VariantOptions& opts);
void scalar_gemv_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                     cudaStream_t stream);

std::unique_ptr<VariantState> grouped_scalar_gemv_setup(const GemmDims& dims,
                                                        const VariantOptions& opts);
void grouped_scalar_gemv_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                             cudaStream_t stream);

}  // namespace kbit::variants
