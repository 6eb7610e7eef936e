// Helpers for GPU tests: skip cleanly where there is no device (CTest's
// SKIP_REGULAR_EXPRESSION "SKIPPED: " matches the line), fail instead where the run must find one
// (KBIT_REQUIRE_GPU=1: the gpu test preset, harness/gpu_batch.sh's test step), and poisoned
// device outputs.
#pragma once
#include <cstdlib>
#include <iostream>
#include <string>

#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"

namespace kbit::test {

// KBIT_REQUIRE_GPU=1 in the environment: a GPU test that would skip fails instead.
inline bool gpu_required() {
  const char* e = std::getenv("KBIT_REQUIRE_GPU");
  return e && std::string(e) == "1";
}

// A device buffer whose every byte is 0xFF before the kernel runs: unwritten fp16/bf16/fp32
// elements read as NaN, unwritten words as 0xFFFFFFFF.
template <typename T>
DeviceBuffer<T> poisoned(std::size_t n) {
  DeviceBuffer<T> b(n);
  b.fill_bytes(0xFF);
  return b;
}

}  // namespace kbit::test

// Ends the test case as skipped ("SKIPPED: why"), or fails it under KBIT_REQUIRE_GPU=1.
#define KBIT_SKIP(why)                                                          \
  do {                                                                          \
    const std::string kbit_skip_why_ = (why);                                   \
    if (::kbit::test::gpu_required())                                           \
      FAIL("KBIT_REQUIRE_GPU=1, and this test would skip: " << kbit_skip_why_); \
    std::cout << "SKIPPED: " << kbit_skip_why_ << std::endl;                    \
    return;                                                                     \
  } while (0)

#define KBIT_REQUIRE_GPU()                                             \
  do {                                                                 \
    if (!::kbit::cuda_device_available()) KBIT_SKIP("no CUDA device"); \
  } while (0)
