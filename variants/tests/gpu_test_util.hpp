// Helpers for GPU tests: skip cleanly where there is no device (CTest's
// SKIP_REGULAR_EXPRESSION matches the line), and poisoned device outputs.
#pragma once
#include <iostream>

#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"

#define KBIT_REQUIRE_GPU()                                 \
  do {                                                     \
    if (!::kbit::cuda_device_available()) {                \
      std::cout << "SKIPPED: no CUDA device" << std::endl; \
      return;                                              \
    }                                                      \
  } while (0)

namespace kbit::test {

// A device buffer whose every byte is 0xFF before the kernel runs: unwritten fp16/bf16/fp32
// elements read as NaN, unwritten words as 0xFFFFFFFF.
template <typename T>
DeviceBuffer<T> poisoned(std::size_t n) {
  DeviceBuffer<T> b(n);
  b.fill_bytes(0xFF);
  return b;
}

}  // namespace kbit::test
