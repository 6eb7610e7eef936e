// A dispatch table is read as strictly as a config: every field in its range, every key known, no
// entry twice; a refusal names the table, the line, the entry and the key.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness/dispatch.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {

const std::string kPath = "/tables/Test_GPU.toml";

// Entry 1 on line 5, entry 2 on line 7.
const std::string kTable = R"(gpu = "Test GPU"
fallback = "the rule in words"
runs = ["exp/run1", "exp/run2"]
entries = [
  { k_bits = 4, dtype = "fp16", problem = "dense", shape = "a", N = 4096, K_dim = 4096, experts = 0, M = 1, variant = "scalar_gemv", median_us = 10.5, run = "exp/run1", line = 2, config = "" },
  # a grouped point
  { k_bits = 3, dtype = "bf16", problem = "grouped", shape = "moe", N = 512, K_dim = 2048, experts = 64, M = 8, variant = "grouped_scalar_gemv", median_us = 20, run = "exp/run2", line = 3, config = "[checked=0]" },
]
)";

std::string sub(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

DispatchTable parse(const std::string& text) {
  return parse_dispatch_table(text, kPath);
}

}  // namespace

TEST_CASE("dispatch table: a valid table reads back every field", "[dispatch][inputs]") {
  const DispatchTable t = parse(kTable);
  CHECK(t.gpu == "Test GPU");
  REQUIRE(t.entries.size() == 2);
  CHECK(t.entries[1].grouped);
  CHECK(t.entries[1].experts == 64);
  CHECK(t.entries[1].median_us == 20.0);
  CHECK(t.entries[1].config == "[checked=0]");
  // A table without `format` (written before the key) holds kbit entries.
  CHECK(t.entries[0].format == "kbit");
  CHECK(t.entries[1].format == "kbit");
}

namespace {

// kTable's entry 1 as an AWQ entry of group 128 (entry 1, line 5).
std::string awq_table() {
  return sub(sub(kTable, "{ k_bits = 4,", "{ format = \"awq_g128\", k_bits = 4,"),
             "variant = \"scalar_gemv\"", "variant = \"awq_gemv\"");
}

}  // namespace

TEST_CASE("dispatch table: the format key names a weight format, checked against the entry",
          "[dispatch][inputs][awq]") {
  const DispatchTable t = parse(awq_table());
  CHECK(t.entries[0].format == "awq_g128");
  CHECK(t.entries[0].variant == "awq_gemv");
  CHECK(t.entries[1].format == "kbit");
  CHECK(parse(sub(kTable, "{ k_bits = 4,", "{ format = \"kbit\", k_bits = 4,")).entries[0].format ==
        "kbit");
  struct Bad {
    const char* from;
    const char* to;
    const char* says;
  };
  const Bad bad[] = {
      {"format = \"awq_g128\"", "format = \"awq_g256\"",
       "key 'format' = 'awq_g256' is not one of kbit, awq_g32, awq_g64, awq_g128"},
      {"format = \"awq_g128\"", "format = \"AWQ\"", "key 'format' = 'AWQ' is not one of"},
      {"format = \"awq_g128\"", "format = \"\"", "key 'format' is empty"},
      {"format = \"awq_g128\"", "format = 128", "key 'format' is not a string"},
      {"k_bits = 4", "k_bits = 3", "key 'k_bits' = 3 is not 4 (format 'awq_g128')"},
      {"problem = \"dense\", shape = \"a\", N = 4096, K_dim = 4096, experts = 0",
       "problem = \"grouped\", shape = \"a\", N = 4096, K_dim = 4096, experts = 8",
       "key 'problem' = 'grouped' is not dense (format 'awq_g128')"},
      {"N = 4096", "N = 4100", "key 'N' = 4100 is not a multiple of 8 (format 'awq_g128')"},
      {"K_dim = 4096", "K_dim = 4160",
       "key 'K_dim' = 4160 is not a multiple of the group 128 (format 'awq_g128')"},
  };
  for (const Bad& b : bad) {
    INFO(b.to);
    CHECK_THROWS_WITH(parse(sub(awq_table(), b.from, b.to)),
                      Catch::StartsWith(kPath + ":5: entry 1: ") && Catch::Contains(b.says));
  }
  // The same point in two formats is two points; twice in one format is refused.
  const std::string kbit_first = kTable.substr(
      kTable.find("  { k_bits = 4"), kTable.find("  # a grouped") - kTable.find("  { k_bits = 4"));
  CHECK(parse(sub(awq_table(), "  # a grouped point\n", kbit_first)).entries.size() == 3);
  const std::string awq_first =
      sub(kbit_first, "{ k_bits = 4,", "{ format = \"awq_g128\", k_bits = 4,");
  CHECK_THROWS_WITH(parse(sub(awq_table(), "  # a grouped point\n", awq_first)),
                    Catch::StartsWith(kPath + ":6: entry 2: ") &&
                        Catch::Contains("(awq_g128, K = 4, fp16, a, M = 1) has an entry already, "
                                        "on line 5"));
}

