#include "variants/common/tensor_map.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit::variants {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
  static EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    KBIT_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                     cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !p)
      throw Error("cuTensorMapEncodeTiled: the driver does not provide it (query result " +
                  std::to_string(int(q)) + ")");
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

}  // namespace

CUtensorMap encode_tensor_map(const void* base, CUtensorMapDataType type, int elem_bytes,
                              std::initializer_list<TensorDim> dims, CUtensorMapSwizzle swizzle) {
  const int rank = int(dims.size());
  if (rank < 1 || rank > 5)
    throw Error("tensor map: rank " + std::to_string(rank) + " is outside 1..5");
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0)
    throw Error("tensor map: the base address is not 16-byte aligned");
  std::vector<cuuint64_t> extent, stride;
  std::vector<cuuint32_t> box, elem_stride(std::size_t(rank), 1u);
  int i = 0;
  for (const TensorDim& d : dims) {
    if (d.extent < 1 || d.extent > (1ull << 32))
      throw Error("tensor map: dimension " + std::to_string(i) + " extent " +
                  std::to_string(d.extent) + " is outside 1..2^32");
    if (d.box < 1 || d.box > 256)
      throw Error("tensor map: dimension " + std::to_string(i) + " box " + std::to_string(d.box) +
                  " is outside 1..256");
    if (i > 0 && (d.stride_bytes % 16 != 0 || d.stride_bytes >= (1ull << 40)))
      throw Error("tensor map: dimension " + std::to_string(i) + " stride " +
                  std::to_string(d.stride_bytes) + " B is not a multiple of 16 below 2^40");
    extent.push_back(d.extent);
    box.push_back(d.box);
    if (i > 0) stride.push_back(d.stride_bytes);
    ++i;
  }
  const std::uint64_t inner = std::uint64_t(box[0]) * std::uint64_t(elem_bytes);
  if (inner % 16 != 0)
    throw Error("tensor map: the box's inner row is " + std::to_string(inner) +
                " B, not a multiple of 16");
  if (swizzle == CU_TENSOR_MAP_SWIZZLE_128B && inner > 128)
    throw Error("tensor map: the box's inner row is " + std::to_string(inner) +
                " B, more than the 128 B a 128-byte swizzle allows");
  CUtensorMap map{};
  const CUresult r =
      encode_fn()(&map, type, cuuint32_t(rank), const_cast<void*>(base), extent.data(),
                  stride.data(), box.data(), elem_stride.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
                  swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return map;
}

}  // namespace kbit::variants
