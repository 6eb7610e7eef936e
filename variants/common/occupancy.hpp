// Host side of a kernel's residency: the dynamic shared memory opt-in and the blocks that run at
// once, with the refusals a setup makes before any allocation. Variants 02, 06 (awq_gemv) and the
// shared Hopper launcher (variants/hopper/launcher.cu) call it.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit::variants {

// Opts `kernel` in to `smem_bytes` of dynamic shared memory per block (past the default 48 KB a
// kernel must ask) and returns the blocks of `threads` threads that run at once: SMs x blocks per
// SM. Throws, naming `who`, when the device offers less shared memory per block, or when no
// block fits on an SM (registers, threads).
inline int resident_blocks(const void* kernel, int threads, int smem_bytes, const char* who) {
  int dev = 0, sms = 0, per_sm = 0, optin = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (optin < smem_bytes)
    throw Error(std::string(who) + ": needs " + std::to_string(smem_bytes) +
                " bytes of shared memory per block, this device offers " + std::to_string(optin));
  KBIT_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  KBIT_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes));
  if (per_sm < 1)
    throw Error(std::string(who) + ": a block of " + std::to_string(threads) + " threads with " +
                std::to_string(smem_bytes) + " bytes of shared memory does not fit on this device");
  return sms * per_sm;
}

}  // namespace kbit::variants
