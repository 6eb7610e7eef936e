// Baselines: cuBLAS on the dequantized weight, and dequantize-then-cuBLAS.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reference/error.hpp"
#include "variants/baselines/baselines.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/common/cublas_check.hpp"

namespace kbit::variants {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f32:
      return CUDA_R_32F;
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
void gemm_rowmajor(cublasHandle_t h, DType t, std::int64_t M, std::int64_t N, std::int64_t K,
                   const void* A, const void* W, void* C, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  KBIT_CUBLAS_CHECK(cublasSetStream(h, stream));
  KBIT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &alpha, W,
                                 cuda_type(t), int(K), A, cuda_type(t), int(K), &beta, C,
                                 cuda_type(t), int(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Dense: one call. Grouped: one call per expert with rows (weights at e * expert_elems).
void gemm_problem(cublasHandle_t h, const GemmDims& d, const void* A, const void* W,
                  std::int64_t expert_elems, void* C, cudaStream_t stream) {
  if (!d.grouped()) {
    gemm_rowmajor(h, d.dtype, d.M, d.N, d.K_dim, A, W, C, stream);
    return;
  }
  const std::size_t es = dtype_size(d.dtype);
  for (int e = 0; e < d.num_experts; ++e) {
    const std::int64_t r0 = d.expert_offsets[std::size_t(e)],
                       rows = d.expert_offsets[std::size_t(e) + 1] - r0;
    if (rows == 0) continue;
    gemm_rowmajor(h, d.dtype, rows, d.N, d.K_dim, static_cast<const char*>(A) + r0 * d.K_dim * es,
                  static_cast<const char*>(W) + e * expert_elems * es,
                  static_cast<char*>(C) + r0 * d.N * es, stream);
  }
}

void check_dtype(const GemmDims& d, const char* who) {
  if (d.dtype == DType::f32)
    throw Error(std::string(who) + ": dtype fp32 is not supported (fp16, bf16)");
}

struct CublasState : VariantState {
  CublasHandle handle;
};

struct DequantCublasState : VariantState {
  CublasHandle handle;
  DeviceBuffer<unsigned char> weight;  // the dequantized scratch weight, every expert
  std::int64_t expert_elems = 0;
};

// cublasGemmGroupedBatchedEx reads its A/B/C pointer arrays from device memory; they are
// rebuilt on the device at every run (the weight copy changes between L2-cold launches), so
// the run step stays free of host synchronization.
__global__ void grouped_pointers_kernel(int groups, const std::int64_t* expert,
                                        const std::int64_t* row0, const char* W,
                                        std::int64_t w_bytes, const char* A,
                                        std::int64_t a_row_bytes, char* C, std::int64_t c_row_bytes,
                                        const void** out) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= groups) return;
  out[g] = W + expert[g] * w_bytes;                 // op(A) = W_e^T (column-major view)
  out[groups + g] = A + row0[g] * a_row_bytes;      // B = the expert's rows of A
  out[2 * groups + g] = C + row0[g] * c_row_bytes;  // C = the expert's rows of C
}

struct GroupedState : VariantState {
  CublasHandle handle;
  int groups = 0;
  std::vector<cublasOperation_t> ta, tb;
  std::vector<int> m, n, k, lda, ldb, ldc, size;
  std::vector<float> alpha, beta;
  DeviceBuffer<std::int64_t> expert, row0;
  DeviceBuffer<const void*> pointers;  // [3][groups]: weights, activations, outputs
};

}  // namespace

