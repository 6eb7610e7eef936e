#include <catch2/catch.hpp>

#include <cstdio>
#include <numeric>

#include "harness/device_weights.hpp"
#include "harness/problem.hpp"
#include "harness/timing.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/gemm_ref.hpp"

using namespace kbit;

TEST_CASE("routing gives every token top_k distinct experts", "[problem]") {
  for (const char* routing : {"uniform", "zipf"}) {
    for (int tokens : {1, 7, 64}) {
      const auto off = route_tokens(64, tokens, 8, routing, 1.2, 5);
      REQUIRE(off.size() == 65);
      CHECK(off.front() == 0);
      CHECK(off.back() == tokens * 8);
      for (std::size_t e = 0; e + 1 < off.size(); ++e) {
        CHECK(off[e + 1] >= off[e]);
        CHECK(off[e + 1] - off[e] <= tokens);  // distinct experts per token
      }
      CHECK(active_experts(off) >= std::min(64, 8));
    }
  }
  // zipf concentrates tokens on few experts
  const auto u = route_tokens(256, 64, 4, "uniform", 1.2, 1);
  const auto z = route_tokens(256, 64, 4, "zipf", 1.2, 1);
  CHECK(active_experts(z) < active_experts(u));
  CHECK_THROWS_WITH(route_tokens(8, 1, 9, "uniform", 1, 1), Catch::Contains("top_k = 9"));
  CHECK_THROWS_WITH(route_tokens(8, 1, 2, "round_robin", 1, 1), Catch::Contains("round_robin"));
  CHECK(route_tokens(64, 7, 8, "zipf", 1.2, 5) == route_tokens(64, 7, 8, "zipf", 1.2, 5));
}

TEST_CASE("grouped references equal per-expert dense references", "[problem]") {
  const auto hw = make_host_weights(40, 64, 3, codebook_nf(3), 4, 9);
  GemmDims d;
  d.N = 40, d.K_dim = 64, d.k_bits = 3, d.dtype = DType::bf16, d.num_experts = 4;
  d.expert_offsets = {0, 2, 2, 5, 6};  // expert 1 has no rows
  d.M = 6;
  const auto A = make_activations(6, 64, DType::bf16, 3);
  const auto ref = make_reference(hw, A, d, {0, 1, 2, 3, 4, 5});
  for (std::int64_t row = 0; row < 6; ++row) {
    const int e = row < 2 ? 0 : row < 5 ? 2 : 3;
    const auto g = reference_gemm(A.values.data(), 6, 64, hw.W.data() + e * 40 * 64, 40, {row});
    for (int n = 0; n < 40; ++n) CHECK(ref.C(row, n) == g.C(0, n));
  }
}

TEST_CASE("problem cost counts compressed weights of active experts, A and C", "[problem]") {
  GemmDims d;
  d.M = 4, d.N = 128, d.K_dim = 256, d.k_bits = 4, d.dtype = DType::f16;
  const auto c = problem_cost(d);
  CHECK(c.flops == 2.0 * 4 * 128 * 256);
  CHECK(c.bytes == 128 * 256 * (0.5 + 1.0 / 32) + 4 * (256 + 128) * 2);
  d.num_experts = 8;
  d.expert_offsets = {0, 0, 4, 4, 4, 4, 4, 4, 4};
  CHECK(problem_cost(d).bytes == c.bytes);  // one active expert
}

TEST_CASE("rotation copies exceed 4x L2 within the budget", "[problem]") {
  const std::int64_t L2 = 50 << 20;
  CHECK(rotation_copies(L2, L2, L2, std::int64_t(1) << 40) == 5);
  CHECK(rotation_copies(5 * L2, 5 * L2, L2, std::int64_t(1) << 40) == 1);
  CHECK(rotation_copies(1 << 20, 4 << 20, L2, 40 << 20) == 10);  // budget-bound
  CHECK(rotation_copies(0, 0, L2, 1) == 1);
}

TEST_CASE("a problem that needs more device memory than is free is refused with both figures",
          "[problem]") {
  // Llama3-70B gate/up (N 28672, K_dim 8192) at K = 4, fp16, M = 1Mi: A is 17 GB, C 60 GB.
  const std::vector<WeightLayout> cublas{{LayoutKind::dequantized, {}}};
  const DeviceMemoryNeed need =
      estimate_device_memory(28672, 8192, 4, DType::f16, 1, cublas, 1 << 20, false);
  const std::int64_t flat = 28672LL * 8192 / 32 * (4 * 4 + 1);
  CHECK(need.weights == flat + 28672LL * 8192 * 2);  // flat always, then the dequantized copy
  CHECK(need.io == (1LL << 20) * (8192 + 28672) * 2);
  CHECK(need.workspace >= (1LL << 20) * 28672 * 4);  // a split-K fp32 workspace of C
  CHECK(need.total() == need.weights + need.io + need.workspace);
  char total[32];
  std::snprintf(total, sizeof total, "%.2f", double(need.total()) / 1e9);
  const std::int64_t free_80gb = 80000000000LL;
  CHECK_THROWS_WITH(check_device_memory("llama3_70b.gate_up K=4 M=1048576", need, free_80gb),
                    Catch::Contains(std::string("llama3_70b.gate_up K=4 M=1048576 needs ~") +
                                    total + " GB of device memory, 80.00 GB are free"));
  // M = 1 fits with room to spare; a small free figure refuses it all the same.
  const DeviceMemoryNeed small =
      estimate_device_memory(28672, 8192, 4, DType::f16, 1, cublas, 1, false);
  CHECK_NOTHROW(check_device_memory("llama3_70b.gate_up K=4 M=1", small, free_80gb));
  CHECK_THROWS_WITH(check_device_memory("llama3_70b.gate_up K=4 M=1", small, 500000000),
                    Catch::Contains("M=1 needs ~") && Catch::Contains("0.50 GB are free"));
  // Experts multiply the weights; a scratch dequantized weight (dequant_cublas) counts too.
  const std::vector<WeightLayout> tiled{{LayoutKind::tiled, {64, 128}}};
  const DeviceMemoryNeed moe =
      estimate_device_memory(512, 2048, 4, DType::bf16, 64, tiled, 32, false);
  CHECK(moe.weights >= 2 * 64 * (512LL * 2048 / 32 * 17));  // flat and tiled, every expert
  CHECK(estimate_device_memory(512, 2048, 4, DType::bf16, 64, tiled, 32, true).workspace >=
        64 * 512LL * 2048 * 2);
}

TEST_CASE("percentiles interpolate between order statistics", "[problem]") {
  CHECK(percentile({3, 1, 2}, 50) == 2);
  CHECK(percentile({1, 2, 3, 4}, 50) == 2.5);
  CHECK(percentile({5}, 90) == 5);
  CHECK(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 10) == Approx(2));
}
