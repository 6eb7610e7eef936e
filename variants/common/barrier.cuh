// Block barriers that a warp-specialized kernel can use: its producer warp must never be
// waited for by the consumers' barriers (it may itself be waiting on them through a ring).
#pragma once

namespace kbit::dev {

// Barrier over the first `Threads` threads of the block (a multiple of 32). Threads == 0 means
// the whole block (__syncthreads); otherwise named barrier 1 (0 is __syncthreads').
template <int Threads>
__device__ __forceinline__ void sync_threads() {
  if constexpr (Threads == 0) {
    __syncthreads();
  } else {
    static_assert(Threads % 32 == 0, "named barriers count whole warps");
    asm volatile("bar.sync 1, %0;" ::"n"(Threads) : "memory");
  }
}

// Barrier `id` (1..15; 0 is __syncthreads') over `Threads` threads of the block: one group of
// several that sync apart (variant 07's two pipelines a block, each with its own id).
template <int Threads>
__device__ __forceinline__ void sync_named(int id) {
  static_assert(Threads % 32 == 0, "named barriers count whole warps");
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(Threads) : "memory");
}

// Arrival at barrier `id` over `Threads` threads without waiting (bar.arrive): the thread's prior
// memory accesses are performed, for the group's threads that sync on it, once it completes.
template <int Threads>
__device__ __forceinline__ void arrive_named(int id) {
  static_assert(Threads % 32 == 0, "named barriers count whole warps");
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(Threads) : "memory");
}

}  // namespace kbit::dev
