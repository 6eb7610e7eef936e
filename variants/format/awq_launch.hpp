// The AWQ quantizers' kernel launches (awq_kernels.cu), called by the checked host entry points
// of awq_kernels.cpp. `errors` is two device words, all ones before the launch: [0] the first
// non-finite element's index n * k_dim + k, [1] the first overflowing scale's index g * n + col.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "reference/dtype.hpp"
#include "variants/format/awq_kernels.hpp"

namespace kbit::gpu::detail {

void launch_awq_fused(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                      const AwqOutputs& out, unsigned long long* errors, cudaStream_t stream);
void launch_awq_multipass(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                          const AwqOutputs& out, std::uint8_t* scratch, unsigned long long* errors,
                          cudaStream_t stream);

}  // namespace kbit::gpu::detail
