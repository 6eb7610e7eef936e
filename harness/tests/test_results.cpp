#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "harness/device_info.hpp"
#include "harness/results.hpp"

using namespace kbit;

namespace {
std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}
}  // namespace

TEST_CASE("the CSV has the documented columns, in order", "[results]") {
  const auto& c = result_columns();
  const std::vector<std::string> core = {"experiment",
                                         "shape",
                                         "M",
                                         "N",
                                         "K_dim",
                                         "k_bits",
                                         "dtype",
                                         "variant",
                                         "median_us",
                                         "p10_us",
                                         "p90_us",
                                         "samples",
                                         "gb_per_s",
                                         "tflops",
                                         "floor_us",
                                         "frac_of_floor",
                                         "speedup_vs_baseline",
                                         "check",
                                         "max_err_over_bound"};
  REQUIRE(c.size() >= core.size());
  CHECK(std::vector<std::string>(c.begin(), c.begin() + std::ptrdiff_t(core.size())) == core);
  CHECK(row_fields(ResultRow{}).size() == c.size());
}

TEST_CASE("rows are on disk as soon as they are appended", "[results]") {
  const std::string path = "test_results_rows.csv";
  CsvWriter w(path);
  ResultRow r;
  r.experiment = "e";
  r.shape = "s";
  r.variant = "v";
  r.check = "pass";
  r.median_us = 12.5;
  r.error = "a, \"quoted\" message";
  r.device = "1 GPU-00000000-0000-0000-0000-000000000001";
  w.append(r);
  r.shape = "s2";
  w.append(r);
  // Read back while the writer is still open: a run that dies keeps every finished row.
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 3);
  const auto f = csv_split(lines[1]);
  REQUIRE(f.size() == result_columns().size());
  CHECK(f[1] == "s");
  CHECK(f[8] == "12.5");
  CHECK(f[f.size() - 2] == "a, \"quoted\" message");  // error, then device
  CHECK(f.back() == "1 GPU-00000000-0000-0000-0000-000000000001");
  CHECK(csv_split(lines[2])[1] == "s2");
  std::remove(path.c_str());
}

TEST_CASE("csv escaping round-trips", "[results]") {
  for (std::string s : {"plain", "a,b", "say \"hi\"", "", "x\ny"}) {
    const auto back = csv_split(csv_escape(s) + ",z");
    REQUIRE(back.size() == 2);
    std::string want = s;
    for (char& ch : want)
      if (ch == '\n') ch = ' ';
    CHECK(back[0] == want);
  }
}

TEST_CASE("run.json is written atomically and parses", "[results]") {
  const std::string path = "test_results_run.json";
  write_json_file(path, {{"status", "running"}, {"n", 3}});
  write_json_file(path, {{"status", "complete"}, {"n", 4}});
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(f);
  CHECK(j["status"] == "complete");
  CHECK(j["n"] == 4);
  std::remove(path.c_str());
  CHECK(utc_timestamp().size() == 16);
}

TEST_CASE("run.json's build records the configure-time CUDA flags (a variant's knobs)",
          "[results]") {
  const BuildInfo b = query_build();
  CHECK(b.cuda_flags == KBIT_TEST_CUDA_FLAGS);
  const nlohmann::json j = to_json(b);
  REQUIRE(j.contains("cuda_flags"));
  CHECK(j["cuda_flags"] == KBIT_TEST_CUDA_FLAGS);
  CHECK(j.contains("cxx_flags"));
  CHECK(!j["nvcc_version"].get<std::string>().empty());
}