std::unique_ptr<VariantState> cublas_grouped_setup(const GemmDims& d, const VariantOptions&) {
  check_dtype(d, "cublas_grouped");
  if (!d.grouped()) throw Error("cublas_grouped: needs a grouped (MoE) problem");
  auto s = std::make_unique<GroupedState>();
  std::vector<std::int64_t> expert, row0;
  for (int e = 0; e < d.num_experts; ++e) {  // one group of size 1 per expert with rows
    const std::int64_t r0 = d.expert_offsets[std::size_t(e)],
                       rows = d.expert_offsets[std::size_t(e) + 1] - r0;
    if (rows == 0) continue;
    expert.push_back(e);
    row0.push_back(r0);
    s->m.push_back(int(d.N));
    s->n.push_back(int(rows));
    s->k.push_back(int(d.K_dim));
  }
  s->groups = int(expert.size());
  s->ta.assign(expert.size(), CUBLAS_OP_T);
  s->tb.assign(expert.size(), CUBLAS_OP_N);
  s->lda.assign(expert.size(), int(d.K_dim));
  s->ldb.assign(expert.size(), int(d.K_dim));
  s->ldc.assign(expert.size(), int(d.N));
  s->size.assign(expert.size(), 1);
  s->alpha.assign(expert.size(), 1.0f);
  s->beta.assign(expert.size(), 0.0f);
  if (s->groups > 0) {
    s->expert = DeviceBuffer<std::int64_t>(expert);
    s->row0 = DeviceBuffer<std::int64_t>(row0);
    s->pointers = DeviceBuffer<const void*>(3 * expert.size());
  }
  return s;
}

void cublas_grouped_run(VariantState* state, const GemmDims& d, const GemmArgs& a,
                        cudaStream_t stream) {
  auto* s = static_cast<GroupedState*>(state);
  if (s->groups == 0) return;
  const std::int64_t es = std::int64_t(dtype_size(d.dtype));
  grouped_pointers_kernel<<<(s->groups + 127) / 128, 128, 0, stream>>>(
      s->groups, s->expert.get(), s->row0.get(), static_cast<const char*>(a.w.dequantized),
      a.w.expert_elems * es, static_cast<const char*>(a.A), d.K_dim * es, static_cast<char*>(a.C),
      d.N * es, s->pointers.get());
  KBIT_CHECK_LAUNCH();
  const void* const* p = s->pointers.get();
  KBIT_CUBLAS_CHECK(cublasSetStream(s->handle.get(), stream));
  KBIT_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
      s->handle.get(), s->ta.data(), s->tb.data(), s->m.data(), s->n.data(), s->k.data(),
      s->alpha.data(), p, cuda_type(d.dtype), s->lda.data(), p + s->groups, cuda_type(d.dtype),
      s->ldb.data(), s->beta.data(), const_cast<void* const*>(p + 2 * s->groups),
      cuda_type(d.dtype), s->ldc.data(), s->groups, s->size.data(), CUBLAS_COMPUTE_32F));
}

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
  st->weight = DeviceBuffer<unsigned char>(std::size_t(std::max(1, d.num_experts)) *
                                           std::size_t(st->expert_elems) * dtype_size(d.dtype));
  return st;
}

void dequant_cublas_run(VariantState* s, const GemmDims& d, const GemmArgs& a,
                        cudaStream_t stream) {
  auto* st = static_cast<DequantCublasState*>(s);
  const std::size_t es = dtype_size(d.dtype);
  if (!d.grouped()) {
    gpu::dequantize(a.w.packed, a.w.absmax, AbsmaxStorage::e4m4, st->expert_elems, a.codebook,
                    d.dtype, st->weight.get(), stream);
  } else {
    for (int e = 0; e < d.num_experts; ++e) {  // only the experts that have rows
      if (d.expert_offsets[std::size_t(e) + 1] == d.expert_offsets[std::size_t(e)]) continue;
      gpu::dequantize(a.w.packed + e * a.w.expert_words, a.w.absmax + e * a.w.expert_bytes,
                      AbsmaxStorage::e4m4, st->expert_elems, a.codebook, d.dtype,
                      st->weight.get() + e * st->expert_elems * es, stream);
    }
  }
  gemm_problem(st->handle.get(), d, a.A, st->weight.get(), st->expert_elems, a.C, stream);
}

}  // namespace kbit::variants
