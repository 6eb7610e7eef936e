// The variant registry: one row per variant, in the order they were built. The one source
// for the CLI (list, run, validate), the tests, the CSV and the plot labels.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "variants/variant_api.hpp"

namespace kbit {

// probe: reads the problem's bytes and computes nothing (a streaming ceiling); never checked.
// diag: a diagnostic build of a product kernel (its results may be wrong by design); never
// checked, never compared, never in a dispatch.
enum class Family { gemm, gemv, grouped, baseline, probe, diag };
const char* family_name(Family f);

struct Support {
  bool kbit = true;  // kbit problems (docs/format.md), of the bit widths k_bits
  std::vector<int> k_bits{2, 3, 4, 5};
  std::vector<int> awq_groups{};  // AWQ problems of these groups this row runs (empty: none)
  std::vector<DType> dtypes{DType::f16, DType::bf16};
  std::int64_t m_min = 1;                                         // rows of A (dense problems)
  std::int64_t m_max = std::numeric_limits<std::int64_t>::max();  //
  std::int64_t n_multiple = 1;                                    // N must be a multiple of this
  std::int64_t k_dim_multiple = 32;  // K_dim must be a multiple of this
  bool dense = true;                 // C = A W^T problems
  bool grouped = false;              // MoE problems (E experts)
  bool split_k = false;  // honours VariantOptions::split_k (validate runs it forced on and off)
  bool pdl = false;      // honours GemmArgs::pdl (validate runs a PDL call behind a plain one)
  int min_sm = 0;        // compute capability x 10 the kernels need (90: cp.async.bulk); 0 any
};

struct VariantRow {
  std::string_view name;
  std::string_view description;  // one line
  Family family;
  Support support;
  WeightLayout layout;  // what the harness builds for it; an auto row's per problem: row_layout
  SetupFn setup;
  RunFn run;
  std::vector<OptionSpec> options;  // what an experiment may set in [options.NAME]
};

const std::vector<VariantRow>& registry();
// False for probes and diagnostics: their C is zeros or wrong by design, so nothing checks,
// validates or sweeps them.
inline bool computes_gemm(const VariantRow& row) {
  return row.family != Family::probe && row.family != Family::diag;
}
// Throws kbit::Error listing the known names when `name` is not a row.
const VariantRow& find_variant(std::string_view name);
// Rows matching any of the names or globs ("*gemv*"), in registry order; a pattern that
// matches nothing is an error naming it.
std::vector<const VariantRow*> match_variants(const std::vector<std::string>& patterns);
// Empty when the row supports the problem, otherwise why not ("M = 16 is above 4").
std::string unsupported_reason(const VariantRow& row, const GemmDims& dims);
// The same against a device of compute capability device_sm / 10 (0: none known, not checked).
std::string unsupported_reason(const VariantRow& row, const GemmDims& dims, int device_sm);
// Human-readable summaries of a row's support, for `list` and run.json.
std::string describe_k_bits(const Support& s);
// The weight formats a row runs: "kbit", "kbit,awq_g32,awq_g64,awq_g128", "awq_g128", ...
std::string describe_formats(const Support& s);
std::string describe_dtypes(const Support& s);
std::string describe_m_range(const Support& s);
std::string describe_shape_rules(const Support& s);

}  // namespace kbit
