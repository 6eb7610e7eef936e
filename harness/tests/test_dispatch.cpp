// The dispatch table (harness/dispatch.hpp) on the fixture results tree
// harness/tests/fixtures/dispatch/: alpha and beta are CURRENT runs on "Test GPU A100-X" (beta's
// CSV predates the pdl column), gamma one on "Test GPU B"; alpha's older run and delta (no
// CURRENT) hold faster rows that must not be read; epsilon's CURRENT run is a profile (counters in
// profile.csv, no results.csv) on "Test GPU A100-X", which the tables leave out. Alpha's
// results.csv also holds faster rows each filter must drop: a baseline (line 2), a peer (4), a
// probe (5), a PDL-timed row (6), rows at non-default options (7, 12), a failed check (10), an
// L2-hot row (11), a variant the registry does not have (14), an auto row (15), a row without a
// median (17) and a kbit row on an AWQ problem (20: codebook awq_g128); beta's has an L2-hot row
// (6). At test.big M = 128 alpha's fragment_mma row (22, the fragment layout) beats
// warp_specialized (21); its faster PDL-timed row (23) and row at a non-default token tile (24)
// must drop. Alpha's AWQ problems on test.big (25..34): awq_g128 awq_gemv at M = 1 (25), beside a
// faster baseline (26); at M = 16 awq_fragment_mma (28) beats awq_gemm (27), a faster peer (29,
// codebook "awq_g128 humming ...") and PDL-timed row (30) drop; M = 64 has awq_gemm alone (31),
// where the AWQ fixed rule's awq_fragment_mma was not timed: no entry; awq_gemm at M = 256 (32);
// awq_g32 at M = 16: awq_gemm (33) beats awq_fragment_mma (34), a point apart from awq_g128's.
// The expected table is in the first test.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/options.hpp"
#include "harness/tests/temp_dir.hpp"
#include "harness/weight_format.hpp"
#include "reference/error.hpp"
#include "variants/05_grouped_mma/grouped_mma.hpp"

using namespace kbit;

namespace {

namespace fs = std::filesystem;

const std::string kFixtures = source_dir() + "/harness/tests/fixtures/dispatch";
const std::string kGpuA = "Test GPU A100-X";
const std::string kGpuB = "Test GPU B";
const std::string kAlpha = "alpha/20260101T000000Z_Test_GPU_A100-X_aaaaaaa";
const std::string kBeta = "beta/20260102T000000Z_Test_GPU_A100-X_bbbbbbb";

// A scratch folder of this file's.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("dispatch") {}
};

const DispatchTable& table_a() {
  static const DispatchTable t = [] {
    const std::vector<DispatchTable> ts = build_dispatch_tables(kFixtures);
    REQUIRE(ts.size() == 2);
    return ts[0];
  }();
  return t;
}

DispatchProblem dense(std::int64_t n, std::int64_t k_dim, std::int64_t m, int k_bits = 4,
                      DType t = DType::f16) {
  DispatchProblem p;
  p.k_bits = k_bits, p.dtype = t, p.N = n, p.K_dim = k_dim, p.M = m;
  return p;
}

DispatchProblem moe(std::int64_t n, std::int64_t k_dim, int experts, std::int64_t m,
                    int k_bits = 4) {
  DispatchProblem p = dense(n, k_dim, m, k_bits);
  p.grouped = true;
  p.experts = experts;
  return p;
}

struct FakeState : VariantState {
  std::string describe() const override { return "tile 1"; }
  std::int64_t extra_additions() const override { return 7; }
};

}  // namespace

TEST_CASE("dispatch build keeps the fastest checked candidate per point of each GPU",
          "[dispatch]") {
  const std::vector<DispatchTable> ts = build_dispatch_tables(kFixtures);
  REQUIRE(ts.size() == 2);
  const DispatchTable& a = ts[0];
  CHECK(a.gpu == kGpuA);
  CHECK(a.runs == std::vector<std::string>{kAlpha, kBeta});
  struct Want {
    std::string shape, variant, run;
    std::int64_t M;
    double median_us;
    std::int64_t line;
    bool grouped;
    std::string format = "kbit";
  };
  const std::vector<Want> want = {
      {"test.big", "scalar_gemv", kAlpha, 1, 10.0, 3, false},        // beta's 11.0 is slower
      {"test.big", "warp_specialized", kBeta, 16, 25.0, 3, false},   // beats alpha's 30.0
      {"test.big", "fetch_dequant", kAlpha, 64, 50.0, 13, false},    // token_tile=64 ignored
      {"test.big", "fragment_mma", kAlpha, 128, 45.0, 22, false},    // pdl 1, token_tile=64 ignored
      {"test.big", "fetch_dequant", kAlpha, 256, 100.0, 16, false},  // auto and no median ignored
      {"test.small", "scalar_gemv", kBeta, 1, 3.0, 4, false},
      {"test.small", "scalar_gemv", kBeta, 4, 4.0, 5, false},  // fetch_dequant at l2 hot ignored
      // test.small M = 16: fetch_dequant alone, where warp_specialized (the fixed rule's row on
      // 9.0) was never timed: no entry
      {"test.moe", "grouped_scalar_gemv", kAlpha, 8, 12.0, 19, true},
      // AWQ points after the kbit ones, by group; test.big M = 64 (awq_gemm alone): no entry.
      {"test.big", "awq_gemm", kAlpha, 16, 80.0, 33, false, "awq_g32"},
      {"test.big", "awq_gemv", kAlpha, 1, 12.0, 25, false, "awq_g128"},
      {"test.big", "awq_fragment_mma", kAlpha, 16, 50.0, 28, false, "awq_g128"},
      {"test.big", "awq_gemm", kAlpha, 256, 150.0, 32, false, "awq_g128"},
  };
  REQUIRE(a.entries.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const DispatchEntry& e = a.entries[i];
    INFO(i << ": " << e.shape << " M = " << e.M << " " << e.variant);
    CHECK(e.shape == want[i].shape);
    CHECK(e.M == want[i].M);
    CHECK(e.variant == want[i].variant);
    CHECK(e.median_us == want[i].median_us);
    CHECK(e.run == want[i].run);
    CHECK(e.line == want[i].line);
    CHECK(e.grouped == want[i].grouped);
    CHECK(e.format == want[i].format);
    CHECK(e.k_bits == 4);
    CHECK(e.dtype == "fp16");
  }
  CHECK(a.entries[0].config == "[cluster_end=1 tagged_end=1] stripes of 4 k-tiles");
  CHECK(a.entries[4].config == "tile 64, x");  // a quoted CSV field
  CHECK(a.entries[7].experts == 64);
  CHECK(a.entries[7].N == 512);
  CHECK(a.entries[7].K_dim == 2048);

  const DispatchTable& b = ts[1];
  CHECK(b.gpu == kGpuB);
  REQUIRE(b.entries.size() == 1);
  CHECK(b.entries[0].variant == "fetch_dequant");
  CHECK(b.entries[0].median_us == 20.0);
}

