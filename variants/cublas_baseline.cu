// Baselines: cuBLAS on the dequantized weight, and dequantize-then-cuBLAS.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reference/error.hpp"
#include "variants/baselines.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/device_utils.hpp"

#define KBIT_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                            \
    const cublasStatus_t kbit_st_ = (call);                                                       \
    if (kbit_st_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      throw ::kbit::Error(std::string(#call) + " failed: " + cublasGetStatusName(kbit_st_) + " at " + \
                          __FILE__ + ":" + std::to_string(__LINE__));                              \
    }                                                                                             \
  } while (0)

namespace kbit::variants {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f32: return CUDA_R_32F;
  }
  return CUDA_R_16F;
}

// A cuBLAS handle with its own workspace, so that calls can be captured into a CUDA graph
// (cuBLAS must not allocate during capture).
class CublasHandle {
 public:
  CublasHandle() : workspace_(kWorkspaceBytes) {
    KBIT_CUBLAS_CHECK(cublasCreate(&handle_));
    KBIT_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
  }
  ~CublasHandle() { cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer<unsigned char> workspace_;
};

// Row-major C[M, N] = A[M, K] * W[N, K]^T is column-major C^T = W^T^T * A^T: op(W) = T.
void gemm_rowmajor(cublasHandle_t h, DType t, std::int64_t M, std::int64_t N, std::int64_t K, const void* A,
                   const void* W, void* C, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  KBIT_CUBLAS_CHECK(cublasSetStream(h, stream));
  KBIT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &alpha, W, cuda_type(t), int(K),
                                 A, cuda_type(t), int(K), &beta, C, cuda_type(t), int(N), CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
}

// Dense: one call. Grouped: one call per expert with rows (weights at e * expert_elems).
void gemm_problem(cublasHandle_t h, const GemmDims& d, const void* A, const void* W, std::int64_t expert_elems,
                  void* C, cudaStream_t stream) {
  if (!d.grouped()) {
    gemm_rowmajor(h, d.dtype, d.M, d.N, d.K_dim, A, W, C, stream);
    return;
  }
  const std::size_t es = dtype_size(d.dtype);
  for (int e = 0; e < d.num_experts; ++e) {
    const std::int64_t r0 = d.expert_offsets[std::size_t(e)], rows = d.expert_offsets[std::size_t(e) + 1] - r0;
    if (rows == 0) continue;
    gemm_rowmajor(h, d.dtype, rows, d.N, d.K_dim, static_cast<const char*>(A) + r0 * d.K_dim * es,
                  static_cast<const char*>(W) + e * expert_elems * es, static_cast<char*>(C) + r0 * d.N * es, stream);
  }
}

void check_dtype(const GemmDims& d, const char* who) {
  if (d.dtype == DType::f32) throw Error(std::string(who) + ": dtype fp32 is not supported (fp16, bf16)");
}

struct CublasState : VariantState {
  CublasHandle handle;
};

struct DequantCublasState : VariantState {
  CublasHandle handle;
  DeviceBuffer<unsigned char> weight;  // the dequantized scratch weight, every expert
  std::int64_t expert_elems = 0;
};

}  // namespace

std::unique_ptr<VariantState> cublas_fp16_setup(const GemmDims& d, const VariantOptions&) {
  check_dtype(d, "cublas_fp16");
  return std::make_unique<CublasState>();
}

void cublas_fp16_run(VariantState* s, const GemmDims& d, const GemmArgs& a, cudaStream_t stream) {
  auto* st = static_cast<CublasState*>(s);
  gemm_problem(st->handle.get(), d, a.A, a.w.dequantized, a.w.expert_elems, a.C, stream);
}

std::unique_ptr<VariantState> dequant_cublas_setup(const GemmDims& d, const VariantOptions&) {
  check_dtype(d, "dequant_cublas");
  auto st = std::make_unique<DequantCublasState>();
  st->expert_elems = d.N * d.K_dim;
  st->weight = DeviceBuffer<unsigned char>(std::size_t(std::max(1, d.num_experts)) * std::size_t(st->expert_elems) *
                                           dtype_size(d.dtype));
  return st;
}

void dequant_cublas_run(VariantState* s, const GemmDims& d, const GemmArgs& a, cudaStream_t stream) {
  auto* st = static_cast<DequantCublasState*>(s);
  const std::size_t es = dtype_size(d.dtype);
  if (!d.grouped()) {
    gpu::dequantize(a.w.packed, a.w.absmax, AbsmaxStorage::e4m4, st->expert_elems, a.codebook, d.dtype,
                    st->weight.get(), stream);
  } else {
    for (int e = 0; e < d.num_experts; ++e) {  // only the experts that have rows
      if (d.expert_offsets[std::size_t(e) + 1] == d.expert_offsets[std::size_t(e)]) continue;
      gpu::dequantize(a.w.packed + e * a.w.expert_words, a.w.absmax + e * a.w.expert_bytes, AbsmaxStorage::e4m4,
                      st->expert_elems, a.codebook, d.dtype, st->weight.get() + e * st->expert_elems * es, stream);
    }
  }
  gemm_problem(st->handle.get(), d, a.A, st->weight.get(), st->expert_elems, a.C, stream);
}

double measure_tensor_tflops(int n, cudaStream_t stream) {
  const std::size_t elems = std::size_t(n) * std::size_t(n);
  DeviceBuffer<unsigned char> a(elems * 2), b(elems * 2), c(elems * 2);
  gpu::fill_random(DType::f16, a.get(), std::int64_t(elems), 1, stream);
  gpu::fill_random(DType::f16, b.get(), std::int64_t(elems), 2, stream);
  CublasHandle h;
  cudaEvent_t e0, e1;
  KBIT_CUDA_CHECK(cudaEventCreate(&e0));
  KBIT_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int it = 0; it < 13; ++it) {
    KBIT_CUDA_CHECK(cudaEventRecord(e0, stream));
    gemm_rowmajor(h.get(), DType::f16, n, n, n, a.get(), b.get(), c.get(), stream);
    KBIT_CUDA_CHECK(cudaEventRecord(e1, stream));
    KBIT_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    KBIT_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (it >= 3) ms.push_back(t);  // three warm-ups
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2] * 1e-3;
  return 2.0 * double(n) * n * n / med / 1e12;
}

}  // namespace kbit::variants
