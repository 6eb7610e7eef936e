#include "harness/execute.hpp"

#include <vector>

#include "harness/dispatch.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {

GemmArgs DeviceProblem::args(const WeightLayout& layout, int copy) const {
  GemmArgs a;
  a.A = A;
  a.C = C;
  a.w = weights->view(layout, copy);
  a.codebook = codebook;
  a.expert_offsets = expert_offsets;
  return a;
}

GemmArgs DeviceProblem::args(const VariantRow& row, const GemmDims& dims, int copy) const {
  return args(row_layout(row, dims), copy);
}

gpu::CodebookArg codebook_arg(const HostWeights& hw) {
  return hw.awq_group > 0 ? gpu::CodebookArg{} : gpu::make_codebook_arg(hw.codebook, hw.k_bits);
}

OwnedProblem::OwnedProblem(const DeviceWeights& weights, const HostActivations& A,
                           const GemmDims& d, const std::vector<float>& codebook)
    : A_(A.bytes), C_(std::size_t(d.M * d.N) * dtype_size(d.dtype)) {
  if (d.grouped()) offsets_ = DeviceBuffer<std::int64_t>(d.expert_offsets);
  view_ = {&weights,
           A_.get(),
           C_.get(),
           C_.bytes(),
           d.grouped() ? offsets_.get() : nullptr,
           d.awq_group > 0 ? gpu::CodebookArg{} : gpu::make_codebook_arg(codebook, d.k_bits)};
}

namespace {

// After an exception: is the context still usable? Launch errors are not sticky; an
// illegal address or a trap is, and every later call would fail too.
bool context_broken() {
  cudaGetLastError();
  const cudaError_t e = cudaDeviceSynchronize();
  return e != cudaSuccess;
}

}  // namespace

Outcome execute_and_check(const VariantRow& row, const VariantOptions& opts, const GemmDims& dims,
                          const DeviceProblem& prob, const RowReference* ref, cudaStream_t stream) {
  Outcome o;
  try {
    o.state = row.setup(dims, opts);
    KBIT_CUDA_CHECK(cudaMemsetAsync(prob.C, 0xFF, prob.C_bytes, stream));  // poison: NaN everywhere
    row.run(o.state.get(), dims, prob.args(row, dims, 0), stream);
    KBIT_CUDA_CHECK(cudaGetLastError());
    KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    o.state->check_after_run(stream);  // what the run recorded for the host (checked offsets)
    if (ref && computes_gemm(row)) {
      std::vector<unsigned char> c(prob.C_bytes);
      KBIT_CUDA_CHECK(cudaMemcpy(c.data(), prob.C, prob.C_bytes, cudaMemcpyDeviceToHost));
      const GemmBound b =
          gemm_bound(dims.dtype, dims.dtype, dims.K_dim, o.state->extra_additions());
      o.check = check_output(*ref, b, dims.dtype, c, dims.N);
      o.checked = true;
    }
  } catch (const std::exception& e) {
    o.error = e.what();
    o.sticky = context_broken();
  }
  return o;
}

void run_again(const VariantRow& row, VariantState* state, const GemmDims& dims,
               const DeviceProblem& prob, cudaStream_t stream) {
  const GemmArgs plain = prob.args(row, dims, 0);
  KBIT_CUDA_CHECK(cudaMemsetAsync(prob.C, 0xFF, prob.C_bytes, stream));
  row.run(state, dims, plain, stream);
  if (row.support.pdl) {
    GemmArgs behind = plain;
    behind.pdl = true;
    row.run(state, dims, behind, stream);
  }
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  state->check_after_run(stream);
}

Stream::Stream() {
  KBIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

}  // namespace kbit
