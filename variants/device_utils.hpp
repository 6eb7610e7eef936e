// Small device utilities the harness and tests need: random fills and an SM-clock probe.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "reference/dtype.hpp"

namespace kbit::gpu {

// Uniform values in [-1, 1), hashed from (seed, i), rounded to `t`.
void fill_random(DType t, void* out, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

// The SM clock in MHz while a kernel runs: one block spins ~`spin_us` microseconds and
// compares clock64() with %globaltimer. Synchronizes.
double measure_sm_clock_mhz(cudaStream_t stream, int spin_us = 200);

}  // namespace kbit::gpu