TEST_CASE("dispatch tables round-trip through their TOML file", "[dispatch]") {
  TempDir tmp;
  CHECK(dispatch_file_name(kGpuA) == "Test_GPU_A100_X.toml");
  CHECK(dispatch_file_name("NVIDIA H100 80GB HBM3") == "NVIDIA_H100_80GB_HBM3.toml");
  const std::string path = tmp.path + "/sub/" + dispatch_file_name(kGpuA);
  write_dispatch_table(table_a(), path);
  const DispatchTable t = read_dispatch_table(path);
  CHECK(t.gpu == kGpuA);
  CHECK(t.runs == table_a().runs);
  REQUIRE(t.entries.size() == table_a().entries.size());
  for (std::size_t i = 0; i < t.entries.size(); ++i) {
    const DispatchEntry &x = t.entries[i], &y = table_a().entries[i];
    INFO(i);
    CHECK(x.shape == y.shape);
    CHECK(x.M == y.M);
    CHECK(x.N == y.N);
    CHECK(x.K_dim == y.K_dim);
    CHECK(x.experts == y.experts);
    CHECK(x.grouped == y.grouped);
    CHECK(x.variant == y.variant);
    CHECK(x.config == y.config);
    CHECK(x.median_us == y.median_us);
    CHECK(x.run == y.run);
    CHECK(x.line == y.line);
    CHECK(x.format == y.format);
  }
  std::ostringstream shown;
  print_dispatch_table(t, path, shown);
  CHECK_THAT(shown.str(), Catch::Contains("gpu: Test GPU A100-X; 12 entries from 2 runs"));
  CHECK_THAT(shown.str(), Catch::Contains("awq_g128  4 fp16  dense   test.big"));
  {  // every entry says its format
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    CHECK_THAT(text.str(), Catch::Contains("{ format = \"awq_g32\", k_bits = 4,") &&
                               Catch::Contains("{ format = \"kbit\", k_bits = 4,"));
  }
  CHECK_THAT(shown.str(), Catch::Contains(kBeta + ":3"));
  CHECK_THAT(shown.str(), Catch::Contains("fallback: "));

  std::ofstream(tmp.path + "/bad.toml")
      << "gpu = \"x\"\nruns = []\nentries = [\n  { k_bits = 4 },\n]\n";
  CHECK_THROWS_WITH(read_dispatch_table(tmp.path + "/bad.toml"),
                    Catch::Contains("bad.toml:4") && Catch::Contains("'dtype' is missing"));
}

TEST_CASE("dispatch build refuses a CURRENT that names no run folder", "[dispatch]") {
  TempDir tmp;
  CHECK_THROWS_WITH(build_dispatch_tables(tmp.path),
                    Catch::Contains("no results/<experiment>/CURRENT"));
  fs::create_directories(tmp.path + "/exp");
  std::ofstream(tmp.path + "/exp/CURRENT") << "20260101T000000Z_missing\n";
  CHECK_THROWS_WITH(build_dispatch_tables(tmp.path),
                    Catch::Contains("20260101T000000Z_missing") && Catch::Contains("exp/CURRENT"));
}

TEST_CASE("dispatch lookup: exact entry, then the nearest measured M above, then below",
          "[dispatch]") {
  const DispatchTable& t = table_a();
  DispatchChoice c = choose_variant(&t, dense(4096, 4096, 16), 90);
  CHECK(c.variant == "warp_specialized");
  CHECK_THAT(c.reason, Catch::StartsWith("exact: test.big M = 16"));

  c = choose_variant(&t, dense(4096, 4096, 20), 90);
  CHECK(c.variant == "fetch_dequant");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 64 for M = 20"));

  c = choose_variant(&t, dense(4096, 4096, 2), 90);
  CHECK(c.variant == "warp_specialized");  // M = 16 is the nearest at or above 2
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 16"));

  c = choose_variant(&t, dense(4096, 4096, 1000), 90);
  CHECK(c.variant == "fetch_dequant");  // nothing at or above: the largest below
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 256 for M = 1000"));
}

TEST_CASE("dispatch lookup: grouped problems take the crossover rule, never the table",
          "[dispatch]") {
  const DispatchTable& t = table_a();  // has a grouped_scalar_gemv entry at test.moe M = 8
  const double x = variants::kGroupedMmaFromRowsPerExpert;
  const int experts = 64;
  const auto below = std::int64_t(std::ceil(x * experts)) - 1;  // just under x rows per expert
  const auto at = std::int64_t(std::ceil(x * experts));
  for (const DispatchTable* table : {&t, static_cast<const DispatchTable*>(nullptr)}) {
    DispatchChoice c = choose_variant(table, moe(512, 2048, experts, below), 90);
    CHECK(c.variant == "grouped_scalar_gemv");
    CHECK_THAT(c.reason, Catch::StartsWith("crossover rule: "));
    c = choose_variant(table, moe(512, 2048, experts, at), 90);
    CHECK(c.variant == "grouped_mma");
    CHECK_THAT(c.reason, Catch::Contains("rows per expert, grouped_mma from"));
    c = choose_variant(table, moe(512, 2048, experts, 8192 * 8), 90);
    CHECK(c.variant == "grouped_mma");
  }
  // Past grouped_mma's own limits (experts, M x N) the rule keeps grouped_scalar_gemv.
  CHECK(choose_variant(&t, moe(512, 2048, variants::kGroupedMmaMaxExperts + 1, 1 << 20), 90)
            .variant == "grouped_scalar_gemv");
  CHECK(choose_variant(&t, moe(4096, 2048, experts, 1 << 20), 90).variant == "grouped_scalar_gemv");
  // grouped_mma and grouped_scalar_gemv need compute capability 9.0.
  CHECK_THROWS_WITH(choose_variant(&t, moe(512, 2048, experts, at), 80),
                    Catch::Contains("no variant an auto row may run") &&
                        Catch::Contains("compute capability 8.0"));
}

