// A diagnostic for warp-specialized streaming kernels: where does a block's time go? The
// producer's waits for a free stage (the consumers are the limit), the consumers' waits for a
// landed stage (the stream is the limit), their other barriers, and the spread of block start
// and end times over the grid (launch ramp, tail). Compiled in only under a kernel's knob
// (scalar_gemv: KBIT_GEMV_WAIT_STATS); the host launches print_and_reset after each launch
// (after every 64th under PDL).
#pragma once
#include <cstdio>

#include "variants/common/clock.cuh"

namespace kbit::dev::wait_stats {

enum Slot {
  kProducerEmpty,   // producer cycles in empty-barrier waits (per block)
  kConsumerFull,    // consumer cycles in full-barrier waits (lane 0 of each warp)
  kConsumerWindow,  // consumer cycles staging A (barriers + loads, lane 0 of each warp)
  kConsumerWarps,   // warps that reported
  kBlockCycles,     // block run time, SM clock (consumer thread 0)
  kBlockNs,         // block run time, globaltimer
  // Milestones, ns after the block's start (consumer thread 0, once per block; mark()):
  kTableBuilt,   // its share of the table written
  kFirstLanded,  // the block's first unit landed and read
  kFirstWindow,  // the first A window staged
  kComputed,     // the last unit computed (before the split-K end)
  kSlots
};

constexpr int kMaxBlocks = 2048;  // blocks whose SM and end time are kept (the rest only summed)
constexpr int kMaxSms = 256;

struct Stats {
  unsigned long long sum[kSlots];
  unsigned long long start_ns[kMaxBlocks], end_ns[kMaxBlocks];
  unsigned long long computed_ns[kMaxBlocks];  // when the block's last unit was computed
  unsigned sm[kMaxBlocks];
  unsigned long long start_min, start_max, end_min, end_max;  // globaltimer, ns
  unsigned int done, launch;
};
static __device__ Stats g_stats = {{}, {}, {}, {}, {}, ~0ull, 0, ~0ull, 0, 0, 0};

// Accumulates the cycles between start() and stop(); a no-op unless On. 32-bit (fewer
// registers: the diagnostic should perturb the kernel as little as it can).
template <bool On>
struct Stopwatch {
  unsigned total = 0, t0 = 0;
  __device__ __forceinline__ void start() {
    if constexpr (On) t0 = unsigned(clock());
  }
  __device__ __forceinline__ void stop() {
    if constexpr (On) total += unsigned(clock()) - t0;
  }
};

__device__ __forceinline__ void add(Slot s, unsigned long long v) {
  atomicAdd(&g_stats.sum[s], v);
}

// Consumer thread 0, once per block: a milestone at ns after the block's start.
__device__ __forceinline__ void mark(Slot s, unsigned long long start_ns) {
  if (threadIdx.x == 0) add(s, global_ns() - start_ns);
}

// Consumer thread 0, before each segment's end (the last call stays): when the block's own work
// was done, for print_groups.
__device__ __forceinline__ void mark_computed() {
  if (threadIdx.x == 0 && blockIdx.x < kMaxBlocks) g_stats.computed_ns[blockIdx.x] = global_ns();
}

// Consumer thread 0, once every consumer of the block is done: the block's times.
__device__ inline void finish_block(unsigned long long start_ns, long long start_clk) {
  const unsigned long long end_ns = global_ns();
  add(kBlockCycles, (unsigned long long)(clock64() - start_clk));
  add(kBlockNs, end_ns - start_ns);
  if (blockIdx.x < kMaxBlocks) {
    g_stats.start_ns[blockIdx.x] = start_ns;
    g_stats.end_ns[blockIdx.x] = end_ns;
    g_stats.sm[blockIdx.x] = sm_id();
  }
  atomicAdd(&g_stats.done, 1u);
  atomicMin(&g_stats.start_min, start_ns);
  atomicMax(&g_stats.start_max, start_ns);
  atomicMin(&g_stats.end_min, end_ns);
  atomicMax(&g_stats.end_max, end_ns);
}

// Consumer thread 0 of a block whose consumer warps have each added their full-wait and window
// cycles into waits[0] / waits[1] (after a barrier over the consumers): the block's totals.
__device__ inline void finish_consumers(const unsigned long long (&waits)[2], int warps,
                                        unsigned long long start_ns, long long start_clk) {
  if (threadIdx.x != 0) return;
  add(kConsumerFull, waits[0]);
  add(kConsumerWindow, waits[1]);
  add(kConsumerWarps, (unsigned long long)warps);
  finish_block(start_ns, start_clk);
}

// The tail: the end times (after the first block's start) of the blocks alone on their SM,
// and of the first and the last block to end on SMs that ran several.
__device__ inline void print_tail(const Stats& s) {
  int count[kMaxSms] = {};
  unsigned long long first[kMaxSms], last[kMaxSms];
  const int n = min(int(s.done), kMaxBlocks);
  for (int b = 0; b < n; ++b) {
    const unsigned sm = s.sm[b] % kMaxSms;
    const unsigned long long e = s.end_ns[b] - s.start_min;
    first[sm] = count[sm] ? min(first[sm], e) : e;
    last[sm] = count[sm] ? max(last[sm], e) : e;
    ++count[sm];
  }
  double alone = 0, early = 0, late = 0;
  int n_alone = 0, n_shared = 0;
  for (int i = 0; i < kMaxSms; ++i) {
    if (count[i] == 1) alone += first[i], ++n_alone;
    if (count[i] > 1) early += first[i], late += last[i], ++n_shared;
  }
  printf(
      "wait_stats tail: %d SMs with one block end at %.2f us; %d with more: first at %.2f, "
      "last at %.2f us (means)\n",
      n_alone, n_alone ? alone * 1e-3 / n_alone : 0.0, n_shared,
      n_shared ? early * 1e-3 / n_shared : 0.0, n_shared ? late * 1e-3 / n_shared : 0.0);
  printf("wait_stats latest SMs:");  // the 8 SMs whose last block ended last (consistent?)
  for (int k = 0; k < 8; ++k) {
    int best = -1;
    for (int i = 0; i < kMaxSms; ++i)
      if (count[i] > 0 && (best < 0 || last[i] > last[best])) best = i;
    if (best < 0) break;
    printf(" %d (%.1f)", best, last[best] * 1e-3);
    count[best] = 0;
  }
  printf("\n");
}

// The mean block's milestones, and when it starts after the grid's first block (only when the
// sums are one grid's: `one_grid`).
__device__ inline void print_milestones(const Stats& s, bool one_grid) {
  const int n = min(int(s.done), kMaxBlocks);
  double start = 0;
  for (int b = 0; b < n; ++b) start += double(s.start_ns[b] - s.start_min);
  const double blocks = s.done;
  printf("wait_stats milestones (mean block, us after its start): ");
  if (one_grid && n) printf("starts %.2f after the grid; ", start * 1e-3 / n);
  printf("table %.2f, first unit %.2f, first A window %.2f, last unit computed %.2f, end %.2f\n",
         s.sum[kTableBuilt] * 1e-3 / blocks, s.sum[kFirstLanded] * 1e-3 / blocks,
         s.sum[kFirstWindow] * 1e-3 / blocks, s.sum[kComputed] * 1e-3 / blocks,
         s.sum[kBlockNs] * 1e-3 / blocks);
}

// Split tiles ended by groups of `c` consecutive blocks, the first (the root) adding the others'
// sums (a cluster or tagged slots): how long the root waits, after its own last unit, for the
// last of the others to leave, and how long its end takes after that (the hand-over); and when
// each position's last unit is computed, after position 0's (the dispatch order).
// Under PDL (64 launches summed) the per-block times are the last launch's.
__device__ inline void print_groups(const Stats& s, int c, int grid) {
  constexpr int kMaxGroup = 8;
  const int n = min(grid, kMaxBlocks) / c * c;
  if (c < 2 || c > kMaxGroup || n == 0) return;
  double wait = 0, hand = 0, spread = 0, at[kMaxGroup] = {};
  for (int g = 0; g < n; g += c) {
    unsigned long long last = 0, first = ~0ull;
    for (int b = g; b < g + c; ++b) {
      at[b - g] += double(s.computed_ns[b]) - double(s.computed_ns[g]);
      if (b != g) last = max(last, s.end_ns[b]), first = min(first, s.end_ns[b]);
    }
    const unsigned long long ready = max(last, s.computed_ns[g]);
    wait += double(ready - s.computed_ns[g]);
    hand += double(s.end_ns[g]) - double(ready);
    spread += double(last - first);
  }
  const double us = 1e-3 * c / n;  // per group, in us
  printf(
      "wait_stats groups of %d (%d): the root waits %.2f us for the others' last end, "
      "then ends in %.2f us; the others end over %.2f us; last unit computed by position, "
      "after position 0:",
      c, n / c, wait * us, hand * us, spread * us);
  for (int r = 1; r < c; ++r) printf(" %.2f", at[r] * us);
  printf(" us (means)\n");
}

// The per-block and per-warp means of the sums.
__device__ inline void print_means(const Stats& s) {
  const double blocks = s.done, warps = double(s.sum[kConsumerWarps]);
  const double ghz = double(s.sum[kBlockCycles]) / double(s.sum[kBlockNs]);
  printf(
      "wait_stats means over %u blocks: block %.2f us at %.2f GHz; per block: producer "
      "empty-wait %.2f us; per warp: full-wait %.2f us, A windows %.2f us\n",
      s.done, s.sum[kBlockNs] * 1e-3 / blocks, ghz, s.sum[kProducerEmpty] / blocks / ghz * 1e-3,
      s.sum[kConsumerFull] / warps / ghz * 1e-3, s.sum[kConsumerWindow] / warps / ghz * 1e-3);
}

// Launched <<<1, 1>>> after a launch of the kernel under study (a printf in that kernel would
// change its register allocation); resets the sums. Plain launches (a call after every launch):
// one grid's span and means every 128th call, its tail, milestones and split-tile groups (of
// `group` blocks, where > 1) on the next three calls.
// `chained` (PDL, where a kernel between two launches would break the chain, so the host calls
// this after every 64th launch only): the means and milestones over those 64 launches, every
// second call; spans and tails across launches mean nothing and are left out.
__global__ void print_and_reset(bool chained = false, int group = 1, int grid = 0) {
  Stats& s = g_stats;
  const unsigned call = s.launch++;
  if (s.done > 0 && chained && call % 2 == 1) {  // (no consumer reports under DIAG 5)
    print_means(s);
    print_milestones(s, false);
    print_groups(s, group, grid);
  }
  if (s.done > 0 && !chained) {
    if (call % 128 == 64) {
      printf("wait_stats grid %u: span %.2f us (starts over %.2f, ends over %.2f)\n", s.done,
             (s.end_max - s.start_min) * 1e-3, (s.start_max - s.start_min) * 1e-3,
             (s.end_max - s.end_min) * 1e-3);
      print_means(s);
    }
    if (call % 128 == 65) print_tail(s);
    if (call % 128 == 66) print_milestones(s, true);
    if (call % 128 == 67) print_groups(s, group, grid);
  }
  for (int i = 0; i < kSlots; ++i) s.sum[i] = 0;
  s.start_min = s.end_min = ~0ull;
  s.start_max = s.end_max = 0;
  s.done = 0;
}

}  // namespace kbit::dev::wait_stats
