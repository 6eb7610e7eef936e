// kbit-harness format --weights FILE:TENSOR: a checkpoint's weight quantized with the CPU
// reference for each K, its SQNR and error-bound margin beside those of N(0,1) weights of the
// same shape (the figures `format` prints for random data).
#include <cmath>
#include <cstdio>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/safetensors.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/error_budget.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"

namespace kbit {
namespace {

void print_row(int k, const char* what, const QuantErrorStats& st, std::int64_t saturated) {
  std::printf("%3d %-8s %10.2f %12.4g %12.4g %9.4f %8.4f %10lld\n", k, what, st.sqnr_db, st.rms_err,
              st.max_abs_err, st.max_err_over_bound, 1.0 - st.max_err_over_bound,
              (long long)saturated);
}

}  // namespace

int format_weights(const FormatOptions& o) {
  // Every argument and the tensor first: nothing is printed for a command line that is refused.
  const std::size_t colon = o.weights.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == o.weights.size())
    throw Error("--weights '" + o.weights + "' is not FILE:TENSOR (a .safetensors file and the " +
                "name of a tensor in it)");
  const std::string path = o.weights.substr(0, colon), name = o.weights.substr(colon + 1);
  if (o.k_bits.empty()) throw Error("--k-bits needs at least one bit width (2..5)");
  for (int k : o.k_bits) {
    check_k_bits(k);
    make_codebook(o.codebook, k);  // an unknown name throws, naming it and the known ones
  }
  const SafetensorsFile f(path);
  const WeightMatrix w = read_weight_matrix(f, name, kMaxWeightElems);
  if (w.rows > kMaxDim || w.k_dim > kMaxDim)
    throw Error("tensor '" + name + "' in safetensors file '" + path + "' is [" +
                std::to_string(w.rows) + ", " + std::to_string(w.k_dim) +
                "]: N and K_dim are each at most " + std::to_string(kMaxDim));

  double sum2 = 0, absmax = 0;
  for (float v : w.values) {
    sum2 += double(v) * v;
    absmax = std::fmax(absmax, std::fabs(double(v)));
  }
  const double rms = std::sqrt(sum2 / double(w.values.size()));
  std::printf(
      "W = %s:%s, %s [%lld, %lld], codebook %s; beside it W[%lld, %lld] ~ N(0,1), seed %llu\n",
      path.c_str(), name.c_str(), w.dtype_name.c_str(), (long long)w.rows, (long long)w.k_dim,
      o.codebook.c_str(), (long long)w.rows, (long long)w.k_dim, (unsigned long long)o.seed);
  std::printf("tensor: rms %.4g, max |w| %.4g (%.1f x rms)\n", rms, absmax,
              rms > 0 ? absmax / rms : 0.0);
  std::printf("CPU reference only (the GPU comparison is `format` on random data)\n");
  const std::vector<float> normal = random_normal(w.rows * w.k_dim, o.seed);
  bool all_ok = true;
  std::printf("%3s %-8s %10s %12s %12s %9s %8s %10s\n", "K", "weights", "SQNR(dB)", "rms err",
              "max err", "err/bnd", "margin", "saturated");
  for (int k : o.k_bits) {
    const auto cb = make_codebook(o.codebook, k);
    for (const bool real : {true, false}) {
      const std::vector<float>& x = real ? w.values : normal;
      const auto q = quantize(x, cb, k);
      const auto st = quant_error_stats(x, q, cb, AbsmaxStorage::e4m4);
      print_row(k, real ? "tensor" : "N(0,1)", st, q.saturated_blocks);
      all_ok = all_ok && st.violations == 0;
    }
  }
  std::printf("%s\n", all_ok ? "OK" : "MISMATCH");
  return all_ok ? kExitOk : kExitCheckFailed;
}

}  // namespace kbit
