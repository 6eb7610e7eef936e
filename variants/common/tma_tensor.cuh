// Hopper TMA tensor copies (cp.async.bulk.tensor): one instruction copies a whole box of a
// tensor described by a CUtensorMap (encoded on the host, variants/common/tensor_map.hpp) into
// shared memory and completes its bytes on an mbarrier, like bulk_copy_g2s. PTX ISA 8.0, sm_90;
// on older targets the wrappers trap (the registry's Support::min_sm refuses those devices).
#pragma once
#include <cstdint>

#include "variants/common/bulk_copy.cuh"

namespace kbit::dev {

// `map` must live in kernel parameter, constant or global memory: pass it in a
// `const __grid_constant__` kernel parameter and give its address here (the TMA unit reads the
// 128-byte descriptor from there, so a copy in registers or local memory would not do).

// A 2-D box at element coordinates (x, y) into `dst` (128-byte aligned; 1024 with a 128-byte
// swizzle); the box's full size in bytes counts on `bar` even where it reaches past the tensor
// (those elements land as zeros).
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void* map, int x, int y,
                                            uint32_t bar) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar)
      : "memory");
#endif
}

// The same for a 3-D box at (x, y, z): three strides let one instruction gather a box whose
// rows are far apart in global memory (a column slice of several k-tiles of the tiled layout).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* map, int x, int y, int z,
                                            uint32_t bar) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar)
      : "memory");
#endif
}

}  // namespace kbit::dev
