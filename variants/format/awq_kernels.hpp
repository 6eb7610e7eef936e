// GPU quantizers into the AWQ int4 format (docs/awq_format.md), bit-exact with the reference
// (reference/awq.hpp): the fused single-pass kernel (quantize + interleave + pack in one read
// of the weight) and the straightforward multi-pass version it is measured against. Host API
// only: no CUDA device code or CUDA headers beyond the runtime API.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "reference/dtype.hpp"

namespace kbit::gpu {

// Device buffers of an AWQ tensor for a weight W[n][k_dim] (the kbit orientation): qweight
// [k_dim][n / 8] and qzeros [k_dim / group][n / 8] int32, scales [k_dim / group][n] fp16 bits.
struct AwqOutputs {
  std::int32_t* qweight = nullptr;
  std::int32_t* qzeros = nullptr;
  std::uint16_t* scales = nullptr;
};

// Fused: one block quantizes a tile of 64 columns x one group, transposes the 4-bit values
// through shared memory and writes whole words. `in`: fp16 or fp32 W[n][k_dim] (row-major).
// Shapes are checked first (kbit::Error naming the value: n % 8, group in {32, 64, 128},
// k_dim % group). After the kernel, one synchronization reads back the first non-finite
// element and the first group whose scale overflows fp16; either throws kbit::Error naming
// its position, and the outputs are then unspecified.
void awq_quantize(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                  const AwqOutputs& out, cudaStream_t stream);

// The same result in three kernels (scales and zeros; q as bytes, one thread an element;
// permute and pack), each reading what the last wrote. `scratch` holds n * k_dim bytes of q
// plus (k_dim / group) * n bytes of zeros; same checks and errors.
void awq_quantize_multipass(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                            const AwqOutputs& out, std::uint8_t* scratch, cudaStream_t stream);

// Bytes of scratch awq_quantize_multipass needs.
std::int64_t awq_multipass_scratch_bytes(std::int64_t n, std::int64_t k_dim, int group);

}  // namespace kbit::gpu
