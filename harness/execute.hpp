// Runs one registry row on one problem: setup, poisoned output, one launch, the check.
// Shared by `run`, `validate` and the GPU tests.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "harness/check.hpp"
#include "harness/device_weights.hpp"
#include "harness/problem.hpp"
#include "harness/registry.hpp"

namespace kbit {

// The device side of one problem: activations, output, expert offsets; weights live in a
// DeviceWeights that may serve many problems.
struct DeviceProblem {
  const DeviceWeights* weights = nullptr;
  const void* A = nullptr;
  void* C = nullptr;
  std::size_t C_bytes = 0;
  const std::int64_t* expert_offsets = nullptr;
  gpu::CodebookArg codebook{};
  // The launch arguments on weight copy `copy`, the weights in `layout`: row_layout(row, dims)
  // (harness/dispatch.hpp), resolved once per (row, problem), not per launch.
  GemmArgs args(const WeightLayout& layout, int copy) const;
  // The same with the layout `row` reads on `dims` (row_layout).
  GemmArgs args(const VariantRow& row, const GemmDims& dims, int copy) const;
};

// The codebook a problem's rows receive: the kbit weights' own; for AWQ weights none (all zeros,
// k_bits 0), which a kbit row's check of the codebook's K refuses.
gpu::CodebookArg codebook_arg(const HostWeights& hw);

// A problem's activations, output buffer and expert offsets on the device, owned, with the
// DeviceProblem view over them (for one-off checks: tests, validate's MoE cases). `codebook`:
// the kbit weights' (ignored for an AWQ problem, dims.awq_group > 0).
class OwnedProblem {
 public:
  OwnedProblem(const DeviceWeights& weights, const HostActivations& A, const GemmDims& dims,
               const std::vector<float>& codebook);
  const DeviceProblem& view() const { return view_; }

 private:
  DeviceBuffer<unsigned char> A_, C_;
  DeviceBuffer<std::int64_t> offsets_;
  DeviceProblem view_;
};

struct Outcome {
  std::unique_ptr<VariantState> state;  // kept for timing
  std::string error;                    // setup or run failed (message), empty otherwise
  bool sticky = false;                  // the CUDA context is broken: stop the whole run
  bool checked = false;
  CheckResult check;
};

// Setup, poison C with 0xFF (NaN), run once on copy 0, synchronize, download C and (when
// `ref` is given) check it with the bound for this row's state.
Outcome execute_and_check(const VariantRow& row, const VariantOptions& opts, const GemmDims& dims,
                          const DeviceProblem& prob, const RowReference* ref, cudaStream_t stream);

// The second call of a checked problem (after execute_and_check, same state): poison C, run on
// copy 0, and for a row that supports programmatic dependent launch queue a PDL call right behind
// it (no host sync), whose C is the one left; then synchronize. A kernel that touches its
// workspace, counters or C before griddepcontrol.wait races the call before it.
void run_again(const VariantRow& row, VariantState* state, const GemmDims& dims,
               const DeviceProblem& prob, cudaStream_t stream);

// An owning non-blocking stream (graph capture needs one).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace kbit