TEST_CASE("dispatch lookup: the nearest shape by log(N*K_dim), then the M rule", "[dispatch]") {
  const DispatchTable& t = table_a();
  // 3000 x 4096 is nearer 4096 x 4096 than 1024 x 1024.
  DispatchChoice c = choose_variant(&t, dense(3000, 4096, 1), 90);
  CHECK(c.variant == "scalar_gemv");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest shape: test.big M = 1 (N = 4096"));
  // 1024 x 2048 is nearer 1024 x 1024; its M = 4 entry is the nearest at or above 3.
  c = choose_variant(&t, dense(1024, 2048, 3), 90);
  CHECK(c.variant == "scalar_gemv");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest shape: test.small M = 4"));
}

TEST_CASE("dispatch lookup: a choice whose Support does not cover the problem falls through",
          "[dispatch]") {
  const DispatchTable& t = table_a();
  // test.small has only scalar_gemv at M = 1 and 4, which does not cover M = 8: the nearest
  // shape, test.big, answers by its M rule.
  DispatchChoice c = choose_variant(&t, dense(1024, 1024, 8), 90);
  CHECK(c.variant == "warp_specialized");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest shape: test.big M = 16"));
  // warp_specialized needs compute capability 9.0: on 8.0 the exact entry is passed over.
  c = choose_variant(&t, dense(4096, 4096, 16), 80);
  CHECK(c.variant == "fetch_dequant");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 64"));
  // Rows an auto row may not run (a baseline, a probe, a row the registry lost) are passed over.
  DispatchTable odd;
  odd.gpu = kGpuA;
  for (const char* v : {"cublas_fp16", "read_bulk", "gone_variant", "auto"}) {
    DispatchEntry e;
    e.k_bits = 4, e.dtype = "fp16", e.shape = "x", e.N = 256, e.K_dim = 256, e.M = 1;
    e.variant = v;
    e.median_us = 1;
    odd.entries.push_back(e);
  }
  c = choose_variant(&odd, dense(256, 256, 1), 90);
  CHECK(c.variant == "scalar_gemv");
  CHECK(c.reason == "fixed rule: no entry's variant covers the problem");
}

TEST_CASE("dispatch lookup: the fixed rule without a table or an entry of the K and dtype",
          "[dispatch]") {
  const DispatchTable& t = table_a();
  DispatchChoice c = choose_variant(&t, dense(4096, 4096, 1, 2), 90);
  CHECK(c.variant == "scalar_gemv");
  CHECK(c.reason == "fixed rule: the table has no K = 2 fp16 dense entry");
  CHECK(choose_variant(&t, dense(4096, 4096, 64, 2), 90).variant == "warp_specialized");
  CHECK(choose_variant(&t, dense(4096, 4096, 64, 2), 80).variant == "fetch_dequant");
  CHECK(choose_variant(&t, dense(4096, 4096, 4, 2), 80).variant == "fetch_dequant");
  CHECK(choose_variant(&t, dense(4096, 4096, 5, 4, DType::bf16), 90).variant == "warp_specialized");
  CHECK(choose_variant(&t, moe(512, 2048, 64, 8, 3), 90).variant == "grouped_scalar_gemv");
  c = choose_variant(nullptr, dense(4096, 4096, 4), 90, "no table for GPU 'X'");
  CHECK(c.variant == "scalar_gemv");
  CHECK(c.reason == "fixed rule: no table for GPU 'X'");
  CHECK(choose_variant(nullptr, dense(4096, 4096, 5), 90).variant == "warp_specialized");
  CHECK_THROWS_WITH(choose_variant(nullptr, moe(512, 2048, 64, 8), 80),
                    Catch::Contains("no variant an auto row may run") &&
                        Catch::Contains("compute capability 8.0"));
}

TEST_CASE("dispatch refuses a table recorded for another GPU, naming both", "[dispatch]") {
  TempDir tmp;
  write_dispatch_table(table_a(), tmp.path + "/" + dispatch_file_name(kGpuB));
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  CHECK_THROWS_WITH(tables.choose(dense(4096, 4096, 16), kGpuB, 90),
                    Catch::Contains("'" + kGpuA + "'") && Catch::Contains("'" + kGpuB + "'"));
  CHECK(notes.str().empty());
}

TEST_CASE("dispatch without a table takes the fixed rule and says so once", "[dispatch]") {
  TempDir tmp;
  write_dispatch_table(table_a(), tmp.path + "/" + dispatch_file_name(kGpuA));
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  DispatchChoice c = tables.choose(dense(4096, 4096, 16), kGpuA, 90);
  CHECK(c.variant == "warp_specialized");
  CHECK(notes.str().empty());
  c = tables.choose(dense(4096, 4096, 16), "Test GPU C", 90);
  CHECK(c.variant == "warp_specialized");
  CHECK(c.reason == "fixed rule: no table for GPU 'Test GPU C'");
  c = tables.choose(dense(4096, 4096, 1), "Test GPU C", 90);
  CHECK(c.variant == "scalar_gemv");
  c = tables.choose(moe(512, 2048, 64, 8), "Test GPU D", 90);
  CHECK(c.variant == "grouped_scalar_gemv");
  const std::string n = notes.str();
  CHECK(std::count(n.begin(), n.end(), '\n') == 1);
  CHECK_THAT(n, Catch::StartsWith("dispatch: no table for GPU 'Test GPU C' (" + tmp.path + "/" +
                                  dispatch_file_name("Test GPU C") + ")"));
}

TEST_CASE("dispatch rows: auto and grouped_auto pick rows of kbit weights in any layout",
          "[dispatch]") {
  const VariantRow& a = find_variant("auto");
  const VariantRow& g = find_variant("grouped_auto");
  CHECK(a.support.dense);
  CHECK_FALSE(a.support.grouped);
  CHECK_FALSE(g.support.dense);
  CHECK(g.support.grouped);
  CHECK_FALSE(a.support.pdl);  // the table's rows were timed with plain launches
  for (const VariantRow* r : {&a, &g}) {
    INFO(r->name);
    // The split mode is forwarded: every row an auto row may pick honours it (or never splits:
    // grouped_mma, whose validate compares bits on every call), or validate's bit comparison
    // with split-K "off" would see a splitting row's atomics.
    CHECK(r->support.split_k);
    for (const VariantRow& x : registry())
      if (auto_may_pick(x) && (x.support.grouped == r->support.grouped) && x.name != "grouped_mma")
        CHECK(x.support.split_k);
  }
  for (const char* name : {"scalar_gemv", "fetch_dequant", "warp_specialized", "fragment_mma",
                           "grouped_scalar_gemv", "grouped_mma"}) {
    INFO(name);
    CHECK(auto_may_pick(find_variant(name)));
  }
  CHECK(find_variant("fragment_mma").layout.kind == LayoutKind::fragment);
  // Never a baseline, probe or auto row; never a row of AWQ weights (the auto rows run kbit).
  for (const char* name : {"auto", "grouped_auto", "cublas_fp16", "read_bulk", "cublas_grouped",
                           "awq_gemv", "awq_gemm"}) {
    INFO(name);
    CHECK_FALSE(auto_may_pick(find_variant(name)));
  }
  for (const VariantRow& x : registry()) {
    INFO(x.name);
    if (!auto_may_pick(x)) continue;
    CHECK(x.support.kbit);
    CHECK(x.layout.kind != LayoutKind::awq);
    CHECK(x.layout.kind != LayoutKind::awq_tiled);
  }
}

TEST_CASE("dispatch rows: the state describes the choice and forwards the chosen row's",
          "[dispatch]") {
  const VariantRow& row = find_variant("scalar_gemv");
  AutoState s("auto", row, {"scalar_gemv", "exact: x M = 1, 2.00 us"}, resolve_options(row, {}),
              std::make_unique<FakeState>());
  CHECK(s.describe() ==
        "auto -> scalar_gemv (exact: x M = 1, 2.00 us): [cluster_end=1 tagged_end=1] tile 1");
  CHECK(s.extra_additions() == 7);
  CHECK(&s.chosen() == &row);
}

namespace {

const std::string kGpuH = "Test GPU H";
const WeightLayout kFragment{LayoutKind::fragment, {}};
const WeightLayout kTiled{LayoutKind::tiled, {64, 128}};

GemmDims gemm(std::int64_t m, int k_bits = 4) {
  GemmDims d;
  d.M = m, d.N = 4096, d.K_dim = 4096, d.k_bits = k_bits, d.dtype = DType::f16;
  return d;
}

DispatchEntry entry(const char* variant, std::int64_t m, int k_bits = 4) {
  DispatchEntry e;
  e.k_bits = k_bits, e.dtype = "fp16", e.shape = "x", e.N = 4096, e.K_dim = 4096, e.M = m;
  e.variant = variant;
  e.median_us = 10;
  e.run = "exp/run";
  e.line = 2;
  return e;
}

// A table of "Test GPU H" in `dir`: at K = 4 fragment_mma at M = 16 and warp_specialized at
// M = 256; at K = 5 scalar_gemv (which runs M = 1..4: an entry its row does not cover) at M = 16
// and warp_specialized at M = 64.
void write_table_h(const std::string& dir) {
  DispatchTable t;
  t.gpu = kGpuH;
  t.runs = {"exp/run"};
  t.entries = {entry("scalar_gemv", 16, 5), entry("warp_specialized", 64, 5),
               entry("fragment_mma", 16), entry("warp_specialized", 256)};
  write_dispatch_table(t, dir + "/" + dispatch_file_name(kGpuH));
}

}  // namespace

TEST_CASE("dispatch rows: a table naming fragment_mma makes auto read the fragment layout",
          "[dispatch]") {
  TempDir tmp;
  write_table_h(tmp.path);
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  const VariantRow& a = find_variant("auto");
  CHECK(row_layout(a, gemm(16), tables, kGpuH, 90) == kFragment);  // the exact entry
  CHECK(row_layout(a, gemm(8), tables, kGpuH, 90) == kFragment);   // nearest M at or above
  CHECK(row_layout(a, gemm(64), tables, kGpuH, 90) == kTiled);     // warp_specialized at 256
  CHECK(row_layout(a, gemm(1000), tables, kGpuH, 90) == kTiled);   // the largest below
  // The layout is the chosen row's: what auto's setup runs on the same lookup.
  for (std::int64_t m : {1, 8, 16, 64, 1000})
    CHECK(row_layout(a, gemm(m), tables, kGpuH, 90) ==
          find_variant(tables.choose(dispatch_problem(gemm(m)), kGpuH, 90).variant).layout);
  // Every other row reads its own layout whatever the table says.
  CHECK(row_layout(find_variant("warp_specialized"), gemm(16), tables, kGpuH, 90) == kTiled);
  CHECK(row_layout(find_variant("fragment_mma"), gemm(1000), tables, kGpuH, 90) == kFragment);
  CHECK(row_layout(find_variant("cublas_fp16"), gemm(16), tables, kGpuH, 90).kind ==
        LayoutKind::dequantized);
  // A problem the auto row does not run (AWQ weights) is not looked up: its own layout.
  GemmDims awq = gemm(16);
  awq.awq_group = 128;
  CHECK(row_layout(a, awq, tables, kGpuH, 90) == a.layout);
  // grouped_auto's rows read tiled 64x128.
  GemmDims moe = gemm(64 * 8);
  moe.num_experts = 64;
  CHECK(row_layout(find_variant("grouped_auto"), moe, tables, kGpuH, 90) == kTiled);
  CHECK(notes.str().empty());
  CHECK(row_layout_name(a) == "chosen row's");
  CHECK(row_layout_name(find_variant("fragment_mma")) == "fragment");
}

TEST_CASE("dispatch rows: a problem that falls to the fixed rule keeps the tiled layout",
          "[dispatch]") {
  TempDir tmp;
  write_table_h(tmp.path);
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  const VariantRow& a = find_variant("auto");
  // No K = 2 entry: warp_specialized (M >= 5) or scalar_gemv (M <= 4), both tiled.
  CHECK_THAT(tables.choose(dispatch_problem(gemm(16, 2)), kGpuH, 90).reason,
             Catch::StartsWith("fixed rule: "));
  CHECK(row_layout(a, gemm(16, 2), tables, kGpuH, 90) == kTiled);
  CHECK(row_layout(a, gemm(1, 2), tables, kGpuH, 90) == kTiled);
  // No table for the GPU: the fixed rule at K = 4 too, noted once.
  CHECK(row_layout(a, gemm(16), tables, "Test GPU none", 90) == kTiled);
  CHECK(row_layout(a, gemm(1), tables, "Test GPU none", 90) == kTiled);
  CHECK_THAT(notes.str(), Catch::StartsWith("dispatch: no table for GPU 'Test GPU none'"));
}

TEST_CASE(
    "dispatch rows: an entry whose row does not cover the problem falls through, layout "
    "too",
    "[dispatch]") {
  TempDir tmp;
  write_table_h(tmp.path);
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  const VariantRow& a = find_variant("auto");
  // K = 5: the exact entry names scalar_gemv (M = 1..4): passed over for the same shape's nearest
  // M, warp_specialized at 64, and its layout.
  const DispatchChoice c = tables.choose(dispatch_problem(gemm(16, 5)), kGpuH, 90);
  CHECK(c.variant == "warp_specialized");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: x M = 64 for M = 16"));
  CHECK(row_layout(a, gemm(16, 5), tables, kGpuH, 90) == kTiled);
  // Compute capability 8.0: fragment_mma and warp_specialized (9.0) are passed over; the fixed
  // rule's fetch_dequant reads tiled 64x128.
  CHECK(tables.choose(dispatch_problem(gemm(16)), kGpuH, 80).variant == "fetch_dequant");
  CHECK(row_layout(a, gemm(16), tables, kGpuH, 80) == kTiled);
  CHECK(notes.str().empty());
}

TEST_CASE("dispatch build keeps a fragment_mma row (the fragment layout) as a candidate",
          "[dispatch]") {
  const DispatchTable& t = table_a();
  const auto it = std::find_if(t.entries.begin(), t.entries.end(), [](const DispatchEntry& e) {
    return e.shape == "test.big" && e.M == 128;
  });
  REQUIRE(it != t.entries.end());
  CHECK(it->variant == "fragment_mma");
  CHECK(it->median_us == 45.0);  // not the PDL-timed 30.0 nor the token_tile=64 35.0
  CHECK(it->line == 22);
  CHECK(it->config == "[token_tile=0] tile 128 tokens");
  // auto picks it there, and the harness builds the fragment layout for it.
  TempDir tmp;
  write_dispatch_table(t, tmp.path + "/" + dispatch_file_name(kGpuA));
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  const DispatchChoice c = tables.choose(dispatch_problem(gemm(128)), kGpuA, 90);
  CHECK(c.variant == "fragment_mma");
  CHECK_THAT(c.reason, Catch::StartsWith("exact: test.big M = 128"));
  CHECK(row_layout(find_variant("auto"), gemm(128), tables, kGpuA, 90) == kFragment);
  CHECK(row_layout(find_variant("auto"), gemm(64), tables, kGpuA, 90) == kTiled);  // fetch_dequant
}

namespace {

const WeightLayout kAwq{LayoutKind::awq, {}};
const WeightLayout kAwqTiled{LayoutKind::awq_tiled, {}};

DispatchProblem awq(std::int64_t n, std::int64_t k_dim, std::int64_t m, int group = 128,
                    DType t = DType::f16) {
  DispatchProblem p = dense(n, k_dim, m, 4, t);
  p.awq_group = group;
  return p;
}

GemmDims awq_gemm_dims(std::int64_t m, int group = 128) {
  GemmDims d = gemm(m);
  d.awq_group = group;
  return d;
}

}  // namespace

TEST_CASE("awq_auto lookup: the exact entry, then the nearest M, among entries of its format",
          "[dispatch][awq]") {
  const DispatchTable& t = table_a();
  DispatchChoice c = choose_variant(&t, awq(4096, 4096, 16), 90);
  CHECK(c.variant == "awq_fragment_mma");
  CHECK(c.reason == "exact: test.big M = 16, 50.00 us");
  c = choose_variant(&t, awq(4096, 4096, 1), 90);
  CHECK(c.variant == "awq_gemv");
  CHECK_THAT(c.reason, Catch::StartsWith("exact: test.big M = 1"));
  c = choose_variant(&t, awq(4096, 4096, 20), 90);  // nothing at 64: awq_gemm at 256
  CHECK(c.variant == "awq_gemm");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 256 for M = 20"));
  c = choose_variant(&t, awq(4096, 4096, 2), 90);
  CHECK(c.variant == "awq_fragment_mma");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 16 for M = 2"));
  c = choose_variant(&t, awq(4096, 4096, 1000), 90);
  CHECK(c.variant == "awq_gemm");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: test.big M = 256 for M = 1000"));
  // Another shape: the nearest AWQ shape of the format (test.big), not the kbit test.small.
  c = choose_variant(&t, awq(1024, 1024, 1), 90);
  CHECK(c.variant == "awq_gemv");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest shape: test.big M = 1"));
  // Group 32 reads its own entry (awq_gemm), never group 128's; group 64 has none.
  c = choose_variant(&t, awq(4096, 4096, 16, 32), 90);
  CHECK(c.variant == "awq_gemm");
  CHECK(c.reason == "exact: test.big M = 16, 80.00 us");
  c = choose_variant(&t, awq(4096, 4096, 16, 64), 90);
  CHECK(c.variant == "awq_fragment_mma");
  CHECK(c.reason == "fixed rule: the table has no awq_g64 fp16 dense entry");
}

TEST_CASE("awq_auto's fixed rule: awq_gemv to M = 4, awq_fragment_mma to 128, awq_gemm above",
          "[dispatch][awq]") {
  struct Want {
    std::int64_t M;
    const char* variant;
  };
  for (const Want w : {Want{1, "awq_gemv"}, Want{4, "awq_gemv"}, Want{5, "awq_fragment_mma"},
                       Want{16, "awq_fragment_mma"}, Want{128, "awq_fragment_mma"},
                       Want{129, "awq_gemm"}, Want{300, "awq_gemm"}}) {
    INFO("M = " << w.M);
    const DispatchChoice c = choose_variant(nullptr, awq(4096, 4096, w.M), 90, "no table for 'X'");
    CHECK(c.variant == w.variant);
    CHECK(c.reason == "fixed rule: no table for 'X'");
  }
  // Where the sm_90a rows do not run: awq_gemv at M <= 4 and nothing else.
  CHECK(choose_variant(nullptr, awq(4096, 4096, 3), 80).variant == "awq_gemv");
  CHECK_THROWS_WITH(choose_variant(nullptr, awq(4096, 4096, 16), 80),
                    Catch::Contains("awq_g128 fp16 dense N = 4096 K_dim = 4096 M = 16") &&
                        Catch::Contains("on compute capability 8.0") &&
                        Catch::Contains("9.0 only"));
  // AWQ rows are fp16: a bf16 AWQ problem has none.
  CHECK_THROWS_WITH(choose_variant(nullptr, awq(4096, 4096, 16, 128, DType::bf16), 90),
                    Catch::Contains("no variant an auto row may run covers awq_g128 bf16"));
}

TEST_CASE("dispatch lookup: an AWQ entry never answers a kbit problem, nor a kbit one an AWQ",
          "[dispatch][awq]") {
  const DispatchTable& t = table_a();  // kbit and AWQ entries at test.big M = 1 and 16
  CHECK(choose_variant(&t, dense(4096, 4096, 1), 90).variant == "scalar_gemv");
  CHECK(choose_variant(&t, dense(4096, 4096, 16), 90).variant == "warp_specialized");
  CHECK(choose_variant(&t, awq(4096, 4096, 16), 90).variant == "awq_fragment_mma");
  // A table of one format answers the other's problems by the fixed rule.
  DispatchTable awq_only = t, kbit_only = t;
  awq_only.entries.clear(), kbit_only.entries.clear();
  for (const DispatchEntry& e : t.entries)
    (e.format == "kbit" ? kbit_only : awq_only).entries.push_back(e);
  DispatchChoice c = choose_variant(&awq_only, dense(4096, 4096, 16), 90);
  CHECK(c.variant == "warp_specialized");
  CHECK(c.reason == "fixed rule: the table has no K = 4 fp16 dense entry");
  c = choose_variant(&kbit_only, awq(4096, 4096, 1000), 90);
  CHECK(c.variant == "awq_gemm");
  CHECK(c.reason == "fixed rule: the table has no awq_g128 fp16 dense entry");
  // An entry labelled with the problem's format but naming a row of the other is passed over.
  DispatchTable mixed;
  mixed.gpu = kGpuA;
  DispatchEntry k = entry("awq_gemv", 1), a = entry("warp_specialized", 16);
  a.format = "awq_g128";
  mixed.entries = {k, a};
  c = choose_variant(&mixed, dense(4096, 4096, 1), 90);
  CHECK(c.variant == "scalar_gemv");
  CHECK(c.reason == "fixed rule: no entry's variant covers the problem");
  c = choose_variant(&mixed, awq(4096, 4096, 16), 90);
  CHECK(c.variant == "awq_fragment_mma");
  CHECK(c.reason == "fixed rule: no entry's variant covers the problem");
  // No registry row is both: auto runs kbit rows, awq_auto AWQ ones.
  for (const VariantRow& x : registry()) {
    INFO(x.name);
    CHECK_FALSE((auto_may_pick(x) && awq_auto_may_pick(x)));
    if (awq_auto_may_pick(x)) {
      CHECK(bool(x.layout.kind == LayoutKind::awq || x.layout.kind == LayoutKind::awq_tiled));
      CHECK(x.support.split_k);  // awq_auto forwards the split mode (validate forces it)
    }
  }
  for (const char* name : {"awq_gemv", "awq_gemm", "awq_fragment_mma"})
    CHECK(awq_auto_may_pick(find_variant(name)));
  for (const char* name : {"awq_auto", "auto", "cublas_fp16", "scalar_gemv", "fragment_mma"})
    CHECK_FALSE(awq_auto_may_pick(find_variant(name)));
}

TEST_CASE("dispatch rows: awq_auto runs AWQ problems in its chosen row's layout",
          "[dispatch][awq]") {
  const VariantRow& w = find_variant("awq_auto");
  CHECK(w.family == Family::gemm);
  CHECK_FALSE(w.support.kbit);
  CHECK(w.support.awq_groups == std::vector<int>{32, 64, 128});
  CHECK(w.support.dtypes == std::vector<DType>{DType::f16});
  CHECK(w.support.dense);
  CHECK_FALSE(w.support.grouped);
  CHECK(w.support.min_sm == find_variant("awq_gemm").support.min_sm);
  CHECK(w.support.split_k);
  CHECK_FALSE(w.support.pdl);
  CHECK(is_auto_row("awq_auto"));
  CHECK_THAT(unsupported_reason(w, gemm(16), 90), Catch::Contains("the weights are kbit"));
  CHECK_THAT(unsupported_reason(find_variant("auto"), awq_gemm_dims(16), 90),
             Catch::Contains("weights are awq_g128"));
  // The setups refuse the other format before looking anything up.
  CHECK_THROWS_WITH(awq_auto_setup(gemm(16), {}),
                    Catch::Contains("awq_auto runs AWQ problems; the weights are kbit"));
  CHECK_THROWS_WITH(auto_setup(awq_gemm_dims(16), {}),
                    Catch::Contains("auto runs kbit problems; the weights are awq_g128"));

  TempDir tmp;
  write_dispatch_table(table_a(), tmp.path + "/" + dispatch_file_name(kGpuA));
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  CHECK(row_layout(w, awq_gemm_dims(1), tables, kGpuA, 90) == kAwq);         // awq_gemv
  CHECK(row_layout(w, awq_gemm_dims(16), tables, kGpuA, 90) == kAwqTiled);   // awq_fragment_mma
  CHECK(row_layout(w, awq_gemm_dims(500), tables, kGpuA, 90) == kAwqTiled);  // awq_gemm
  CHECK(row_layout(w, gemm(16), tables, kGpuA, 90) == w.layout);  // a problem it does not run
  CHECK(row_layout(find_variant("auto"), gemm(1), tables, kGpuA, 90) == kTiled);  // scalar_gemv
  // No table: the fixed rule's rows' layouts.
  CHECK(row_layout(w, awq_gemm_dims(2), tables, "Test GPU none", 90) == kAwq);
  CHECK(row_layout(w, awq_gemm_dims(64), tables, "Test GPU none", 90) == kAwqTiled);
  CHECK(row_layout_name(w) == "chosen row's");

  const VariantRow& chosen = find_variant("awq_fragment_mma");
  AutoState s("awq_auto", chosen, {"awq_fragment_mma", "exact: test.big M = 16, 50.00 us"},
              resolve_options(chosen, {}), std::make_unique<FakeState>());
  CHECK_THAT(s.describe(),
             Catch::StartsWith("awq_auto -> awq_fragment_mma (exact: test.big M = 16, 50.00 us): "
                               "[token_tile=0 ") &&
                 Catch::EndsWith("] tile 1"));
}

TEST_CASE("dispatch rows: auto_run refuses weights not in the chosen row's layout and names both",
          "[dispatch]") {
  // auto's lookup on table H picks fragment_mma at M = 16 and warp_specialized at M = 64, and the
  // harness builds each problem's chosen layout (row_layout): weights built for one problem are
  // refused by the state set up for the other, before the chosen row's run is reached.
  TempDir tmp;
  write_table_h(tmp.path);
  std::ostringstream notes;
  DispatchTables tables(tmp.path, notes);
  const VariantRow& a = find_variant("auto");
  CHECK(a.run == &auto_run);
  CHECK(find_variant("grouped_auto").run == &auto_run);
  CHECK(find_variant("awq_auto").run == &auto_run);
  for (const auto& [m, other] : {std::pair<std::int64_t, std::int64_t>{16, 64}, {64, 16}}) {
    const GemmDims d = gemm(m);
    const DispatchChoice c = tables.choose(dispatch_problem(d), kGpuH, 90);
    const VariantRow& chosen = find_variant(c.variant);
    INFO("M = " << m << " -> " << c.variant);
    REQUIRE(row_layout(a, d, tables, kGpuH, 90) == chosen.layout);
    const WeightLayout built = row_layout(a, gemm(other), tables, kGpuH, 90);
    REQUIRE_FALSE(built == chosen.layout);
    AutoState s("auto", chosen, c, resolve_options(chosen, {}), std::make_unique<FakeState>());
    GemmArgs args;
    args.w.layout = built;
    CHECK_THROWS_AS(a.run(&s, d, args, nullptr), Error);
    CHECK_THROWS_WITH(a.run(&s, d, args, nullptr),
                      "auto_run: the weights are in layout '" + layout_name(built) + "'; " +
                          c.variant + " reads '" + layout_name(chosen.layout) +
                          "' (build the layout row_layout names for the problem)");
  }
  CHECK(notes.str().empty());

  // Every auto row, the same check: another kind of layout, or the tiled one at other tiles.
  struct Want {
    const char* auto_row;
    const char* chosen;
    WeightLayout given;
    const char* given_name;
    const char* chosen_name;
  };
  GemmDims moe = gemm(64 * 8);
  moe.num_experts = 8;
  for (const Want& w : {Want{"auto",
                             "warp_specialized",
                             {LayoutKind::tiled, {128, 128}},
                             "tiled 128x128",
                             "tiled 64x128"},
                        Want{"auto", "scalar_gemv", {LayoutKind::flat, {}}, "flat", "tiled 64x128"},
                        Want{"grouped_auto", "grouped_mma", kFragment, "fragment", "tiled 64x128"},
                        Want{"awq_auto", "awq_gemv", kAwqTiled, "awq tiled", "awq"},
                        Want{"awq_auto", "awq_gemm", kAwq, "awq", "awq tiled"}}) {
    INFO(w.auto_row << " -> " << w.chosen << " on " << w.given_name);
    const VariantRow& chosen = find_variant(w.chosen);
    REQUIRE(layout_name(chosen.layout) == w.chosen_name);
    AutoState s(w.auto_row, chosen, {w.chosen, "exact: x"}, resolve_options(chosen, {}),
                std::make_unique<FakeState>());
    GemmArgs args;
    args.w.layout = w.given;
    const GemmDims d = std::string(w.auto_row) == "grouped_auto" ? moe
                       : std::string(w.auto_row) == "awq_auto"   ? awq_gemm_dims(16)
                                                                 : gemm(16);
    CHECK_THROWS_WITH(find_variant(w.auto_row).run(&s, d, args, nullptr),
                      std::string("auto_run: the weights are in layout '") + w.given_name + "'; " +
                          w.chosen + " reads '" + w.chosen_name +
                          "' (build the layout row_layout names for the problem)");
  }
  // A state that is not an auto row's is refused too, before anything runs.
  FakeState plain;
  GemmArgs args;
  args.w.layout = kTiled;
  CHECK_THROWS_WITH(auto_run(&plain, gemm(16), args, nullptr),
                    "auto_run: the state was not made by an auto row's setup");
}

TEST_CASE("dispatch rows: grouped_auto refuses AWQ problems before looking anything up",
          "[dispatch][awq]") {
  const VariantRow& g = find_variant("grouped_auto");
  CHECK(g.support.awq_groups.empty());
  for (int group : {32, 64, 128}) {
    INFO("group " << group);
    GemmDims d = awq_gemm_dims(64 * 8, group);
    d.num_experts = 8;
    for (int e = 0; e <= 8; ++e) d.expert_offsets.push_back(64 * e);
    const std::string format = weight_format_name(group);
    // The registry's check (what run and validate ask before any GPU work) ...
    CHECK(unsupported_reason(g, d, 90) ==
          "weights are " + format + "; this row reads kbit weights");
    CHECK(unsupported_reason(g, d, 0) == "weights are " + format + "; this row reads kbit weights");
    // ... and the setup's own, before the lookup (which asks the device its name): exactly this
    // message, not a lookup's or a device query's.
    CHECK_THROWS_WITH(grouped_auto_setup(d, {}),
                      "grouped_auto runs kbit problems; the weights are " + format);
    CHECK_THROWS_WITH(g.setup(d, {}), "grouped_auto runs kbit problems; the weights are " + format);
  }
}

TEST_CASE("dispatch lookup: two shape names of the same dimensions at one M, the faster answers",
          "[dispatch]") {
  // The same (N, K_dim) timed under two layer names: at the same M the faster entry answers,
  // whichever the table lists first.
  for (const bool ws_faster : {false, true}) {
    INFO("warp_specialized faster: " << ws_faster);
    DispatchTable t;
    t.gpu = kGpuA;
    DispatchEntry one = entry("warp_specialized", 16), two = entry("fetch_dequant", 16);
    one.shape = "layer.one", two.shape = "layer.two";
    one.median_us = ws_faster ? 10 : 20;
    two.median_us = ws_faster ? 20 : 10;
    t.entries = {one, two};
    const char* fastest = ws_faster ? "warp_specialized" : "fetch_dequant";
    CHECK(choose_variant(&t, dense(4096, 4096, 16), 90).variant == fastest);
    t.entries = {two, one};
    CHECK(choose_variant(&t, dense(4096, 4096, 16), 90).variant == fastest);
  }
}

TEST_CASE("dispatch lookup: the problem's own shape before another of the same N*K_dim",
          "[dispatch]") {
  // 4096 x 1024 and 1024 x 4096 are equally far by |log(N*K_dim) difference|: each problem takes
  // the entry of its own shape.
  DispatchTable t;
  t.gpu = kGpuA;
  DispatchEntry wide = entry("fetch_dequant", 16), tall = entry("warp_specialized", 16);
  wide.shape = "wide", wide.N = 4096, wide.K_dim = 1024;
  tall.shape = "tall", tall.N = 1024, tall.K_dim = 4096;
  t.entries = {wide, tall};
  DispatchChoice c = choose_variant(&t, dense(4096, 1024, 16), 90);
  CHECK(c.variant == "fetch_dequant");
  CHECK_THAT(c.reason, Catch::StartsWith("exact: wide M = 16"));
  c = choose_variant(&t, dense(1024, 4096, 16), 90);
  CHECK(c.variant == "warp_specialized");
  CHECK_THAT(c.reason, Catch::StartsWith("exact: tall M = 16"));
  // At another M the own shape's M rule answers, not the other shape's exact M.
  wide.M = 64;
  t.entries = {wide, tall};
  c = choose_variant(&t, dense(4096, 1024, 16), 90);
  CHECK(c.variant == "fetch_dequant");
  CHECK_THAT(c.reason, Catch::StartsWith("nearest M: wide M = 64 for M = 16"));
}

TEST_CASE("dispatch lookup: entries of another dtype never answer", "[dispatch]") {
  // table_a holds fp16 entries only: a bf16 problem takes the fixed rule, not test.big's fp16
  // entry (fetch_dequant at M = 64, the nearest at or above 20).
  const DispatchTable& t = table_a();
  const DispatchChoice c = choose_variant(&t, dense(4096, 4096, 20, 4, DType::bf16), 90);
  CHECK(c.variant == "warp_specialized");
  CHECK(c.reason == "fixed rule: the table has no K = 4 bf16 dense entry");
  CHECK(choose_variant(&t, dense(4096, 4096, 20), 90).variant == "fetch_dequant");
}

TEST_CASE("dispatch lookup: the fixed rule above compute capability 9.0", "[dispatch][awq]") {
  // warp_specialized, awq_fragment_mma and awq_gemm are sm_90a kernels: on a device above 9.0
  // dense problems past M = 4 take fetch_dequant, AWQ ones awq_gemv at M <= 4, else a refusal
  // naming the compute capability.
  for (const std::int64_t m : {5, 16, 300}) {
    INFO("M = " << m);
    const DispatchChoice c = choose_variant(nullptr, dense(4096, 4096, m), 100, "no table");
    CHECK(c.variant == "fetch_dequant");
    CHECK(c.reason == "fixed rule: no table");
  }
  CHECK(choose_variant(nullptr, awq(4096, 4096, 4), 100).variant == "awq_gemv");
  for (const std::int64_t m : {5, 16, 128, 300}) {
    INFO("M = " << m);
    CHECK_THROWS_WITH(choose_variant(nullptr, awq(4096, 4096, m), 100),
                      Catch::Contains("no variant an auto row may run covers awq_g128") &&
                          Catch::Contains("on compute capability 10.0") &&
                          Catch::Contains("9.0 only"));
  }
}

TEST_CASE("dispatch lookup: the crossover rule at grouped_mma's own limits", "[dispatch]") {
  // grouped_mma takes up to kGroupedMmaMaxExperts experts and M x N below 2^31; past either the
  // rule keeps grouped_scalar_gemv.
  const int most = variants::kGroupedMmaMaxExperts;
  CHECK(choose_variant(nullptr, moe(512, 2048, most, 8 * most), 90).variant == "grouped_mma");
  CHECK(choose_variant(nullptr, moe(512, 2048, most + 1, 8 * (most + 1)), 90).variant ==
        "grouped_scalar_gemv");
  const std::int64_t m = (std::int64_t(1) << 31) / 4096;  // M x N = 2^31 at N = 4096
  CHECK(choose_variant(nullptr, moe(4096, 2048, 64, m - 1), 90).variant == "grouped_mma");
  CHECK(choose_variant(nullptr, moe(4096, 2048, 64, m), 90).variant == "grouped_scalar_gemv");
}

TEST_CASE("dispatch rows: auto_may_pick takes a kbit row in any layout the harness builds",
          "[dispatch]") {
  // A gemm row of kbit weights is a candidate whatever kbit layout it reads; one of AWQ layouts
  // never is.
  VariantRow row = find_variant("fetch_dequant");
  for (const LayoutKind k :
       {LayoutKind::flat, LayoutKind::tiled, LayoutKind::fragment, LayoutKind::dequantized}) {
    row.layout.kind = k;
    INFO("layout " << layout_name(row.layout));
    CHECK(auto_may_pick(row));
  }
  for (const LayoutKind k : {LayoutKind::awq, LayoutKind::awq_tiled}) {
    row.layout.kind = k;
    INFO("layout " << layout_name(row.layout));
    CHECK_FALSE(auto_may_pick(row));
  }
}
