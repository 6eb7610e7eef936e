// Variant 02 (fetch_dequant.cu): dequantize during the fetch into an ldmatrix-ready fp16/bf16
// B tile, then a pure ldmatrix + mma.sync loop (the design documents' phase-2 kernel). Host
// entry points for the registry.
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

std::unique_ptr<VariantState> fetch_dequant_setup(const GemmDims& dims, const VariantOptions& opts);
void fetch_dequant_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                       cudaStream_t stream);

}  // namespace kbit::variants
