// The mbarriers of a producer/consumer ring in shared memory (the streaming kernels): per stage
// a `full` barrier (the producer's one arrival plus the bytes of its bulk copies) and an `empty`
// barrier (one arrival per consumer thread once it has read the stage), then one `extra`
// barrier of one arrival for the kernel's own use. Step q of a block's sequence uses stage
// q % kStages in phase q / kStages.
#pragma once
#include <cstdint>

#include "variants/common/bulk_copy.cuh"

namespace kbit::dev {

template <int kStages, int kConsumers>  // kConsumers: the arrivals that free a stage
struct RingBarriers {
  static constexpr int kBytes = (2 * kStages + 1) * 8;  // shared memory they take
  uint32_t base;                                        // shared address of full[0]

  __device__ explicit RingBarriers(uint32_t smem_base) : base(smem_base) {}
  __device__ uint32_t full(int s) const { return base + 8 * s; }
  __device__ uint32_t empty(int s) const { return base + 8 * (kStages + s); }
  __device__ uint32_t extra() const { return base + 16 * kStages; }
  static __device__ int stage(uint32_t q) { return int(q % kStages); }
  static __device__ uint32_t parity(uint32_t q) { return (q / kStages) & 1u; }

  // Thread 0 initializes; every thread of the block must call (one __syncthreads).
  __device__ void init() const {
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        mbar_init(full(s), 1);
        mbar_init(empty(s), kConsumers);
      }
      mbar_init(extra(), 1);
      fence_barrier_init();
    }
    __syncthreads();
  }
};

}  // namespace kbit::dev
