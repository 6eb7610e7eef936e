#include "reference/gemm_ref.hpp"

#include <algorithm>

namespace kbit {

GemmReference reference_gemm(const float* A, std::int64_t M, std::int64_t K, const float* W,
                             std::int64_t N, const std::vector<std::int64_t>& rows) {
  (void)M;
  using RowMatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  GemmReference r;
  r.rows = rows;
  const Eigen::Index R = Eigen::Index(rows.size());
  Eigen::MatrixXd a(R, K);
  for (Eigen::Index i = 0; i < R; ++i) {
    a.row(i) = Eigen::Map<const RowMatF>(A + rows[std::size_t(i)] * K, 1, K).cast<double>();
  }
  const Eigen::MatrixXd a_abs = a.cwiseAbs();
  r.abs_a_sum = a_abs.rowwise().sum();
  r.C.resize(R, N);
  r.abs_dot.resize(R, N);
  // W in chunks of rows so that the double copy stays small for 70B-sized layers.
  const std::int64_t chunk = 2048;
  for (std::int64_t n0 = 0; n0 < N; n0 += chunk) {
    const std::int64_t nc = std::min(chunk, N - n0);
    const Eigen::MatrixXd w =
        Eigen::Map<const RowMatF>(W + n0 * K, nc, K).cast<double>().transpose();
    r.C.middleCols(n0, nc).noalias() = a * w;
    r.abs_dot.middleCols(n0, nc).noalias() = a_abs * w.cwiseAbs();
  }
  return r;
}

std::vector<std::int64_t> sample_rows(std::int64_t M, std::int64_t max_rows) {
  std::vector<std::int64_t> rows;
  if (M <= max_rows) {
    for (std::int64_t m = 0; m < M; ++m) rows.push_back(m);
    return rows;
  }
  for (std::int64_t i = 0; i < max_rows; ++i) rows.push_back(i * (M - 1) / (max_rows - 1));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace kbit
