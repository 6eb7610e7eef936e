// Variant 04's split-tile ends, run by the producer warp (session 23, KBIT_GEMV_END_WARP):
// included by variants/04_scalar_gemv.cu only (hence the anonymous namespace).
//
// Why: compiled into the consumers' path, any of the three ends (cluster, tagged L2 slots,
// workspace) cost Llama3-8B gate/up ~0.2 us at M = 1 without running (docs/notes.md, sessions
// 22-23: the unit loop's schedule); compiled into the producer's path, never run, 0.04 us. So
// the consumers of a split segment only reduce their sums into shared memory (EndHandoff) and
// leave, and the producer warp, idle once it has issued its last copy, runs the cluster or
// workspace end (plans with tagged slots keep the consumers' ends: run_end_warp). The sums are
// added in the same order as before (this block's, then ranks 1.. in order): the same bits.
//
// The end warp's lane owns outputs j = lane + 32 i of the segment's [MV x 128] (row j / 128,
// column j % 128), i < MV * 4.
#pragma once
#include <cstdint>

#include "variants/common/bulk_copy.cuh"
#include "variants/common/cluster.cuh"
#include "variants/common/cp_async.cuh"
#include "variants/common/dtype.cuh"
#include "variants/common/pdl.cuh"
#include "variants/common/splitk.cuh"
#include "variants/scalar_gemv_stream.cuh"

namespace kbit::variants {
namespace {

// The segment's sums in shared memory ([row][128] fp32; `full`: the 256 consumers have stored
// them, one phase per split segment; `empty`: the end warp has read them, one arrival).
struct EndHandoff {
  float* sums;
  uint32_t full, empty;
};

// The outputs of one end-warp lane.
template <int MV>
struct EndLane {
  static constexpr int kPer = MV * Config::kTileN / 32;
  int lane;
  __device__ EndLane() : lane(int(threadIdx.x) & 31) {}
  __device__ int j(int i) const { return lane + 32 * i; }
  __device__ static int row(int j) { return j / Config::kTileN; }
  __device__ static int col(int j) { return j % Config::kTileN; }
  // C's (and the workspace's) index of output j, or -1 past N.
  __device__ long long index(const KernelArgs& a, const Segment& g, int j) const {
    const int c = g.nt * Config::kTileN + col(j);
    return c < a.N ? (long long)(g.row0 + row(j)) * a.N + c : -1;
  }
  // Waits for use `use` of the hand-off, copies this lane's sums and frees it.
  __device__ void take(const EndHandoff& h, uint32_t use, float (&v)[kPer]) const {
    dev::mbar_wait(h.full, use & 1u);
#pragma unroll
    for (int i = 0; i < kPer; ++i) v[i] = h.sums[j(i)];
    __syncwarp();
    if (lane == 0) dev::mbar_arrive(h.empty);
  }
};

// A tile whose contributors are one cluster: ranks 1.. push their sums into rank 0's receive
// area with st.async (complete_tx on rank 0's receive barrier, which start_block armed) and
// leave; rank 0 adds them in rank order and writes C. (combine_in_cluster, by one warp.)
template <int MV, typename T>
__device__ void cluster_end_by_warp(const KernelArgs& a, const Segment& g, const EndHandoff& h,
                                    uint32_t use, float* recv, uint32_t recv_bar) {
  const EndLane<MV> e;
  float v[EndLane<MV>::kPer];
  e.take(h, use, v);
  constexpr int kOut = MV * Config::kTileN;
  const int rank = int(dev::cluster::rank());
  if (rank != 0) {
    dev::cluster::wait();  // (phase 0) rank 0 has started: its receive barrier is armed
    const uint32_t dst = dev::cluster::map(dev::smem_addr(recv), 0);
    const uint32_t bar = dev::cluster::map(recv_bar, 0);
#pragma unroll
    for (int i = 0; i < EndLane<MV>::kPer; ++i)
      dev::cluster::store_async(dst + 4 * ((rank - 1) * kOut + e.j(i)), v[i], bar);
    return;
  }
  dev::mbar_wait(recv_bar, 0);
  T* C = static_cast<T*>(a.C);
#pragma unroll
  for (int i = 0; i < EndLane<MV>::kPer; ++i) {
    const long long idx = e.index(a, g, e.j(i));
    float x = v[i];
    for (int r = 1; r < a.cluster; ++r) x += recv[(r - 1) * kOut + e.j(i)];
    if (idx >= 0) C[idx] = dev::from_float<T>(x);
  }
}

// Any other split tile: add the sums into the self-cleaning fp32 workspace; the last of the
// tile's contributors (a counter) reloads the totals, writes C and zeroes them. (store_segment
// and finish_split, by one warp; the first segment of a stripe is finished at once, since the
// end warp does not hold up the stream.)
template <int MV, typename T>
__device__ void workspace_end_by_warp(const KernelArgs& a, const Segment& g, const EndHandoff& h,
                                      uint32_t use) {
  constexpr int kPer = EndLane<MV>::kPer;
  const EndLane<MV> e;
  float v[kPer];
  e.take(h, use, v);
  long long idx[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    idx[i] = e.index(a, g, e.j(i));
    if (idx[i] >= 0) dev::splitk::add(a.ws, idx[i], v[i]);
  }
  if (!dev::splitk::warp_arrive_is_last(a.counters + g.tile_id, g.contributors)) return;
  dev::splitk::take_all(
      a.ws, idx, [&](int i, float x) { static_cast<T*>(a.C)[idx[i]] = dev::from_float<T>(x); });
}

// The producer warp after its last copy: the ends of the block's split segments, in order. The
// host never gives a kernel with the end warp a plan with tagged slots: those run the kernel whose
// consumers run the ends (kernel_for: `tagged`), since the tagged gather by one warp needs more
// registers than the kernel has (28-32 words in flight per lane).
template <int MV, typename T>
__device__ void run_end_warp(const KernelArgs& a, const EndHandoff& h, float* recv,
                             uint32_t recv_bar) {
  if (a.tagged > 1) __trap();  // a host bug: no slot would ever be gathered
  dev::pdl::wait();            // C, the workspace and its counters: the previous launch's
  uint32_t use = 0;
  for (int s = a.first_seg[blockIdx.x]; s < a.first_seg[blockIdx.x + 1]; ++s) {
    const Segment g = a.segs[s];
    if (g.contributors <= 1) continue;  // (only a stripe's first and last can be split)
    if (a.cluster > 1)
      cluster_end_by_warp<MV, T>(a, g, h, use, recv, recv_bar);
    else
      workspace_end_by_warp<MV, T>(a, g, h, use);
    ++use;
  }
}

}  // namespace
}  // namespace kbit::variants
