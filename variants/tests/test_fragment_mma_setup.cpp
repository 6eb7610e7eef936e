// CPU: fragment_mma's setup refuses what it cannot run before any GPU work, naming the value and
// the limit (the GPU tests in harness/tests/test_variants_gpu.cpp run what it accepts).
#include <catch2/catch.hpp>

#include "reference/error.hpp"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/format/format_kernels.hpp"
#include "variants/variant_api.hpp"

using namespace kbit;

namespace {

GemmDims dense(std::int64_t M, std::int64_t N, std::int64_t K_dim, int k_bits) {
  GemmDims d;
  d.M = M, d.N = N, d.K_dim = K_dim, d.k_bits = k_bits, d.dtype = DType::f16;
  return d;
}

}  // namespace

TEST_CASE("fragment_mma refuses other widths and shapes before any GPU work", "[variants]") {
  using variants::fragment_mma_setup;
  for (int k : {2, 3, 5})
    CHECK_THROWS_WITH(fragment_mma_setup(dense(16, 256, 256, k), {}),
                      Catch::Contains("K = " + std::to_string(k)) &&
                          Catch::Contains("fragment-order layout is K = 4"));
  CHECK_THROWS_WITH(fragment_mma_setup(dense(16, 256, 100, 4), {}),
                    Catch::Contains("K_dim = 100") && Catch::Contains("multiple of 32"));
  GemmDims moe = dense(16, 256, 256, 4);
  moe.num_experts = 2;
  moe.expert_offsets = {0, 8, 16};
  CHECK_THROWS(fragment_mma_setup(moe, {}));
}

TEST_CASE("fragment_mma refuses pipeline counts its own kernel cannot run, naming the value",
          "[variants]") {
  using variants::fragment_mma_setup;
  const auto with = [](std::initializer_list<std::pair<const char*, std::int64_t>> kv) {
    VariantOptions o;
    for (const auto& [k, v] : kv) o.values.emplace_back(k, v);
    return o;
  };
  CHECK_THROWS_WITH(fragment_mma_setup(dense(16, 256, 256, 4), with({{"pipelines", 1}})),
                    Catch::Contains("pipelines = 1") && Catch::Contains("2, 3, 4"));
  CHECK_THROWS_WITH(fragment_mma_setup(dense(64, 256, 256, 4),
                                       with({{"pipelines", 4}, {"mma", 2}, {"stage_k_tiles", 2}})),
                    Catch::Contains("pipelines = 4") && Catch::Contains("64 tokens") &&
                        Catch::Contains("stage_k_tiles = 2"));
}

TEST_CASE("the fragment tile repack refuses a grid past its limit, and does nothing for none",
          "[variants]") {
  CHECK_NOTHROW(gpu::fragment_order(nullptr, nullptr, 0, nullptr, nullptr, nullptr));
  CHECK_THROWS_WITH(gpu::fragment_order(nullptr, nullptr, 1ll << 31, nullptr, nullptr, nullptr),
                    Catch::Contains("2147483648 tiles") && Catch::Contains("2^31"));
}
