// Small device utilities the harness and tests need: random fills and an SM-clock probe.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "variants/common/cuda_check.hpp"

#include "reference/dtype.hpp"

namespace kbit::gpu {

// Uniform values in [-1, 1), hashed from (seed, i), rounded to `t`.
void fill_random(DType t, void* out, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

// The SM clock in MHz while a kernel runs: one block spins ~`spin_us` microseconds and
// compares clock64() with %globaltimer. Synchronizes.
double measure_sm_clock_mhz(cudaStream_t stream, int spin_us = 200);

// Median milliseconds of `reps` timed calls of fn(), after `warmup` untimed ones, with CUDA
// events on `stream` (for the run-level ceilings; variants are timed by harness/timing.cpp).
template <typename Fn>
double median_event_ms(cudaStream_t stream, int warmup, int reps, Fn&& fn) {
  cudaEvent_t e0, e1;
  KBIT_CUDA_CHECK(cudaEventCreate(&e0));
  KBIT_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int it = 0; it < warmup + reps; ++it) {
    KBIT_CUDA_CHECK(cudaEventRecord(e0, stream));
    fn();
    KBIT_CUDA_CHECK(cudaEventRecord(e1, stream));
    KBIT_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    KBIT_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (it >= warmup) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace kbit::gpu
