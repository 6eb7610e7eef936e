// Kernel launch with an optional programmatic-dependent-launch attribute (variants/common/pdl.cuh
// has the device side). Host-only; the launch is checked.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

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

// Whether a grid of `grid` blocks launched in clusters of c can have min(grid, slots) blocks
// running at once (slots: the blocks the plan counted on, blocks_per_sm per SM) with `smem`
// bytes of dynamic shared memory each: clusters are placed whole inside one GPC, so fewer may
// fit than blocks per SM times SMs, and the last clusters would trail in a second wave. Leaves
// the kernel's maximum dynamic shared memory at `smem`.
inline bool clusters_fit_at_once(const void* kernel, int threads, int smem, int c, int grid,
                                 int blocks_per_sm, int slots) {
  int per_sm = 0, fit = 0;
  KBIT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  KBIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(unsigned(threads));
  cfg.dynamicSmemBytes = size_t(smem);
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim = {unsigned(c), 1, 1};
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  KBIT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&fit, kernel, &cfg));
  return per_sm >= blocks_per_sm && fit * c >= std::min(grid, slots);
}

}  // namespace kbit::variants
