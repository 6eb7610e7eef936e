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
#include <string>

#include "reference/error.hpp"
#include "variants/baselines.hpp"
#include "variants/common/bulk_copy.cuh"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"

namespace kbit::variants {
namespace {

#ifndef KBIT_PROBE_BULK_CHUNK  // bytes per cp.async.bulk (a multiple of 16)
#define KBIT_PROBE_BULK_CHUNK 16384
#endif
#ifndef KBIT_PROBE_BULK_STAGES  // chunks in flight per block
#define KBIT_PROBE_BULK_STAGES 4
#endif

struct LdgConfig {
  static constexpr int kThreads = 512;
  static constexpr int kUnroll = 8;  // 16-byte loads in flight per thread: 64 KB per block
};

struct BulkConfig {
  static constexpr int kThreads = 32;  // lane 0 streams; the warp writes its share of C
  static constexpr int kChunk = KBIT_PROBE_BULK_CHUNK;
  static constexpr int kStages = KBIT_PROBE_BULK_STAGES;
  static constexpr int kBarrierBytes = 128;
  static constexpr int kSmem = kBarrierBytes + kStages * kChunk;
  static_assert(kChunk % 16 == 0, "cp.async.bulk moves multiples of 16 bytes");
  static_assert(kStages * 8 <= kBarrierBytes, "mbarriers must fit their slot");
};

struct Span {
  const unsigned char* p;
  long long bytes;  // a multiple of 16
};

struct ProbeArgs {
  Span span[3];  // packed planes, absmax codes, activations
  unsigned short* C;
  long long c_elems;  // 16-bit elements of C, all written with zero
  unsigned* sink;     // read_ldg: one XOR of all words read per block
};

__device__ __forceinline__ void write_zero_c(const ProbeArgs& a, long long tid, long long stride) {
  for (long long i = tid; i < a.c_elems; i += stride) a.C[i] = 0;
}

__device__ __forceinline__ uint32_t xor4(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

// The XOR of every 32-bit word the block read, to a[blockIdx.x] (read_probe_checksum folds
// them): one store per block keeps every load live and lets a test prove each byte was read.
__device__ __forceinline__ void store_block_xor(uint32_t acc, unsigned* out) {
  __shared__ uint32_t warp_xor[32];
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) warp_xor[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < int(blockDim.x >> 5); ++w) acc ^= warp_xor[w];
    out[blockIdx.x] = acc;
  }
}

__global__ void __launch_bounds__(LdgConfig::kThreads) read_ldg_kernel(ProbeArgs a) {
  constexpr int U = LdgConfig::kUnroll;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  uint32_t acc = 0;
#pragma unroll 1
  for (int s = 0; s < 3; ++s) {
    const uint4* p = reinterpret_cast<const uint4*>(a.span[s].p);
    const long long n = a.span[s].bytes / 16;
    long long i = tid;
    for (; i + (U - 1) * stride < n; i += U * stride) {
      uint4 v[U];
#pragma unroll
      for (int j = 0; j < U; ++j) v[j] = __ldcs(p + i + j * stride);  // all U issued first
#pragma unroll
      for (int j = 0; j < U; ++j) acc ^= xor4(v[j]);
    }
    for (; i < n; i += stride) acc ^= xor4(__ldcs(p + i));
  }
  write_zero_c(a, tid, stride);
  store_block_xor(acc, a.sink);
}

__global__ void __launch_bounds__(BulkConfig::kThreads) read_bulk_kernel(ProbeArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  using C = BulkConfig;
  write_zero_c(a, (long long)blockIdx.x * blockDim.x + threadIdx.x,
               (long long)gridDim.x * blockDim.x);
  if (threadIdx.x != 0) return;
  const uint32_t bars = dev::smem_addr(smem), ring = bars + C::kBarrierBytes;
  for (int s = 0; s < C::kStages; ++s) dev::mbar_init(bars + 8 * s, 1);
  dev::fence_barrier_init();
  uint32_t q = 0;  // chunks issued by this block; chunk q uses stage q % kStages
  for (int s = 0; s < 3; ++s) {
    const long long chunks = (a.span[s].bytes + C::kChunk - 1) / C::kChunk;
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x, ++q) {
      const uint32_t st = q % C::kStages, bar = bars + 8 * st;
      if (q >= C::kStages) dev::mbar_wait(bar, (q / C::kStages - 1) & 1u);  // stage has landed
      const long long left = a.span[s].bytes - c * C::kChunk;
      const uint32_t bytes = uint32_t(left < C::kChunk ? left : C::kChunk);
      dev::mbar_arrive_expect_tx(bar, bytes);
      dev::bulk_copy_g2s(ring + st * C::kChunk, a.span[s].p + c * C::kChunk, bytes, bar);
    }
  }
  for (uint32_t r = q > C::kStages ? q - C::kStages : 0; r < q; ++r)  // drain the ring
    dev::mbar_wait(bars + 8 * (r % C::kStages), (r / C::kStages) & 1u);
}

