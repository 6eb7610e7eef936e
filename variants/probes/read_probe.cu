// Read probes: kernels that only read a problem's bytes (the kbit weights in the tiled layout,
// the activations) and write a C of zeros. They compute no GEMM (registry family "probe": never
// checked), and they answer one question per shape: how close to the floor can *any* kernel
// that streams these bytes come, timed the same way (L2-cold copies, CUDA graph, median)? The
// floor divides by the 1 GiB copy bandwidth; a 31 MB layer also pays a launch, the first DRAM
// round trip and a tail, which no GEMV can avoid either.
//
// * read_ldg: every thread keeps kUnroll 16-byte loads in flight (ld.global.cs), grid-stride
//   over each buffer, XOR into a register, one XOR per block stored (so no load is dead, and
//   a test checks that every word was read).
// * read_bulk: one lane per block streams kChunk-byte chunks with cp.async.bulk into a
//   kStages-deep shared-memory ring (the path scalar_gemv's producer uses), chunks dealt
//   round-robin to the blocks; nothing reads the ring, so a stage is refilled as soon as its
//   copy has landed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reference/error.hpp"
#include "variants/common/barrier.cuh"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/launch.hpp"
#include "variants/common/pdl.cuh"
#include "variants/probes/probe.cuh"
#include "variants/probes/probes.hpp"

namespace kbit::variants {
namespace {

struct LdgConfig {
  static constexpr int kThreads = 512;
  static constexpr int kUnroll = 8;  // 16-byte loads in flight per thread: 64 KB per block
};

// read_bulk's defaults are its options' (probes.hpp: kReadBulkOptions), set per experiment:
//   chunk bytes per copy; stages copies in flight per block; blocks_per_sm (0: as many as fit);
//   striped 1: one contiguous stripe per block instead of round-robin chunks;
//   before_wait weight chunks a block copies before griddepcontrol.wait (-1: all of them;
//     scalar_gemv copies 4 units);
//   pad bytes of shared memory added per block (caps the blocks that fit per SM);
//   late_trigger: where a block lets the next dependent launch be scheduled: 0 at its start, 1
//     once it has issued its last weight copy;
//   grid > 0: that many streaming blocks instead of blocks_per_sm x SMs;
//   hold 1: blocks_per_sm x SMs blocks all the same, `grid` of them streaming, the others
//     holding their slots until those have finished;
//   a_each 1: every streaming block reads all of A itself after griddepcontrol.wait, with
//     kAReaders threads (a GEMV whose blocks own whole columns, full K, must), instead of A's
//     chunks being dealt out like the weights'.
struct BulkConfig {
  static constexpr int kThreads = 32;    // lane 0 streams; the warp writes its share of C
  static constexpr int kAReaders = 256;  // a_each: 8 more warps, as scalar_gemv's consumers
  static constexpr int kAUnroll = 8;     // a_each: 16-byte loads in flight per reader
  static constexpr int kMaxStages = 16;  // kReadBulkOptions' limit for `stages`
  static constexpr int kBarrierBytes = 8 * kMaxStages;
};

struct Span {
  const unsigned char* p;
  long long bytes;  // a multiple of 16
};

struct ProbeArgs {
  Span span[3];       // packed planes, absmax codes, activations
  int chunk, stages;  // read_bulk's ring
  int striped;        // read_bulk: 0 deals chunks round-robin, 1 gives each block one stripe
  int before_wait;    // read_bulk: weight chunks per block before griddepcontrol.wait (-1: all)
  int late_trigger;   // read_bulk: launch_dependents after the last weight copy, not at the start
  int work;           // read_bulk: blocks that stream; blocks past them hold their slots
  int a_each;         // read_bulk: 1 every streaming block reads all of A (span[2]) itself
  unsigned* done;     // read_bulk: streaming blocks finished, over every launch (holders wait)
  unsigned short* C;
  long long c_elems;  // 16-bit elements of C, all written with zero
  unsigned* sink;     // read_ldg: one XOR of all words read per block; read_bulk a_each: of A
};

__device__ __forceinline__ void write_zero_c(const ProbeArgs& a, long long tid, long long stride) {
  dev::zero_fill_u16(a.C, a.c_elems, tid, stride);
}

// XOR of the 16-byte elements first, first + stride, ... of p[0, n) (a thread's share of a
// buffer), kUnroll loads issued before any is folded: a probe's own reads must keep several loads
// in flight, or it times itself. kStreaming: ld.global.cs (evict first: weights read once).
// (read_slices keeps its own 32-bit, four-load loop: with this one's 64-bit indices its stage
// reader, which must keep up with the copies, read 0.5-2.4 us slower on the Llama3 layers;
// F-027.)
template <int kUnroll, bool kStreaming>
__device__ __forceinline__ uint32_t xor_strided(const uint4* p, long long n, long long first,
                                                long long stride) {
  uint32_t acc = 0;
  long long i = first;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      v[j] = kStreaming ? __ldcs(p + i + j * stride) : p[i + j * stride];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) acc ^= dev::xor4(v[j]);
  }
  for (; i < n; i += stride) acc ^= dev::xor4(kStreaming ? __ldcs(p + i) : p[i]);
  return acc;
}

