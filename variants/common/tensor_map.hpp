// Host side of the TMA tensor copies (variants/common/tma_tensor.cuh): a CUtensorMap encoded by
// the driver's cuTensorMapEncodeTiled, reached through the runtime's entry-point query so that
// nothing links libcuda directly (the CPU-only CI machine builds without a driver).
#pragma once
#include <cuda.h>  // CUtensorMap and its enums only: no driver call is linked

#include <cstdint>
#include <initializer_list>

namespace kbit::variants {

// One tensor dimension: its extent in elements and, for every dimension but the first, the
// byte distance between consecutive indices (a multiple of 16; the first is contiguous).
struct TensorDim {
  std::uint64_t extent;
  std::uint64_t stride_bytes;  // ignored for dimension 0
  std::uint32_t box;           // elements per box in this dimension (1..256)
};

// Encodes a tiled tensor map over `base` (16-byte aligned) with dimensions listed innermost
// first. Throws kbit::Error naming the value and its limit where the driver's rules would
// refuse it, and CudaError where the driver does.
CUtensorMap encode_tensor_map(const void* base, CUtensorMapDataType type, int elem_bytes,
                              std::initializer_list<TensorDim> dims, CUtensorMapSwizzle swizzle);

}  // namespace kbit::variants
