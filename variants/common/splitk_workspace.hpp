// Host side of the self-cleaning split-K end (variants/common/splitk.cuh): the fp32 workspace
// [M][N] and one arrival counter per output tile, zeroed once when a variant's setup finds a
// split tile; every call leaves them zero again, so runs need no memset (graph-capturable).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"

namespace kbit::variants {

struct SplitKWorkspace {
  DeviceBuffer<float> sums;    // [M][N], zero between calls
  DeviceBuffer<int> counters;  // one per output tile, zero between calls
  // Allocates and zeroes both (synchronizes: setup only).
  void allocate(std::int64_t elems, std::int64_t tiles) {
    sums = DeviceBuffer<float>(std::size_t(elems));
    counters = DeviceBuffer<int>(std::size_t(tiles));
    sums.fill_bytes(0);
    counters.fill_bytes(0);
    KBIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
};

}  // namespace kbit::variants
