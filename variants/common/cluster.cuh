// Thread-block clusters (sm_90): distributed shared memory and the cluster barrier, for
// kernels whose blocks combine partial results without a round trip through L2. PTX ISA 8.0.
// On older targets the wrappers trap; the host never launches a cluster there.
#pragma once
#include <cstdint>

namespace kbit::dev::cluster {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
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

// A float into another block's shared memory (an address from map()) that, once written,
// completes 4 bytes of the transaction count of that block's mbarrier `remote_bar` (an address
// from map() too): the receiver waits on its own mbarrier for all the bytes it expects, as for a
// bulk copy, and the sender may leave at once (st.async, PTX ISA 8.1).
__device__ __forceinline__ void store_async(uint32_t cluster_addr, float v, uint32_t remote_bar) {
  KBIT_CLUSTER_ASM(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
          cluster_addr),
      "r"(__float_as_uint(v)), "r"(remote_bar)
      : "memory");
}

// The cluster barrier, split into arrive and wait: a phase completes when every thread of the
// cluster has arrived; a thread waits for a phase before it arrives for the next one, and may
// leave after arriving. arrive_relaxed at a block's start and wait before the first access to
// another block's shared memory tell that every block has started (CUTLASS's pattern);
// arrive_release then wait publish a phase's shared-memory stores to the waiting threads.
__device__ __forceinline__ void arrive_relaxed() {
  KBIT_CLUSTER_ASM("barrier.cluster.arrive.relaxed;" ::: "memory");
}
__device__ __forceinline__ void arrive_release() {
  KBIT_CLUSTER_ASM("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void wait() {
  KBIT_CLUSTER_ASM("barrier.cluster.wait.acquire;" ::: "memory");
}

#undef KBIT_CLUSTER_ASM
}  // namespace kbit::dev::cluster