// The XOR of every 32-bit word that threads [first, first + Threads) of the block read (Threads
// 0: the whole block, first 0), to out[blockIdx.x] (read_probe_checksum folds them): one store
// per block keeps every load live and lets a test prove each byte was read.
template <int Threads>
__device__ __forceinline__ void store_block_xor(uint32_t acc, unsigned* out, int first) {
  __shared__ uint32_t warp_xor[32];
  const int r = int(threadIdx.x) - first, warps = Threads ? Threads / 32 : int(blockDim.x >> 5);
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if ((r & 31) == 0) warp_xor[r >> 5] = acc;
  dev::sync_threads<Threads>();  // Threads > 0: named barrier 1, which no other thread joins
  if (r == 0) {
    for (int w = 1; w < warps; ++w) acc ^= warp_xor[w];
    out[blockIdx.x] = acc;
  }
}

__global__ void __launch_bounds__(LdgConfig::kThreads) read_ldg_kernel(ProbeArgs a) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  uint32_t acc = 0;
#pragma unroll 1
  for (int s = 0; s < 3; ++s)
    acc ^= xor_strided<LdgConfig::kUnroll, true>(reinterpret_cast<const uint4*>(a.span[s].p),
                                                 a.span[s].bytes / 16, tid, stride);
  write_zero_c(a, tid, stride);
  store_block_xor<0>(acc, a.sink, 0);
}

// A holder block (option hold) keeps its SM slot, so that the next dependent launch's
// blocks cannot take it, until this launch's streaming blocks have all finished. The count is
// read after griddepcontrol.wait: every block of the previous launch has counted by then.
__device__ void hold_slot(const ProbeArgs& a) {
  dev::pdl::wait();
  const volatile unsigned* done = a.done;
  const unsigned target = *done + unsigned(a.work);
  while (int(*done - target) < 0) __nanosleep(256);
}

// a_each: warps 1.. of a streaming block, once past griddepcontrol.wait, read all of A
// (kAUnroll 16-byte loads in flight per thread, as a GEMV's consumers staging A would) and store
// its XOR to sink[blockIdx.x], so no load is dead and a test can check that each block read all.
__device__ void read_all_a(const ProbeArgs& a) {
  constexpr int R = BulkConfig::kAReaders;
  const uint32_t acc = xor_strided<BulkConfig::kAUnroll, false>(
      reinterpret_cast<const uint4*>(a.span[2].p), a.span[2].bytes / 16, threadIdx.x - 32LL,
      (long long)R);
  store_block_xor<R>(acc, a.sink, 32);
}

__global__ void __launch_bounds__(BulkConfig::kThreads + BulkConfig::kAReaders)
    read_bulk_kernel(ProbeArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long threads = (long long)a.work * blockDim.x;  // the streaming blocks' threads
  // With GemmArgs::pdl the next launch may start at once (TRIGGER 1: after the weight copies).
  if (!a.late_trigger) dev::pdl::launch_dependents();
  if (int(blockIdx.x) >= a.work) {
    if (threadIdx.x == 0) hold_slot(a);
    return;
  }
  if (threadIdx.x != 0) {
    dev::pdl::wait();                      // A and C belong to the previous launch until then
    if (threadIdx.x >= 32) read_all_a(a);  // a_each
    write_zero_c(a, tid, threads);
    return;
  }
  const uint32_t bars = dev::smem_addr(smem), ring = bars + BulkConfig::kBarrierBytes;
  const uint32_t S = uint32_t(a.stages);
  for (uint32_t s = 0; s < S; ++s) dev::mbar_init(bars + 8 * s, 1);
  dev::fence_barrier_init();
  uint32_t q = 0;  // chunks issued by this block; chunk q uses stage q % S
  bool waited = false;
  for (int s = 0; s < 3; ++s) {
    if (s == 2) {  // every weight copy issued
      if (a.late_trigger) dev::pdl::launch_dependents();
      if (!waited) dev::pdl::wait(), waited = true;  // A and C: the previous launch's output
      if (a.a_each) break;                           // warps 1.. read A
    }
    const long long chunks = (a.span[s].bytes + a.chunk - 1) / a.chunk;
    const long long per = (chunks + a.work - 1) / a.work;  // striped: chunks per block
    const long long c0 = a.striped ? blockIdx.x * per : blockIdx.x;
    const long long c1 = a.striped ? (c0 + per < chunks ? c0 + per : chunks) : chunks;
    const long long step = a.striped ? 1 : a.work;
    for (long long c = c0; c < c1; c += step, ++q) {
      if (!waited && a.before_wait >= 0 && q == uint32_t(a.before_wait))
        dev::pdl::wait(), waited = true;  // the rest of the weights behind the previous launch
      const uint32_t st = q % S, bar = bars + 8 * st;
      if (q >= S) dev::mbar_wait(bar, (q / S - 1) & 1u);  // the stage's last copy has landed
      const long long left = a.span[s].bytes - c * a.chunk;
      const uint32_t bytes = uint32_t(left < a.chunk ? left : a.chunk);
      dev::mbar_arrive_expect_tx(bar, bytes);
      dev::bulk_copy_g2s(ring + st * a.chunk, a.span[s].p + c * a.chunk, bytes, bar);
    }
  }
  for (uint32_t r = q > S ? q - S : 0; r < q; ++r)  // drain the ring
    dev::mbar_wait(bars + 8 * (r % S), (r / S) & 1u);
  write_zero_c(a, tid, threads);
  if (a.work < int(gridDim.x)) atomicAdd(a.done, 1u);  // for the holders (option hold)
}

