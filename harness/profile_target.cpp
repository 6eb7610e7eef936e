// kbit-harness profile-target: the one launch `profile` puts under Nsight Compute. Builds one
// problem of a config (dense shape, M, weight format, dtype), sets up one row, launches it once
// and checks it (outside the profiled range: the first call also loads the module), then launches
// it once more between cudaProfilerStart and cudaProfilerStop, which `ncu --profile-from-start off`
// profiles (every kernel the row launches, and nothing of the setup).
#include <cuda_profiler_api.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <optional>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/config_weights.hpp"
#include "harness/device_weights.hpp"
#include "harness/dispatch.hpp"
#include "harness/execute.hpp"
#include "harness/problem.hpp"
#include "harness/weight_format.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/gemm_ref.hpp"
#include "reference/random.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {

int profile_target(const std::string& config_path, const ProfileTargetOptions& o) {
  const ExperimentConfig cfg = load_experiment(config_path);
  const auto s = std::find_if(cfg.shapes.begin(), cfg.shapes.end(),
                              [&](const ShapeConfig& x) { return x.name == o.shape; });
  if (s == cfg.shapes.end())
    throw Error("profile-target: shape '" + o.shape + "' is not a dense shape of " + cfg.path);
  if (o.m < 1 || o.m > kMaxRows)
    throw Error("profile-target: --m " + std::to_string(o.m) + " is outside 1.." +
                std::to_string(kMaxRows));
  const VariantRow& row = find_variant(o.variant);
  GemmDims d;
  d.M = o.m, d.N = s->n, d.K_dim = s->k_dim, d.k_bits = o.k_bits;
  d.awq_group = parse_weight_format(o.format);
  d.dtype = parse_dtype(o.dtype);
  if (d.awq_group > 0) d.k_bits = 4;
  const std::string why = unsupported_reason(row, d);
  if (!why.empty())
    throw Error("profile-target: " + o.variant + " does not run this problem: " + why);
  if (!cuda_device_available()) {
    std::cerr << "kbit-harness profile-target: no CUDA device (exit " << kExitNoDevice << ")\n";
    return kExitNoDevice;
  }
  const std::uint64_t seed = splitmix64(
      cfg.check.seed ^ splitmix64(std::hash<std::string>{}(s->name) + unsigned(d.k_bits)));
  std::vector<float> cb;
  if (d.awq_group == 0) {
    if (cfg.codebook == "custom") {
      validate_codebook(cfg.codebook_values, d.k_bits);
      cb = cfg.codebook_values;
    } else {
      cb = make_codebook(cfg.codebook, d.k_bits);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const HostWeights hw = shape_host_weights(*s, d.k_bits, d.awq_group, cb, seed);
  const HostActivations A = make_activations(d.M, d.K_dim, d.dtype, splitmix64(seed + 1));
  Stream stream;
  const WeightLayout layout = row_layout(row, d);  // an auto row: its chosen row's
  const DeviceWeights dw(hw, d.dtype, {layout}, 1, stream.get());
  const OwnedProblem prob(dw, A, d, cb);
  std::optional<RowReference> ref;  // [check] enabled = false: launched, not checked
  if (cfg.check.enabled) ref = make_reference(hw, A, d, sample_rows(d.M, cfg.check.max_rows));
  std::cout << "profile-target: problem built in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s"
            << std::endl;
  const VariantOptions opts = options_for(cfg, row);
  Outcome out = execute_and_check(row, opts, d, prob.view(), ref ? &*ref : nullptr, stream.get());
  if (!out.error.empty()) {
    std::cerr << "profile-target: " << o.variant << ": " << out.error << "\n";
    return kExitCheckFailed;
  }
  KBIT_CUDA_CHECK(cudaDeviceSynchronize());
  KBIT_CUDA_CHECK(cudaProfilerStart());
  row.run(out.state.get(), d, prob.view().args(layout, 0), stream.get());
  KBIT_CUDA_CHECK(cudaGetLastError());
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  KBIT_CUDA_CHECK(cudaProfilerStop());
  out.state->check_after_run(stream.get());
  const bool pass = !out.checked || out.check.pass;
  std::cout << "profile-target: " << o.variant << " " << s->name << " M=" << d.M << " "
            << weights_label(d) << " " << dtype_name(d.dtype) << ": "
            << (out.checked ? (pass ? "check pass" : "check FAIL") : "not checked") << "; "
            << out.state->describe() << "\n";
  return pass ? kExitOk : kExitCheckFailed;
}

}  // namespace kbit
