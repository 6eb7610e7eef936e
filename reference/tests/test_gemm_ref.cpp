#include <catch2/catch.hpp>

#include <cmath>

#include "reference/codebook.hpp"
#include "reference/error_budget.hpp"
#include "reference/fp16.hpp"
#include "reference/gemm_ref.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"

using namespace kbit;

namespace {

struct Problem {
  std::int64_t M, N, K;
  std::vector<float> A, W;  // A holds fp16-exact values, W the float32 dequantized weight
};

Problem make_problem(std::int64_t M, std::int64_t N, std::int64_t K, DType t, std::uint64_t seed) {
  Problem p{M, N, K, random_normal(M * K, seed), {}};
  for (float& a : p.A) a = round_to(t, a);
  const auto cb = codebook_nf(4);
  const auto q = quantize(random_normal(N * K, seed + 1), cb, 4);
  p.W = dequantize_f32(q, cb);
  return p;
}

// What a tensor-core kernel does: weights rounded to t, products exact, fp32 accumulation.
double kernel_like(const Problem& p, DType t, std::int64_t m, std::int64_t n) {
  float acc = 0;
  for (std::int64_t k = 0; k < p.K; ++k)
    acc += p.A[std::size_t(m * p.K + k)] * round_to(t, p.W[std::size_t(n * p.K + k)]);
  return round_to(t, acc);
}

}  // namespace

TEST_CASE("reference_gemm matches a naive double loop", "[gemm_ref]") {
  const auto p = make_problem(5, 37, 96, DType::f16, 1);
  const auto r = reference_gemm(p.A.data(), p.M, p.K, p.W.data(), p.N, sample_rows(p.M, 100));
  for (std::int64_t m = 0; m < p.M; ++m) {
    for (std::int64_t n = 0; n < p.N; ++n) {
      double c = 0, s = 0;
      for (std::int64_t k = 0; k < p.K; ++k) {
        c += double(p.A[std::size_t(m * p.K + k)]) * p.W[std::size_t(n * p.K + k)];
        s += std::fabs(double(p.A[std::size_t(m * p.K + k)]) * p.W[std::size_t(n * p.K + k)]);
      }
      CHECK(r.C(m, n) == Approx(c).epsilon(1e-12));
      CHECK(r.abs_dot(m, n) == Approx(s).epsilon(1e-12));
    }
  }
}

TEST_CASE("sample_rows keeps both ends", "[gemm_ref]") {
  CHECK(sample_rows(3, 16) == std::vector<std::int64_t>{0, 1, 2});
  const auto r = sample_rows(1024, 16);
  CHECK(r.size() == 16);
  CHECK(r.front() == 0);
  CHECK(r.back() == 1023);
}

TEST_CASE("a kernel-like fp32 GEMM is inside the bound and a wrong weight outside", "[gemm_ref]") {
  for (DType t : {DType::f16, DType::bf16}) {
    const auto p = make_problem(4, 64, 128, t, 3);
    const auto r = reference_gemm(p.A.data(), p.M, p.K, p.W.data(), p.N, sample_rows(p.M, 100));
    const auto b = gemm_bound(t, t, p.K);
    double worst = 0;
    for (std::int64_t m = 0; m < p.M; ++m) {
      for (std::int64_t n = 0; n < p.N; ++n) {
        const double err = std::fabs(kernel_like(p, t, m, n) - r.C(m, n));
        worst = std::max(worst,
                         err / gemm_element_bound(b, r.abs_dot(m, n), r.abs_a_sum(m), r.C(m, n)));
      }
    }
    INFO(dtype_name(t) << " worst err/bound " << worst);
    CHECK(worst <= 1.0);
    CHECK(worst > 0.0);
    // One weight replaced by its negation (a wrong sign plane, a wrong index) is caught at
    // this K_dim: the error is |a * 2w|, far above gamma * sum|a||w|.
    auto bad = p;
    std::int64_t kk = 0;
    for (std::int64_t k = 0; k < p.K; ++k)
      if (std::fabs(p.A[std::size_t(k)] * p.W[std::size_t(k)]) >
          std::fabs(p.A[std::size_t(kk)] * p.W[std::size_t(kk)]))
        kk = k;
    bad.W[std::size_t(kk)] = -bad.W[std::size_t(kk)];
    const double err = std::fabs(kernel_like(bad, t, 0, 0) - r.C(0, 0));
    CHECK(err > gemm_element_bound(b, r.abs_dot(0, 0), r.abs_a_sum(0), r.C(0, 0)));
  }
}

TEST_CASE("ulp and gamma follow the formats", "[gemm_ref]") {
  CHECK(ulp(DType::f16, 1.0) == 0x1p-10);
  CHECK(ulp(DType::f16, 1.5) == 0x1p-10);
  CHECK(ulp(DType::f16, 2.0) == 0x1p-9);
  CHECK(ulp(DType::f16, 1e-9) == 0x1p-24);  // subnormal spacing
  CHECK(ulp(DType::bf16, 1.0) == 0x1p-7);
  const auto b = gemm_bound(DType::f16, DType::f16, 4096);
  CHECK(b.gamma > 3 * 0x1p-11);
  CHECK(b.gamma < 3 * 0x1p-11 + (4096 + 64) * 0x1p-23 * 1.01 + 1e-6);
}