TEST_CASE("dispatch table: every field of an entry is checked, naming table, line, entry, key",
          "[dispatch][inputs]") {
  struct Bad {
    const char* from;
    const char* to;
    const char* says;
  };
  const Bad bad[] = {
      {"k_bits = 4", "k_bits = 99", "key 'k_bits' = 99 is outside 2..5"},
      {"k_bits = 4", "k_bits = 4294967300", "key 'k_bits' = 4294967300 is outside 2..5"},
      {"k_bits = 4", "k_bits = 4.0", "key 'k_bits' is not an integer"},
      {"dtype = \"fp16\"", "dtype = \"fp8\"", "key 'dtype' = 'fp8' is not fp16 or bf16"},
      {"problem = \"dense\"", "problem = \"sparse\"", "'sparse' is not dense or grouped"},
      {"shape = \"a\"", "shape = \"\"", "key 'shape' is empty"},
      {"N = 4096", "N = 0", "key 'N' = 0 is outside 1..1048576"},
      {"N = 4096", "N = 4294967300", "key 'N' = 4294967300 is outside 1..1048576"},
      {"K_dim = 4096", "K_dim = 4080", "key 'K_dim' = 4080 is not a multiple of 32"},
      {"experts = 0", "experts = -3", "key 'experts' = -3 is outside 0..0"},
      {"M = 1", "M = -1", "key 'M' = -1 is outside 1..1048576"},
      {"variant = \"scalar_gemv\"", "variant = \"no_such_row\"",
       "key 'variant' = 'no_such_row' is not a registry row"},
      {"variant = \"scalar_gemv\"", "variant = \"cublas_fp16\"", "is a baseline row"},
      {"variant = \"scalar_gemv\"", "variant = \"auto\"", "is an auto row"},
      {"median_us = 10.5", "median_us = nan",
       "key 'median_us' = nan is not a finite number above 0"},
      {"median_us = 10.5", "median_us = inf", "key 'median_us' = inf is not a finite number"},
      {"median_us = 10.5", "median_us = -2.0", "key 'median_us' = -2 is not a finite number"},
      {"median_us = 10.5", "median_us = 0", "above 0"},
      {"median_us = 10.5", "median_us = \"fast\"", "key 'median_us' is not a number"},
      {"run = \"exp/run1\"", "run = \"exp/run9\"", "'exp/run9' is not one of the table's runs"},
      {"line = 2", "line = 1", "key 'line' = 1 is outside 2.."},
      {"line = 2, ", "line = 2, speed = 3, ", "key 'speed' is not a key of a dispatch table"},
      {"k_bits = 4, ", "", "key 'k_bits' is missing"},
  };
  for (const Bad& b : bad) {
    INFO(b.to);
    CHECK_THROWS_WITH(parse(sub(kTable, b.from, b.to)),
                      Catch::StartsWith(kPath + ":5: entry 1: ") && Catch::Contains(b.says));
  }
  // Entry 2: grouped points have 1..4096 experts.
  CHECK_THROWS_WITH(parse(sub(kTable, "experts = 64", "experts = -64")),
                    Catch::StartsWith(kPath + ":7: entry 2: ") &&
                        Catch::Contains("key 'experts' = -64 is outside 1..4096"));
}

TEST_CASE("dispatch table: duplicated entries and runs, unknown top-level keys are refused",
          "[dispatch][inputs]") {
  const std::string first = kTable.substr(
      kTable.find("  { k_bits = 4"), kTable.find("  # a grouped") - kTable.find("  { k_bits = 4"));
  CHECK_THROWS_WITH(parse(sub(kTable, "  # a grouped point\n", first)),
                    Catch::StartsWith(kPath + ":6: entry 2: ") &&
                        Catch::Contains("has an entry already, on line 5"));
  // The same point with another variant is still the same point.
  CHECK_THROWS_WITH(
      parse(sub(kTable, "  # a grouped point\n", sub(first, "scalar_gemv", "fetch_dequant"))),
      Catch::Contains("has an entry already"));
  CHECK_THROWS_WITH(parse(sub(kTable, "\"exp/run2\"]", "\"exp/run1\"]")),
                    Catch::StartsWith(kPath + ":3: ") && Catch::Contains("names 'exp/run1' twice"));
  CHECK_THROWS_WITH(parse(sub(kTable, "\"exp/run2\"]", "\"run2\"]")),
                    Catch::Contains("'run2' is not <experiment>/<run folder>"));
  CHECK_THROWS_WITH(parse("colour = 1\n" + kTable),
                    Catch::StartsWith(kPath + ":1: ") && Catch::Contains("key 'colour'"));
  CHECK_THROWS_WITH(parse(sub(kTable, "gpu = \"Test GPU\"", "gpu = \"\"")),
                    Catch::Contains("key 'gpu' is empty"));
  CHECK_THROWS_WITH(parse(sub(kTable, "entries = [", "entries = [ 7,")),
                    Catch::Contains("not a table"));
}

TEST_CASE("dispatch table: the auto rows' tables refuse a bad table when loaded, naming it",
          "[dispatch][inputs]") {
  namespace fs = std::filesystem;
  const std::string dir =
      (fs::temp_directory_path() / ("kbit_dispatch_table_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/" + dispatch_file_name("Test GPU");
  std::ostringstream notes;
  {
    std::ofstream(path) << sub(kTable, "median_us = 10.5", "median_us = nan");
    DispatchTables tables(dir, notes);
    CHECK_THROWS_WITH(tables.load("Test GPU"),
                      Catch::StartsWith(path + ":5: entry 1: key 'median_us' = nan"));
  }
  {
    std::ofstream(path) << sub(kTable, "{ k_bits = 4,", "{ format = \"awq_g1\", k_bits = 4,");
    DispatchTables tables(dir, notes);
    CHECK_THROWS_WITH(tables.load("Test GPU"),
                      Catch::StartsWith(path + ":5: entry 1: key 'format' = 'awq_g1'"));
  }
  {
    std::ofstream(path) << kTable;
    DispatchTables tables(dir, notes);
    REQUIRE(tables.load("Test GPU") != nullptr);
    CHECK(tables.load("Test GPU")->entries.size() == 2);
    CHECK(tables.load("Other GPU") == nullptr);  // no file: the fixed rule, noted at choose
  }
  fs::remove_all(dir);
}
