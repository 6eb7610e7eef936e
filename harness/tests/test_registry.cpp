#include <catch2/catch.hpp>

#include <set>

#include "harness/registry.hpp"
#include "reference/error.hpp"

using namespace kbit;

TEST_CASE("registry rows are complete and uniquely named", "[registry]") {
  std::set<std::string> names;
  for (const auto& r : registry()) {
    INFO(r.name);
    CHECK(names.insert(std::string(r.name)).second);
    CHECK_FALSE(r.description.empty());
    CHECK(r.setup != nullptr);
    CHECK(r.run != nullptr);
    CHECK_FALSE(r.support.k_bits.empty());
    CHECK_FALSE(r.support.dtypes.empty());
    CHECK(bool(r.support.dense || r.support.grouped));
    CHECK(r.support.m_min >= 1);
    CHECK(r.support.m_max >= r.support.m_min);
    if (r.layout.kind == LayoutKind::tiled) CHECK_NOTHROW(check_tile_config(r.layout.tiles));
  }
  CHECK(names.count("cublas_fp16"));
  CHECK(names.count("dequant_cublas"));
}

TEST_CASE("variants are matched by name and glob, in registry order", "[registry]") {
  const auto all = match_variants({"*"});
  CHECK(all.size() == registry().size());
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1] < all[i]);
  const auto base = match_variants({"*cublas*"});
  CHECK(base.size() >= 2);
  CHECK_THROWS_WITH(match_variants({"no_such_variant"}),
                    Catch::Contains("'no_such_variant'") && Catch::Contains("cublas_fp16"));
  CHECK_THROWS_AS(find_variant("nope"), Error);
  CHECK(find_variant("cublas_fp16").family == Family::baseline);
  CHECK(find_variant("read_ldg").family == Family::probe);
  CHECK_FALSE(computes_gemm(find_variant("read_bulk")));
  CHECK(computes_gemm(find_variant("scalar_gemv")));
  CHECK(std::string(family_name(Family::probe)) == "probe");
}

TEST_CASE("unsupported problems say why", "[registry]") {
  VariantRow row = find_variant("cublas_fp16");
  row.support.m_max = 4;
  row.support.k_bits = {4};
  GemmDims d;
  d.M = 16, d.N = 100, d.K_dim = 64, d.k_bits = 4, d.dtype = DType::f16;
  CHECK(unsupported_reason(row, d) == "M = 16 is outside 1..4");
  row.support.min_sm = 90;
  CHECK(unsupported_reason(row, d, 89) ==
        "needs compute capability 9.0 or newer; this device is 8.9");
  CHECK(unsupported_reason(row, d, 90) == "M = 16 is outside 1..4");
  row.support.min_sm = 0;
  d.M = 2;
  CHECK(unsupported_reason(row, d).empty());
  d.k_bits = 3;
  CHECK_THAT(unsupported_reason(row, d), Catch::Contains("K = 3"));
  d.k_bits = 4;
  row.support.n_multiple = 128;
  CHECK_THAT(unsupported_reason(row, d), Catch::Contains("N = 100"));
  row.support.grouped = false;
  d.num_experts = 4;
  CHECK_THAT(unsupported_reason(row, d), Catch::Contains("grouped"));
}
