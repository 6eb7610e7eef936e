// Split-K across blocks: every contributor adds its partial tile into a zeroed fp32
// workspace; a per-tile counter tells the last contributor, which converts the sums to the
// output type, writes C and zeroes the workspace and the counter again for the next call (or,
// on variant 07's own kernel, a fixed owner waits for the others' counts: release_count below;
// there a tile's one other contributor stores its sums whole, store4, and nothing is zeroed).
//
// (The seeds' scheme, "the first contributor overwrites the workspace, later ones add", races
// when a later contributor adds before the first one has written; a workspace that is zero
// before every call removes the ordering; a tile's one other partial under a fixed owner has no
// second writer to order.) The variant zeroes workspace and counters once in its setup step; each
// call leaves them zero, but for the stored sole partials' slots (overwritten by the next call).
#pragma once
#include <cstdint>

#include "variants/common/barrier.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/splitk_stripes.hpp"

namespace kbit::dev::splitk {

// One contribution, added at L2 with no result coming back (red, not atom). atomicAdd with its
// result unused compiled to ATOMG on sm_90 (nvcc 12): its destination register makes the thread
// wait a full L2 round trip at the register's next use (F-019).
__device__ __forceinline__ void add(float* ws, std::int64_t idx, float v) {
  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(ws + idx), "f"(v) : "memory");
}

// Called after its adds by every thread that holds outputs: the whole block (Threads = 0), or
// the first Threads threads (the consumer warps of a kernel with a producer warp). True, in
// each of them, for the block that arrives last of `contributors`; it also resets the counter.
// CUTLASS's semaphore pattern: the barrier gathers the block's adds, and one acq_rel atomic
// releases them to the last arriver and acquires the others' for it (the barrier after it
// passes that on to the block); no MEMBAR.SC.GPU, which __threadfence() compiles to.
// One thread's arrival for its block (or group): true when it is the last of `contributors`,
// which also resets the counter.
__device__ __forceinline__ bool take_arrival(int* counter, int contributors) {
  int prev;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], 1;"
               : "=r"(prev)
               : "l"(counter)
               : "memory");
  const bool last = prev == contributors - 1;
  if (last) *counter = 0;  // every contributor has arrived: safe to reset
  return last;
}

template <int Threads = 0>
__device__ __forceinline__ bool arrive_is_last(int* counter, int contributors) {
  __shared__ int s_last;
  sync_threads<Threads>();
  if (threadIdx.x == 0) s_last = take_arrival(counter, contributors);
  sync_threads<Threads>();
  return s_last;
}

// The same for one group of `Threads` threads of the block that syncs on named barrier `bar`
// (a pipeline's consumers where a block runs several walks): its thread `leader` arrives, and
// `flag` (shared memory of the group's own) passes the answer on.
template <int Threads>
__device__ __forceinline__ bool group_arrive_is_last(int* counter, int contributors, int bar,
                                                     bool leader, volatile int* flag) {
  sync_named<Threads>(bar);
  if (leader) *flag = take_arrival(counter, contributors);
  __syncwarp();  // bar.sync is .aligned: the leader's warp arrives once, reconverged
  sync_named<Threads>(bar);
  return *flag;
}

// A fixed owner's protocol (variant 07's own kernel: ws::FixedOwner in hopper/epilogue.cuh): each
// other contributor releases one count once its reductions are performed (after a barrier that
// gathers its group's), and the owner acquires contributors - 1 of them before it reads the sums.
__device__ __forceinline__ void release_count(int* counter) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(counter) : "memory");
}
// Waits until `count` contributions are released into the counter, then resets it for the next
// call (every contributor has arrived). The wait polls with a short sleep between reads: the
// contributions are their walks' first pieces, normally done long before (the owner's piece is
// its walk's last), so it rarely waits; the grid is resident (one block an SM), so they come.
__device__ __forceinline__ void acquire_counts(int* counter, int count) {
  for (;;) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
    if (v == count) break;
    __nanosleep(64);
  }
  *counter = 0;
}

// Four contributions to four consecutive sums (16-byte aligned), one vector reduction at L2
// (sm_90's red.v4.f32): a quarter of the scalar reductions' instructions and requests.
__device__ __forceinline__ void add4(float* p, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // the kernels that store through it are sm_90a's; an older build still compiles
#else
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b),
               "f"(c), "f"(d)
               : "memory");
#endif
}

// Four sums stored whole (16-byte aligned): a tile's one partial besides its owner's, which the
// owner reads after its acquire and the next call's contributor overwrites (nothing to clear).
// Relaxed at gpu scope, as the reductions: morally strong, ordered by the group's barrier and
// the leader's release.
__device__ __forceinline__ void store4(float* p, float a, float b, float c, float d) {
  asm volatile("st.relaxed.gpu.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b),
               "f"(c), "f"(d)
               : "memory");
}

// Four final sums (16-byte aligned), read at L2 (past a possibly stale L1).
__device__ __forceinline__ float4 load_sums4(const float* p) {
  return __ldcg(reinterpret_cast<const float4*>(p));
}

