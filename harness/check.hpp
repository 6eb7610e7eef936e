// Checks a variant's output against the reference rows, element by element, with the bound
// of docs/format.md (reference/error_budget.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "harness/problem.hpp"
#include "reference/error_budget.hpp"

namespace kbit {

struct BadElement {
  std::int64_t row = 0, col = 0;
  double got = 0, ref = 0, bound = 0;
};

struct CheckResult {
  bool pass = false;
  double max_err_over_bound = 0;  // NaN/inf outputs count as infinity
  std::int64_t checked = 0, violations = 0, nonfinite = 0;
  double rel_fro_err = 0;             // ||C - C_ref|| / ||C_ref|| over the checked rows
  std::vector<BadElement> first_bad;  // up to 8, in row-major order
};

// `C` holds the whole [M, N] output in `out` (fp16/bf16 patterns); only the reference's rows
// are compared.
CheckResult check_output(const RowReference& ref, const GemmBound& bound, DType out,
                         const std::vector<unsigned char>& C, std::int64_t N);

}  // namespace kbit
