// CPU: grouped_mma's setup refuses what it cannot run before any GPU work, naming the value and
// the limit (the GPU test in harness/tests/test_variants_gpu.cpp runs what it accepts).
#include <catch2/catch.hpp>

#include <string>

#include "reference/error.hpp"
#include "variants/05_grouped_mma/grouped_mma.hpp"
#include "variants/variant_api.hpp"

using namespace kbit;

namespace {

GemmDims moe(std::int64_t M, std::int64_t N, std::int64_t K_dim, int experts) {
  GemmDims d;
  d.M = M, d.N = N, d.K_dim = K_dim, d.k_bits = 4, d.dtype = DType::f16, d.num_experts = experts;
  d.expert_offsets.assign(std::size_t(experts) + 1, 0);
  d.expert_offsets.back() = M;
  return d;
}

VariantOptions with(const char* name, std::int64_t v) {
  VariantOptions o;
  o.values = {{name, v}};
  return o;
}

}  // namespace

TEST_CASE("grouped_mma refuses problems and options outside its limits before any GPU work",
          "[variants]") {
  using variants::grouped_mma_setup;
  GemmDims dense = moe(16, 256, 256, 1);
  dense.num_experts = 0;
  dense.expert_offsets.clear();
  CHECK_THROWS_WITH(grouped_mma_setup(dense, {}), Catch::Contains("needs a grouped (MoE) problem"));
  CHECK_THROWS_WITH(grouped_mma_setup(moe(16, 256, 100, 8), {}),
                    Catch::Contains("K_dim = 100") && Catch::Contains("multiple of 32"));
  CHECK_THROWS_WITH(grouped_mma_setup(moe(-1, 256, 256, 8), {}),
                    Catch::Contains("M = -1") && Catch::Contains("at least 0"));
  CHECK_THROWS_WITH(grouped_mma_setup(moe(1 << 20, 4096, 256, 8), {}),
                    Catch::Contains("M*N = 4294967296") && Catch::Contains("2^31"));
  GemmDims f32 = moe(16, 256, 256, 8);
  f32.dtype = DType::f32;
  CHECK_THROWS_WITH(grouped_mma_setup(f32, {}), Catch::Contains("fp32"));
  CHECK_THROWS_WITH(
      grouped_mma_setup(moe(16, 256, 256, variants::kGroupedMmaMaxExperts + 1), {}),
      Catch::Contains(std::to_string(variants::kGroupedMmaMaxExperts + 1) + " experts") &&
          Catch::Contains("at most " + std::to_string(variants::kGroupedMmaMaxExperts)));
  CHECK_THROWS_WITH(grouped_mma_setup(moe(16, 256, 256, 8), with("token_tile", 48)),
                    Catch::Contains("token_tile = 48") && Catch::Contains("16, 32, 64, 128, 256"));
}

TEST_CASE("grouped_mma's token tile holds the mean rows per expert with a margin", "[variants]") {
  using variants::grouped_mma_token_tile;
  CHECK(grouped_mma_token_tile(0.0) == 16);
  CHECK(grouped_mma_token_tile(8.0) == 16);     // 8 + 1.5 sqrt(8) = 12.2
  CHECK(grouped_mma_token_tile(10.0) == 16);    // 14.7
  CHECK(grouped_mma_token_tile(16.0) == 32);    // 22
  CHECK(grouped_mma_token_tile(64.0) == 128);   // 76
  CHECK(grouped_mma_token_tile(128.0) == 256);  // 145
  CHECK(grouped_mma_token_tile(5000.0) == 256);
}