struct ProbeState : VariantState {
  DeviceBuffer<unsigned> sink;  // one word per block
  int grid = 0, smem = 0, threads = 0;
  void (*kernel)(ProbeArgs) = nullptr;
  std::string what;
  std::string describe() const override { return what; }
};

long long span_bytes(long long bytes, const char* what) {
  if (bytes % 16 != 0)
    throw Error(std::string("read probe: ") + what + " is " + std::to_string(bytes) +
                " bytes, not a multiple of 16");
  return bytes;
}

std::unique_ptr<VariantState> probe_setup(const GemmDims& d, bool bulk) {
  const char* name = bulk ? "read_bulk" : "read_ldg";
  if (d.grouped()) throw Error(std::string(name) + ": dense problems only");
  if (d.dtype == DType::f32) throw Error(std::string(name) + ": dtype fp32 is not supported");
  auto s = std::make_unique<ProbeState>();
  s->kernel = bulk ? read_bulk_kernel : read_ldg_kernel;
  s->threads = bulk ? BulkConfig::kThreads : LdgConfig::kThreads;
  s->smem = bulk ? BulkConfig::kSmem : 0;
  if (bulk)
    KBIT_CUDA_CHECK(cudaFuncSetAttribute(read_bulk_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, s->smem));
  int dev = 0, sms = 0, per_sm = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  KBIT_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, s->kernel, s->threads, s->smem));
  if (per_sm < 1) throw Error(std::string(name) + ": kernel does not fit on an SM");
  s->grid = sms * per_sm;
  s->sink = DeviceBuffer<unsigned>(std::size_t(s->grid));
  KBIT_CUDA_CHECK(cudaMemset(s->sink.get(), 0, s->sink.bytes()));
  s->what = bulk ? std::to_string(BulkConfig::kChunk / 1024) + " KB chunks x " +
                       std::to_string(BulkConfig::kStages) + " stages x " + std::to_string(per_sm) +
                       " blocks/SM by cp.async.bulk"
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
  s->kernel<<<s->grid, s->threads, s->smem, stream>>>(p);
  KBIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

std::unique_ptr<VariantState> read_ldg_setup(const GemmDims& d, const VariantOptions&) {
  return probe_setup(d, false);
}
std::unique_ptr<VariantState> read_bulk_setup(const GemmDims& d, const VariantOptions&) {
  return probe_setup(d, true);
}
void read_probe_run(VariantState* s, const GemmDims& d, const GemmArgs& a, cudaStream_t stream) {
  probe_run(s, d, a, stream);
}
std::uint32_t read_probe_checksum(VariantState* state) {
  std::uint32_t x = 0;
  for (unsigned v : static_cast<ProbeState*>(state)->sink.download()) x ^= v;
  return x;
}

}  // namespace kbit::variants
