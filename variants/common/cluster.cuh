// Thread-block clusters (sm_90): distributed shared memory and the cluster barrier, for
// kernels whose blocks combine partial results without a round trip through L2. PTX ISA 8.0.
// On older targets the wrappers trap; the host never launches a cluster there.
#pragma once
#include <cstdint>

namespace kbit::dev::cluster {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KBIT_NO_CLUSTER 1
#define KBIT_CLUSTER_ASM(...) __trap()
#else
#define KBIT_CLUSTER_ASM(...) asm volatile(__VA_ARGS__)
#endif

// This block's rank in its cluster (0 .. cluster size - 1).
__device__ __forceinline__ uint32_t rank() {
  uint32_t r = 0;
  KBIT_CLUSTER_ASM("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// The shared::cluster address of the same shared-memory location in block `target` (mapa).
__device__ __forceinline__ uint32_t map(uint32_t smem_addr, uint32_t target) {
  uint32_t out = 0;
  KBIT_CLUSTER_ASM("mapa.shared::cluster.u32 %0, %1, %2;"
                   : "=r"(out)
                   : "r"(smem_addr), "r"(target));
  return out;
}

// A float into another block's shared memory (an address from map()).
__device__ __forceinline__ void store(uint32_t cluster_addr, float v) {
  KBIT_CLUSTER_ASM("st.shared::cluster.f32 [%0], %1;" ::"r"(cluster_addr), "f"(v) : "memory");
}

// One arrival on an mbarrier of another block (an address from map()), releasing this
// thread's earlier memory operations (and, after a block barrier, its block's) at cluster scope.
__device__ __forceinline__ void arrive_remote(uint32_t cluster_bar) {
  KBIT_CLUSTER_ASM("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar)
                   : "memory");
}

// Waits for phase `parity` of a local mbarrier whose arrivals come from other blocks, acquiring
// at cluster scope what they released (what they stored into this block's shared memory).
__device__ __forceinline__ void wait_acquire(uint32_t bar, uint32_t parity) {
#ifdef KBIT_NO_CLUSTER
  __trap();
#else
  uint32_t done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// The cluster barrier, split: every thread arrives once at its start (after
// fence_barrier_init, which releases the block's mbarrier initializations) and waits before
// its first access to another block's shared memory, or before it exits; the wait returns once
// every block of the cluster has started and initialized its barriers (CUTLASS's pattern).
__device__ __forceinline__ void arrive_relaxed() {
  KBIT_CLUSTER_ASM("barrier.cluster.arrive.relaxed;" ::: "memory");
}
__device__ __forceinline__ void wait() {
  KBIT_CLUSTER_ASM("barrier.cluster.wait;" ::: "memory");
}

#undef KBIT_CLUSTER_ASM
}  // namespace kbit::dev::cluster
