// Device utilities of the harness and its tests: random fills, an SM-clock probe, event timing
// and the ceilings' tensor rate.
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

// A pair of CUDA events: the milliseconds of the work a body enqueues on a stream.
class EventTimer {
 public:
  EventTimer() {
    KBIT_CUDA_CHECK(cudaEventCreate(&start_));
    KBIT_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  template <typename F>
  double time_ms(cudaStream_t stream, F&& body) {
    KBIT_CUDA_CHECK(cudaEventRecord(start_, stream));
    body();
    KBIT_CUDA_CHECK(cudaEventRecord(stop_, stream));
    KBIT_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    KBIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Median milliseconds of `reps` timed calls of fn(), after `warmup` untimed ones (for the
// run-level ceilings; variants are timed by harness/timing.cpp).
template <typename Fn>
double median_event_ms(cudaStream_t stream, int warmup, int reps, Fn&& fn) {
  EventTimer timer;
  std::vector<double> ms;
  for (int it = 0; it < warmup + reps; ++it) {
    const double t = timer.time_ms(stream, fn);
    if (it >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Dense fp16 tensor-core rate of this device in TFLOP/s: the median of timed cuBLAS
// n x n x n products on random data (the harness's flops ceiling).
double measure_tensor_tflops(int n, cudaStream_t stream);

}  // namespace kbit::gpu
