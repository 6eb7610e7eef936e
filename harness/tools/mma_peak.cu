// The mma.sync ceiling of this GPU: the fp16 and bf16 m16n8k16 rate (fp32 accumulation) when
// nothing but MMAs run, every warp with 8 independent accumulators and 4 blocks of 256 threads
// per SM. Variant 02 multiplies with these instructions; its README reports its M >= 128 rows
// as a fraction of this rate (the wgmma rate cuBLAS reaches is higher). A standalone tool:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a harness/tools/mma_peak.cu \
//        -o /tmp/mma_peak && /tmp/mma_peak
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

template <bool kBf16>
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (kBf16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// iters x 8 MMAs per warp; operands from the thread index (random-ish, never all zero), the
// sums stored so that nothing is dead.
template <bool kBf16>
__global__ void __launch_bounds__(256) mma_loop(int iters, float* out) {
  const unsigned x = threadIdx.x * 2654435761u + blockIdx.x;
  const unsigned a[4] = {x | 0x3c003c00u, x ^ 0x3a003800u, x + 0x34003400u, x * 3u | 0x38003800u};
  const unsigned b[2] = {x ^ 0x3c003c00u, (x * 7u) | 0x34003400u};
  float c[8][4] = {};
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) mma<kBf16>(c[j], a, b);
  float s = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <bool kBf16>
double tflops(int sms) {
  const int blocks = sms * 4, threads = 256, iters = 4096;
  float* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  mma_loop<kBf16><<<blocks, threads>>>(16, out);  // warm-up
  CHECK(cudaGetLastError());
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    CHECK(cudaEventRecord(e0));
    mma_loop<kBf16><<<blocks, threads>>>(iters, out);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    const double flops = 2.0 * 16 * 8 * 16 * 8.0 * iters * (threads / 32) * double(blocks);
    best = flops / (ms * 1e-3) / 1e12 > best ? flops / (ms * 1e-3) / 1e12 : best;
  }
  CHECK(cudaFree(out));
  return best;
}

int main() {
  int dev = 0, sms = 0;
  cudaDeviceProp p{};
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&p, dev));
  sms = p.multiProcessorCount;
  std::printf("%s, %d SMs: mma.sync.m16n8k16 fp16 %.0f TFLOP/s, bf16 %.0f TFLOP/s (best of 5)\n",
              p.name, sms, tflops<false>(sms), tflops<true>(sms));
  return 0;
}
