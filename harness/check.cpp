#include "harness/check.hpp"

#include <cmath>
#include <limits>

#include "reference/fp16.hpp"

namespace kbit {

CheckResult check_output(const RowReference& ref, const GemmBound& b, DType out,
                         const std::vector<unsigned char>& C, std::int64_t N) {
  CheckResult r;
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < ref.rows.size(); ++i) {
    const std::int64_t row = ref.rows[i];
    for (std::int64_t n = 0; n < N; ++n) {
      const double got = load_as_float(out, C.data(), std::size_t(row * N + n));
      const double want = ref.C(Eigen::Index(i), Eigen::Index(n));
      const double bound = gemm_element_bound(b, ref.abs_dot(Eigen::Index(i), Eigen::Index(n)),
                                              ref.abs_a_sum(Eigen::Index(i)), want);
      ++r.checked;
      double ratio;
      if (!std::isfinite(got)) {
        ++r.nonfinite;
        ratio = std::numeric_limits<double>::infinity();
      } else {
        const double err = std::fabs(got - want);
        ratio = err / bound;
        err2 += err * err;
      }
      ref2 += want * want;
      r.max_err_over_bound = std::max(r.max_err_over_bound, ratio);
      if (!(ratio <= 1.0)) {
        ++r.violations;
        if (r.first_bad.size() < 8) r.first_bad.push_back({row, n, got, want, bound});
      }
    }
  }
  r.rel_fro_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  r.pass = r.violations == 0 && r.checked > 0;
  return r;
}

}  // namespace kbit
