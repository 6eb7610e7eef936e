// Single-instruction bit helpers (LOP3, PRMT) that nvcc does not always find by itself.
#pragma once
#include <cstdint>

namespace kbit::dev {

// (a & b) | c in one LOP3.
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// PRMT: byte i of the result is byte sel[4i .. 4i + 2] of {b, a} (0..3: a's bytes, 4..7: b's), or,
// where bit 4i + 3 is set, that byte's sign replicated (0x00 or 0xFF; the __byte_perm intrinsic
// ignores the bit).
__device__ __forceinline__ uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

}  // namespace kbit::dev