struct ProbeState : VariantState {
  DeviceBuffer<unsigned> sink;  // one word per block
  int grid = 0, smem = 0, threads = 0, chunk = 0, stages = 0, striped = 0, before_wait = -1;
  int late_trigger = 0, work = 0;  // work: the streaming blocks (grid unless hold)
  int a_each = 0;                  // read_bulk: every streaming block reads all of A
  DeviceBuffer<unsigned> done;     // read_bulk: finished streaming blocks (ProbeArgs::done)
  void (*kernel)(ProbeArgs) = nullptr;
  std::string what;
  std::string describe() const override { return what; }
};

// read_bulk's options (their ranges were checked by the harness; here what a range cannot say).
void bulk_options(const VariantOptions& o, ProbeState& s, int& blocks_per_sm, int& pad, int& grid,
                  int& hold) {
  auto get = [&](int i) { return int(o.get(kReadBulkOptions[i])); };
  s.chunk = get(0), s.stages = get(1), blocks_per_sm = get(2), s.striped = get(3);
  s.before_wait = get(4), pad = get(5), s.late_trigger = get(6), grid = get(7), hold = get(8);
  s.a_each = get(9);
  if (s.chunk < 16 || s.chunk % 16 != 0 || s.chunk > (1 << 20))
    throw Error("read_bulk: option chunk = " + std::to_string(s.chunk) +
                " is not a multiple of 16 in [16, 1 MiB]");
  if (s.stages < 1 || s.stages > BulkConfig::kMaxStages)
    throw Error("read_bulk: option stages = " + std::to_string(s.stages) + " is outside 1.." +
                std::to_string(BulkConfig::kMaxStages));
  if (hold != 0 && grid == 0)
    throw Error("read_bulk: option hold = 1 needs a grid > 0 (the streaming blocks)");
}

long long span_bytes(long long bytes, const char* what) {
  if (bytes % 16 != 0)
    throw Error(std::string("read probe: ") + what + " is " + std::to_string(bytes) +
                " bytes, not a multiple of 16");
  return bytes;
}