// Zeroes four sums of the workspace for the next call, once their final values have been read.
__device__ __forceinline__ void clear4(float* p) {
  *reinterpret_cast<float4*>(p) = make_float4(0.f, 0.f, 0.f, 0.f);
}

// The final sum of one element, read at L2 (past a possibly stale L1).
__device__ __forceinline__ float load_sum(const float* ws, std::int64_t idx) {
  return __ldcg(ws + idx);
}

// Zeroes one element of the workspace for the next call, once its final sum has been read.
__device__ __forceinline__ void clear(float* ws, std::int64_t idx) {
  ws[idx] = 0.0f;
}

// The final sums of N elements (idx[r] < 0: none), all loaded first: one L2 round trip for the
// lot, where a loop of load-then-zero waits one each (F-019). Then per element use(r, sum)
// (the output store), then its zero for the next call. Zeroing every element before the first
// use delays the output stores: scalar_gemv's workspace end (M = 4 Llama3 down with PDL
// +0.4-1.0 us) and grouped MoE rows with PDL (+5-8%) (F-019).
// Index: std::int64_t, or int where the caller's indices fit (fewer registers to hold N of them).
template <int N, typename Index, typename Use>
__device__ __forceinline__ void take_all(float* ws, const Index (&idx)[N], Use&& use) {
  float v[N];
#pragma unroll
  for (int r = 0; r < N; ++r)
    if (idx[r] >= 0) v[r] = load_sum(ws, idx[r]);
#pragma unroll
  for (int r = 0; r < N; ++r)
    if (idx[r] >= 0) {
      use(r, v[r]);
      clear(ws, idx[r]);
    }
}

// stripe_contributors (splitk_stripes.hpp): the contributor count of a stripe cut.

// A block's share of one output tile, N outputs a thread: written straight to C when the block
// is the tile's only contributor, else added into the workspace, whose last contributor converts
// every sum in one L2 round trip (take_all). for_each(fn) calls fn(r, index into C and the
// workspace or -1 outside C, sum) for r = 0 .. N - 1; every thread of the block calls this.
template <int N, typename T, typename ForEach>
__device__ __forceinline__ void store_tile(T* C, float* ws, int* counter, int contributors,
                                           ForEach&& for_each) {
  if (contributors == 1) {
    for_each([&](int, int i, float v) {
      if (i >= 0) C[i] = from_float<T>(v);
    });
    return;
  }
  for_each([&](int, int i, float v) {
    if (i >= 0) add(ws, i, v);
  });
  if (!arrive_is_last(counter, contributors)) return;
  int idx[N];
  for_each([&](int r, int i, float) { idx[r] = i; });
  take_all(ws, idx, [&](int r, float sum) { C[idx[r]] = from_float<T>(sum); });
}

// Tagged slots (F-021), for contributors that are k-bands of one tile: each sum travels
// with its tag in one 64-bit word, which a load sees whole or not at all (single-copy atomic),
// so the sender needs no fence and no counter and the receiver no acquire. The buffer is zero
// before every call; the receiver clears what it took.
constexpr unsigned long long kTag = 1ull << 32;

// Stores v with its tag (no result, no ordering: the sender may leave at once).
__device__ __forceinline__ void put_tagged(unsigned long long* slot, float v) {
  const unsigned long long w = kTag | __float_as_uint(v);
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(slot), "l"(w) : "memory");
}

// The word in a slot, read at L2 (relaxed: never a stale L1 line, no ordering needed).
__device__ __forceinline__ unsigned long long peek_tagged(const unsigned long long* slot) {
  unsigned long long w;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(slot) : "memory");
  return w;
}

// Threads [0, Threads) of the block gather `words` tagged slots into dst[0, words) (shared
// memory), Loads slots per thread at a time, and clear them. Each round re-reads every slot of
// the thread still without its tag, all in flight together: a round costs one L2 round trip
// however many senders were late (one slot after another cost a round trip per late slot,
// even for slots whose sender had long finished: F-021).
template <int Threads, int Loads>
__device__ __forceinline__ void gather_tagged(unsigned long long* slots, int words, float* dst) {
#pragma unroll 1
  for (int j0 = int(threadIdx.x); j0 < words; j0 += Loads * Threads) {
    unsigned long long w[Loads];
#pragma unroll
    for (int k = 0; k < Loads; ++k)
      w[k] = j0 + k * Threads < words ? peek_tagged(slots + j0 + k * Threads) : kTag;
    for (;;) {
      bool all = true;
#pragma unroll
      for (int k = 0; k < Loads; ++k) all = all && (w[k] & kTag) != 0;
      if (all) break;
#pragma unroll
      for (int k = 0; k < Loads; ++k)
        if (!(w[k] & kTag)) w[k] = peek_tagged(slots + j0 + k * Threads);
    }
#pragma unroll
    for (int k = 0; k < Loads; ++k)
      if (const int j = j0 + k * Threads; j < words) {
        dst[j] = __uint_as_float(uint32_t(w[k]));
        slots[j] = 0ull;
      }
  }
}

}  // namespace kbit::dev::splitk
