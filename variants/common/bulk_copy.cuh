// Hopper bulk copies (cp.async.bulk, the non-tensor TMA) and the mbarriers that track them:
// the producer/consumer ring of the streaming kernels. PTX ISA 8.0, sm_90. On older targets the
// wrappers trap; those devices never get here (the registry's Support::min_sm, and the
// variant's own setup check, refuse them first).
#pragma once
#include <cstdint>

#include "variants/common/cp_async.cuh"  // smem_addr

namespace kbit::dev {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KBIT_NO_BULK_COPY 1
#endif

// Initializes an mbarrier that completes a phase after `count` arrivals (plus any expected
// transaction bytes). One thread; fence_barrier_init + a block barrier publish it.
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}

// Makes the initialized barriers visible to the async proxy (the bulk copies complete on them).
__device__ __forceinline__ void fence_barrier_init() {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival that also announces `bytes` of copies that will complete on this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile(
      "{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(bar),
      "r"(bytes)
      : "memory");
#endif
}

// One plain arrival (release: this thread's earlier shared-memory reads are done).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
#endif
}

// Orders this thread's view of shared memory (generic proxy), including the consumers' reads
// it acquired through an mbarrier wait, before its later bulk copies (async proxy). Without it
// a refill may land before the consumers' LDS of the previous contents are performed: a WAR
// race that racecheck cannot see and that v6 of scalar_gemv hit (wrong columns, only at speed).
__device__ __forceinline__ void fence_proxy_async_shared() {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// Waits until the phase of parity `parity` has completed. try_wait returns false after a few
// cycles: variant 07's producers on a full ring re-polled every ~8 cycles, 41% of a 16-token
// launch's instructions, and put to sleep between polls measured level (F-068). With a
// suspend-time hint (`hint_ns` != 0) a thread that finds the phase incomplete
// sleeps until it completes or about hint_ns nanoseconds pass instead of re-polling.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity, uint32_t hint_ns = 0) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  uint32_t done = 0;
  do {
    if (hint_ns == 0)
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
          "selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(bar), "r"(parity)
          : "memory");
    else
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3; "
          "selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(bar), "r"(parity), "r"(hint_ns)
          : "memory");
  } while (!done);
#endif
}

// Global -> shared copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) by the
// TMA engine, completing `bytes` transactions on `bar`. One thread issues it; no registers
// hold the data, so a ring of several stages costs no occupancy.
__device__ __forceinline__ void bulk_copy_g2s(uint32_t dst, const void* src, uint32_t bytes,
                                              uint32_t bar) {
#ifdef KBIT_NO_BULK_COPY
  __trap();
#else
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
#endif
}

}  // namespace kbit::dev