std::unique_ptr<VariantState> probe_setup(const GemmDims& d, const VariantOptions& o, bool bulk) {
  const char* name = bulk ? "read_bulk" : "read_ldg";
  if (d.grouped()) throw Error(std::string(name) + ": dense problems only");
  if (d.dtype == DType::f32) throw Error(std::string(name) + ": dtype fp32 is not supported");
  if (bulk) require_compute_capability(9, name, "cp.async.bulk");
  auto s = std::make_unique<ProbeState>();
  s->kernel = bulk ? read_bulk_kernel : read_ldg_kernel;
  s->threads = bulk ? BulkConfig::kThreads : LdgConfig::kThreads;
  int blocks_per_sm = 0;  // 0: as many as fit
  int grid = 0;           // > 0: the grid (option grid)
  int hold = 0;           // 1: `grid` streaming blocks, the rest of the slots held
  if (bulk) {
    int pad = 0;
    bulk_options(o, *s, blocks_per_sm, pad, grid, hold);
    s->smem = BulkConfig::kBarrierBytes + s->stages * s->chunk + pad;
    if (s->a_each) s->threads += BulkConfig::kAReaders;
    KBIT_CUDA_CHECK(cudaFuncSetAttribute(read_bulk_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, s->smem));
  }
  int dev = 0, sms = 0, per_sm = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  KBIT_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, s->kernel, s->threads, s->smem));
  if (per_sm < 1) throw Error(std::string(name) + ": kernel does not fit on an SM");
  if (blocks_per_sm > per_sm)
    throw Error(std::string(name) + ": " + std::to_string(blocks_per_sm) +
                " blocks per SM asked, at most " + std::to_string(per_sm) + " fit");
  if (blocks_per_sm > 0) per_sm = blocks_per_sm;
  if (grid > sms * per_sm)
    throw Error(std::string(name) + ": option grid = " + std::to_string(grid) +
                " blocks, at most " + std::to_string(sms * per_sm) + " fit at once");
  s->grid = grid > 0 && !hold ? grid : sms * per_sm;
  s->work = grid > 0 ? grid : s->grid;
  s->done = DeviceBuffer<unsigned>(1);
  KBIT_CUDA_CHECK(cudaMemset(s->done.get(), 0, s->done.bytes()));
  s->sink = DeviceBuffer<unsigned>(std::size_t(s->grid));
  KBIT_CUDA_CHECK(cudaMemset(s->sink.get(), 0, s->sink.bytes()));
  s->what =
      bulk ? std::to_string(s->chunk) + " B chunks x " + std::to_string(s->stages) + " stages x " +
                 (grid > 0 ? std::to_string(grid) + " blocks" +
                                 (hold ? " (the other slots held)" : std::string())
                           : std::to_string(per_sm) + " blocks/SM") +
                 " by cp.async.bulk" + (s->striped ? ", one stripe per block" : ", round-robin") +
                 (s->before_wait >= 0
                      ? ", " + std::to_string(s->before_wait) + " chunks before the wait"
                      : std::string()) +
                 ", " + std::to_string(s->smem) + " B smem" +
                 (s->late_trigger ? ", dependents after the last weight copy" : "") +
                 (s->a_each ? ", every block reads all of A" : "")
           : std::to_string(LdgConfig::kUnroll) + " x 16 B loads in flight per thread, " +
                 std::to_string(per_sm) + " x " + std::to_string(LdgConfig::kThreads) +
                 " threads/SM";
  return s;
}

void probe_run(VariantState* state, const GemmDims& d, const GemmArgs& a, cudaStream_t stream) {
  auto* s = static_cast<ProbeState*>(state);
  ProbeArgs p{};
  p.span[0] = {reinterpret_cast<const unsigned char*>(a.w.packed),
               span_bytes(a.w.geo.packed_words() * 4, "the packed planes")};
  p.span[1] = {a.w.absmax, span_bytes(a.w.geo.absmax_bytes(), "the absmax codes")};
  p.span[2] = {static_cast<const unsigned char*>(a.A),
               span_bytes(d.M * d.K_dim * (long long)dtype_size(d.dtype), "A")};
  p.C = static_cast<unsigned short*>(a.C);
  p.c_elems = d.M * d.N;
  p.sink = s->sink.get();
  p.chunk = s->chunk, p.stages = s->stages, p.striped = s->striped;
  p.before_wait = s->before_wait;
  p.late_trigger = s->late_trigger;
  p.work = s->work;
  p.a_each = s->a_each;
  p.done = s->done.get();
  void* params[] = {&p};
  launch_kernel(reinterpret_cast<const void*>(s->kernel), dim3(s->grid), dim3(s->threads), s->smem,
                stream, params, a.pdl && s->kernel == read_bulk_kernel);
}

}  // namespace

std::unique_ptr<VariantState> read_ldg_setup(const GemmDims& d, const VariantOptions& o) {
  return probe_setup(d, o, false);
}
std::unique_ptr<VariantState> read_bulk_setup(const GemmDims& d, const VariantOptions& o) {
  return probe_setup(d, o, true);
}
void read_probe_run(VariantState* s, const GemmDims& d, const GemmArgs& a, cudaStream_t stream) {
  probe_run(s, d, a, stream);
}
std::uint32_t read_probe_checksum(VariantState* state) {
  std::uint32_t x = 0;
  for (unsigned v : static_cast<ProbeState*>(state)->sink.download()) x ^= v;
  return x;
}
std::vector<std::uint32_t> read_bulk_a_words(VariantState* state) {
  const auto* s = static_cast<ProbeState*>(state);
  std::vector<unsigned> words = s->sink.download();
  words.resize(std::size_t(s->work));  // the holders (option hold) read nothing
  return {words.begin(), words.end()};
}

}  // namespace kbit::variants
