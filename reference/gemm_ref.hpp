// The reference GEMM, C_ref = A * deq(W)^T, accumulated in double, with |A| * |deq(W)|^T
// and sum|A| for the error bound. Rows may be a subset (large problems check a sample).
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

namespace kbit {

struct GemmReference {
  std::vector<std::int64_t> rows;  // which rows of C were computed
  Eigen::MatrixXd C;               // rows.size() x N
  Eigen::MatrixXd abs_dot;         // sum_k |A[m,k]| |W[n,k]|
  Eigen::VectorXd abs_a_sum;       // sum_k |A[m,k]|
};

// A: [M, K_dim] float32 holding the exact values of the activations; W: [N, K_dim] float32
// dequantized weights (row-major, nn.Linear layout).
GemmReference reference_gemm(const float* A, std::int64_t M, std::int64_t K_dim, const float* W,
                             std::int64_t N, const std::vector<std::int64_t>& rows);

// All rows when M <= max_rows; otherwise max_rows rows spread over [0, M) including the
// first and the last, so that a run on a large problem still checks both ends.
std::vector<std::int64_t> sample_rows(std::int64_t M, std::int64_t max_rows);

}  // namespace kbit
