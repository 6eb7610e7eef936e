// Split-K across blocks: every contributor adds its partial tile into a zeroed fp32
// workspace; a per-tile counter tells the last contributor, which converts the sums to the
// output type, writes C and zeroes the workspace and the counter again for the next call.
//
// (The seeds' scheme, "the first contributor overwrites the workspace, later ones add", races
// when a later contributor adds before the first one has written; a workspace that is zero
// before every call removes the ordering.) The variant zeroes workspace and counters once in
// its setup step; each call leaves them zero.
#pragma once
#include <cstdint>

#include "variants/common/barrier.cuh"

namespace kbit::dev::splitk {

// One contribution, added at L2 with no result coming back (red, not atom). atomicAdd with its
// result unused compiled to ATOMG on sm_90 (nvcc 12): its destination register makes the thread
// wait a full L2 round trip at the register's next use (session 8).
__device__ __forceinline__ void add(float* ws, std::int64_t idx, float v) {
  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(ws + idx), "f"(v) : "memory");
}

// Called after its adds by every thread that holds outputs: the whole block (Threads = 0), or
// the first Threads threads (the consumer warps of a kernel with a producer warp). True, in
// each of them, for the block that arrives last of `contributors`; it also resets the counter.
// CUTLASS's semaphore pattern: the barrier gathers the block's adds, and one acq_rel atomic
// releases them to the last arriver and acquires the others' for it (the barrier after it
// passes that on to the block); no MEMBAR.SC.GPU, which __threadfence() compiles to.
template <int Threads = 0>
__device__ __forceinline__ bool arrive_is_last(int* counter, int contributors) {
  __shared__ int s_last;
  sync_threads<Threads>();
  if (threadIdx.x == 0) {
    int prev;
    asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], 1;"
                 : "=r"(prev)
                 : "l"(counter)
                 : "memory");
    s_last = prev == contributors - 1;
    if (s_last) *counter = 0;  // every contributor has arrived: safe to reset
  }
  sync_threads<Threads>();
  return s_last;
}

// The final sum of one element (read at L2, past a possibly stale L1), zeroed for next time.
__device__ __forceinline__ float take(float* ws, std::int64_t idx) {
  const float v = __ldcg(ws + idx);
  ws[idx] = 0.0f;
  return v;
}

}  // namespace kbit::dev::splitk
