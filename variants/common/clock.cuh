// Device clocks: %globaltimer (ns, the same on every SM) and the SM a thread runs on.
#pragma once
#include <cstdint>

namespace kbit::dev {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned sm_id() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

}  // namespace kbit::dev
