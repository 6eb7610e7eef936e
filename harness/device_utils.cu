#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "harness/device_utils.hpp"
#include "variants/common/clock.cuh"
#include "variants/common/cublas_check.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/dtype.cuh"

namespace kbit::gpu {
namespace {

__device__ __forceinline__ std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fill_random_kernel(T* out, std::int64_t n, std::uint64_t seed) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double u = double(mix64(seed ^ mix64(std::uint64_t(i))) >> 11) * 0x1p-53;
    out[i] = dev::from_float<T>(float(2.0 * u - 1.0));
  }
}

__global__ void clock_probe_kernel(int spin_ns, unsigned long long* out) {
  const std::uint64_t t0 = dev::global_ns();
  const long long c0 = clock64();
  std::uint64_t t1 = t0;
  while (t1 - t0 < std::uint64_t(spin_ns)) t1 = dev::global_ns();
  const long long c1 = clock64();
  out[0] = t1 - t0;
  out[1] = (unsigned long long)(c1 - c0);
}

}  // namespace

void fill_random(DType t, void* out, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  const int grid = int(std::min<std::int64_t>((n + 255) / 256, 132 * 32));
  switch (t) {
    case DType::f32:
      fill_random_kernel<<<grid, 256, 0, stream>>>(static_cast<float*>(out), n, seed);
      break;
    case DType::f16:
      fill_random_kernel<<<grid, 256, 0, stream>>>(static_cast<__half*>(out), n, seed);
      break;
    case DType::bf16:
      fill_random_kernel<<<grid, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(out), n, seed);
      break;
  }
  KBIT_CHECK_LAUNCH();
}

double measure_sm_clock_mhz(cudaStream_t stream, int spin_us) {
  DeviceBuffer<unsigned long long> d(2);
  clock_probe_kernel<<<1, 1, 0, stream>>>(spin_us * 1000, d.get());
  KBIT_CHECK_LAUNCH();
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto h = d.download();
  return h[0] ? double(h[1]) / double(h[0]) * 1000.0 : 0.0;
}

double measure_tensor_tflops(int n, cudaStream_t stream) {
  const std::size_t elems = std::size_t(n) * std::size_t(n);
  DeviceBuffer<unsigned char> a(elems * 2), b(elems * 2), c(elems * 2), ws(32u << 20);
  fill_random(DType::f16, a.get(), std::int64_t(elems), 1, stream);
  fill_random(DType::f16, b.get(), std::int64_t(elems), 2, stream);
  cublasHandle_t h = nullptr;
  KBIT_CUBLAS_CHECK(cublasCreate(&h));
  struct Destroy {
    cublasHandle_t h;
    ~Destroy() { cublasDestroy(h); }
  } destroy{h};
  KBIT_CUBLAS_CHECK(cublasSetWorkspace(h, ws.get(), ws.bytes()));
  KBIT_CUBLAS_CHECK(cublasSetStream(h, stream));
  const float alpha = 1.0f, beta = 0.0f;
  const double med =
      1e-3 * median_event_ms(stream, 3, 10, [&] {
        KBIT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, b.get(),
                                       CUDA_R_16F, n, a.get(), CUDA_R_16F, n, &beta, c.get(),
                                       CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      });
  return 2.0 * double(n) * n * n / med / 1e12;
}

}  // namespace kbit::gpu
