// Kernel launch with an optional programmatic-dependent-launch attribute (variants/common/pdl.cuh
// has the device side). Host-only; the launch is checked.
#pragma once
#include <cuda_runtime.h>

#include "variants/common/cuda_check.hpp"

namespace kbit::variants {

// Launches `kernel`; with `pdl` it may start while the stream's previous kernel still runs (the
// kernel must griddepcontrol.wait before touching what that kernel writes).
inline void launch_kernel(const void* kernel, dim3 grid, dim3 block, int smem_bytes,
                          cudaStream_t stream, void** params, bool pdl) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = size_t(smem_bytes);
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  KBIT_CUDA_CHECK(cudaLaunchKernelExC(&cfg, kernel, params));
}

}  // namespace kbit::variants
