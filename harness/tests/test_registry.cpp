#include <catch2/catch.hpp>

#include <set>

#include "harness/registry.hpp"
#include "harness/tests/sweep_tally.hpp"
#include "harness/weight_format.hpp"
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

TEST_CASE("a problem of the other weight format is refused with the reason", "[registry][awq]") {
  GemmDims kbit;
  kbit.M = 4, kbit.N = 264, kbit.K_dim = 256, kbit.k_bits = 4, kbit.dtype = DType::f16;
  GemmDims awq = kbit;
  awq.awq_group = 128;
  // cuBLAS reads the dequantized layout: both formats, every AWQ group.
  const VariantRow& cublas = find_variant("cublas_fp16");
  CHECK(unsupported_reason(cublas, kbit, 90).empty());
  for (int g : {32, 64, 128}) {
    awq.awq_group = g;
    CHECK(unsupported_reason(cublas, awq, 90).empty());
  }
  // Rows of kbit layouts refuse AWQ problems, naming the format.
  for (const char* name : {"dequant_cublas", "scalar_gemv", "fetch_dequant", "auto"}) {
    INFO(name);
    awq.awq_group = 128;
    CHECK(unsupported_reason(find_variant(name), awq, 90) ==
          "weights are awq_g128; this row reads kbit weights");
  }
  // A row of AWQ weights (the shape of the awq rows): kbit problems and other groups refused.
  VariantRow row = cublas;
  row.support.kbit = false;
  row.support.awq_groups = {128};
  CHECK(unsupported_reason(row, kbit, 90) ==
        "this row reads AWQ weights (awq_g128); the weights are kbit");
  awq.awq_group = 32;
  CHECK(unsupported_reason(row, awq, 90) == "AWQ group 32 is not one of this row's groups (128)");
  awq.awq_group = 128;
  CHECK(unsupported_reason(row, awq, 90).empty());
  awq.k_bits = 3;
  CHECK_THAT(unsupported_reason(row, awq, 90),
             Catch::Contains("4-bit") && Catch::Contains("K = 3"));
  awq.k_bits = 4;
  awq.dtype = DType::bf16;
  row.support.dtypes = {DType::f16};
  CHECK_THAT(unsupported_reason(row, awq, 90), Catch::Contains("dtype bf16"));
  CHECK(describe_formats(row.support) == "awq_g128");
  CHECK(describe_k_bits(row.support) == "4");
  CHECK(describe_formats(cublas.support) == "kbit,awq_g32,awq_g64,awq_g128");
  CHECK(describe_formats(find_variant("scalar_gemv").support) == "kbit");
}

TEST_CASE("weight formats of the registry rows follow their layouts", "[registry][awq]") {
  for (const auto& r : registry()) {
    INFO(r.name);
    const LayoutKind k = r.layout.kind;
    CHECK(bool(r.support.kbit || !r.support.awq_groups.empty()));
    for (int g : r.support.awq_groups) CHECK((g == 32 || g == 64 || g == 128));
    // kbit layouts hold no AWQ weights and AWQ layouts no kbit ones; only dense problems are AWQ.
    if (k == LayoutKind::flat || k == LayoutKind::tiled || k == LayoutKind::fragment)
      CHECK(r.support.awq_groups.empty());
    // The fragment-order layout exists at K = 2..5 (reference/fragment.hpp).
    if (k == LayoutKind::fragment) CHECK(r.support.k_bits == std::vector<int>{2, 3, 4, 5});
    if (k == LayoutKind::awq || k == LayoutKind::awq_tiled) {
      CHECK_FALSE(r.support.kbit);
      CHECK(r.support.dense);
      CHECK(r.support.n_multiple % 8 == 0);
    }
  }
  CHECK(find_variant("cublas_fp16").support.awq_groups == std::vector<int>{32, 64, 128});
}

TEST_CASE("weight format names parse both ways", "[registry][awq]") {
  CHECK(weight_format_names() ==
        std::vector<std::string>{"kbit", "awq_g32", "awq_g64", "awq_g128"});
  for (const std::string& n : weight_format_names())
    CHECK(weight_format_name(parse_weight_format(n)) == n);
  CHECK_THROWS_WITH(parse_weight_format("awq_g256"),
                    Catch::Contains("'awq_g256'") && Catch::Contains("kbit, awq_g32"));
  CHECK(format_of_codebook("nf") == "kbit");
  CHECK(format_of_codebook("custom") == "kbit");
  CHECK(format_of_codebook("awq_g64") == "awq_g64");
  CHECK(format_of_codebook("awq_g128 humming fp16 scales") == "awq_g128");
  CHECK(format_of_codebook("awq_g1280") == "kbit");
  CHECK(format_of_codebook("humming uint4 g128 fp16 scales") == "kbit");
  CHECK(is_awq_codebook("awq_g32"));
  CHECK_FALSE(is_awq_codebook("nf_expected"));
  GemmDims d;
  d.k_bits = 3;
  CHECK(weights_label(d) == "K=3");
  d.k_bits = 4, d.awq_group = 64;
  CHECK(weights_label(d) == "awq_g64");
}

TEST_CASE("a GPU sweep's tally counts checks and refusals per row, and names a row never checked",
          "[registry]") {
  const VariantRow& gemv = find_variant("scalar_gemv");  // M = 1..4, sm_90
  const VariantRow& awq = find_variant("awq_gemv");      // AWQ weights only
  REQUIRE(gemv.support.min_sm == 90);
  GemmDims d;
  d.M = 1, d.N = 256, d.K_dim = 256, d.k_bits = 4, d.dtype = DType::f16;
  GemmDims wide = d;
  wide.M = 64;
  test::SweepTally t("dense sweep", 90);
  CHECK(t.rows() == 0);
  CHECK(t.unchecked_rows().empty());
  REQUIRE(t.admit(gemv, d));
  t.ran(gemv);
  t.ran(gemv);  // a second problem
  CHECK_FALSE(t.admit(gemv, wide));
  CHECK_FALSE(t.admit(awq, d));
  CHECK(t.rows() == 2);
  CHECK(t.checked("scalar_gemv") == 2);
  CHECK(t.checked("awq_gemv") == 0);
  CHECK(t.unchecked_rows() == std::vector<std::string>{"awq_gemv"});
  CHECK_THAT(t.report(),
             Catch::Contains("dense sweep: scalar_gemv: 2 checks, 1 problems refused (the last: "
                             "M = 64 is outside 1..4)\n") &&
                 Catch::Contains("dense sweep: awq_gemv: 0 checks, 1 problems refused (the last: "
                                 "this row reads AWQ weights (awq_g32,awq_g64,awq_g128); the "
                                 "weights are kbit)\n"));
  // Below the row's compute capability: reported, and not required to run.
  test::SweepTally old("dense sweep", 80);
  CHECK_FALSE(old.admit(gemv, d));
  CHECK(old.unchecked_rows().empty());
  CHECK_THAT(old.report(), Catch::Contains("0 checks, 1 problems refused (the last: needs compute "
                                           "capability 9.0 or newer; this device is 8.0); does "
                                           "not run on this device"));
}

// Hidden ([.]): run only by name, by the ctest entries that show --warn NoAssertions failing a
// case that checks nothing (harness/tests/CMakeLists.txt).
TEST_CASE("a case that checks nothing", "[.][catch]") {}
