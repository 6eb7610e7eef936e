// cp.async (sm_80+): global -> shared copies that bypass registers, grouped and waited on.
#pragma once
#include <cstdint>

namespace kbit::dev {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes, L2 only (.cg: the tile is used once per block); src_bytes < 16 zero-fills the rest
// (rows past M, columns past K_dim read nothing and land as zeros).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}

// 4 bytes (.ca: the only size the B tile's padded column stride allows).
__device__ __forceinline__ void cp_async_4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(dst)), "l"(src));
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;");
}

// Waits until at most N groups are still in flight (N is a compile-time pipeline depth).
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

}  // namespace kbit::dev
