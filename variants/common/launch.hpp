// Kernel launch with an optional programmatic-dependent-launch attribute (variants/common/pdl.cuh
// has the device side). Host-only; the launch is checked.
#pragma once
#include <cuda_runtime.h>

#include "variants/common/cuda_check.hpp"

namespace kbit::variants {

// Launches `kernel`; with `pdl` it may start while the stream's previous kernel still runs (the
// kernel must griddepcontrol.wait before touching what that kernel writes). `cluster` > 1
// groups that many consecutive blocks (x) into a thread-block cluster (sm_90).
inline void launch_kernel(const void* kernel, dim3 grid, dim3 block, int smem_bytes,
                          cudaStream_t stream, void** params, bool pdl, unsigned cluster = 1) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = size_t(smem_bytes);
  cfg.stream = stream;
  cudaLaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n++].val.clusterDim = {cluster, 1, 1};
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  KBIT_CUDA_CHECK(cudaLaunchKernelExC(&cfg, kernel, params));
}

}  // namespace kbit::variants
