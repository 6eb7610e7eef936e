// Shared-memory accesses by generic pointer or by shared-window address (uint32_t). A kernel
// that takes every shared address from its dynamic array's symbol and never converts a generic
// pointer keeps ptxas from adding the converted base (a register holding the CTA's rank bits) to
// every access: it folds the link-time constant into the instruction instead (variant 07's own
// kernel, F-041). A caller templated on the address type works with either.
#pragma once
#include <cstdint>

namespace kbit::dev::smem {

// Loads of data that arrives while the kernel runs (a ring stage): volatile, so ordered after
// the barrier wait that makes it visible.
__device__ __forceinline__ uint4 load128(const unsigned char* p, uint32_t off) {
  return *reinterpret_cast<const uint4*>(p + off);
}
__device__ __forceinline__ uint4 load128(uint32_t a, uint32_t off) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(a + off)
               : "memory");
  return v;
}
__device__ __forceinline__ uint2 load64(const unsigned char* p, uint32_t off) {
  return *reinterpret_cast<const uint2*>(p + off);
}
__device__ __forceinline__ uint2 load64(uint32_t a, uint32_t off) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a + off) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t load32(const unsigned char* p, uint32_t off) {
  return *reinterpret_cast<const uint32_t*>(p + off);
}
__device__ __forceinline__ uint32_t load32(uint32_t a, uint32_t off) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a + off) : "memory");
  return v;
}

// A load of data fixed for the rest of the kernel (a table built before a barrier): not
// volatile, so the compiler schedules it freely; its address depends on loaded data anyway.
__device__ __forceinline__ uint32_t load32_fixed(const unsigned char* p, uint32_t off) {
  return *reinterpret_cast<const uint32_t*>(p + off);
}
__device__ __forceinline__ uint32_t load32_fixed(uint32_t a, uint32_t off) {
  uint32_t v;
  asm("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a + off));
  return v;
}

__device__ __forceinline__ uint2 load64_fixed(const unsigned char* p, uint32_t off) {
  return *reinterpret_cast<const uint2*>(p + off);
}
__device__ __forceinline__ uint2 load64_fixed(uint32_t a, uint32_t off) {
  uint2 v;
  asm("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a + off));
  return v;
}

__device__ __forceinline__ void store128(unsigned char* p, uint32_t off, uint4 v) {
  *reinterpret_cast<uint4*>(p + off) = v;
}
__device__ __forceinline__ void store128(uint32_t a, uint32_t off, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a + off), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ void store16(uint32_t a, uint32_t off, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" ::"r"(a + off), "h"(v) : "memory");
}

}  // namespace kbit::dev::smem
