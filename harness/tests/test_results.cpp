#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
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

TEST_CASE("rows are on disk as soon as they are appended, in our CSV dialect", "[results]") {
  const std::string path = "test_results_rows.csv";
  CsvWriter w(path);
  ResultRow r;
  r.experiment = "e";
  r.shape = "s";
  r.M = 1, r.N = 4096, r.K_dim = 14336, r.k_bits = 4;
  r.dtype = "fp16";
  r.variant = "v";
  r.median_us = 12.5;
  r.p10_us = 1.0 / 3;    // 6 significant digits
  r.p90_us = 1234567.0;  // 6 significant digits, exponent form
  r.samples = 7;
  r.frac_of_floor = 0.123456;  // 4 significant digits
  r.speedup_vs_baseline = 2;
  r.check = "pass";
  r.max_err_over_bound = NAN;
  r.sm_mhz_before = 1980.4;
  r.error = "a, \"quoted\" message";
  r.device = "1 GPU-00000000-0000-0000-0000-000000000001";
  r.weights_source = "ckpt/model.safetensors:model.layers.0.mlp.up_proj.weight";
  w.append(r);
  r.shape = "s2";
  w.append(r);
  // Read back while the writer is still open: a run that dies keeps every finished row.
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("experiment,shape,M,N,K_dim,k_bits,dtype,variant,median_us,", 0) == 0);
  // The line written by hand (the columns of result_columns(), the escaping of RFC 4180).
  CHECK(lines[1] ==
        "e,s,1,4096,14336,4,fp16,v,12.5,0.333333,1.23457e+06,7,0,0,0,0.1235,2,pass,nan,,,1,1,0,"
        "1980.4,0,0,0,0,,,\"a, \"\"quoted\"\" message\",1 GPU-00000000-0000-0000-0000-000000000001,"
        "ckpt/model.safetensors:model.layers.0.mlp.up_proj.weight");
  const auto f = csv_split(lines[1]);
  REQUIRE(f.size() == result_columns().size());
  CHECK(f[1] == "s");
  CHECK(f[8] == "12.5");
  CHECK(f[f.size() - 3] == "a, \"quoted\" message");  // error, device, weights_source
  CHECK(f[f.size() - 2] == "1 GPU-00000000-0000-0000-0000-000000000001");
  CHECK(f.back() == "ckpt/model.safetensors:model.layers.0.mlp.up_proj.weight");
  CHECK(csv_split(lines[2])[1] == "s2");
  std::remove(path.c_str());
}

TEST_CASE("csv escaping: fixed strings each way, and round trips", "[results]") {
  CHECK(csv_escape("plain") == "plain");
  CHECK(csv_escape("") == "");
  CHECK(csv_escape("a,b") == "\"a,b\"");
  CHECK(csv_escape("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_escape("x\ny\r") == "\"x y \"");
  CHECK(csv_split("x,\"a,b\",\"say \"\"hi\"\"\",,\"l1 l2\"") ==
        std::vector<std::string>{"x", "a,b", "say \"hi\"", "", "l1 l2"});
  CHECK(csv_split("") == std::vector<std::string>{""});
  for (std::string s : {"plain", "a,b", "say \"hi\"", "", "x\ny"}) {
    const auto back = csv_split(csv_escape(s) + ",z");
    REQUIRE(back.size() == 2);
    std::string want = s;
    for (char& ch : want)
      if (ch == '\n') ch = ' ';
    CHECK(back[0] == want);
  }
}

TEST_CASE("run.json is replaced atomically: a reader sees the old document or the new, whole",
          "[results]") {
  const std::string path = "test_results_run.json", tmp = path + ".tmp";
  std::filesystem::remove_all(tmp);
  // 1 MiB: rewritten in place, a reader would find an empty file or a prefix of it.
  const nlohmann::json first = {{"status", "running"}, {"pad", std::string(1 << 20, 'x')}};
  const nlohmann::json second = {{"status", "complete"}, {"n", 4}};
  write_json_file(path, first);
  std::ifstream before(path);  // a reader that opened the file before the replacement
  REQUIRE(before);
  write_json_file(path, second);
  // The reader reads the whole old document (rename replaced the directory entry: its file is
  // untouched), a reader opening now the whole new one, and no temporary is left beside it.
  CHECK(nlohmann::json::parse(before, nullptr, false) == first);
  std::ifstream after(path);
  CHECK(nlohmann::json::parse(after, nullptr, false) == second);
  CHECK_FALSE(std::filesystem::exists(tmp));
  // A write that fails (its temporary cannot be created) leaves the previous document whole.
  std::filesystem::create_directory(tmp);
  CHECK_THROWS_WITH(write_json_file(path, first), Catch::Contains("cannot write"));
  std::filesystem::remove(tmp);
  std::ifstream still(path);
  CHECK(nlohmann::json::parse(still, nullptr, false) == second);
  std::remove(path.c_str());
  const std::string t = utc_timestamp();  // 20260101T120000Z
  CHECK(t.size() == 16);
  CHECK((t[8] == 'T' && t[15] == 'Z'));
}

TEST_CASE("run.json's build records the configure-time flags (a variant's knobs)", "[results]") {
  // This binary's query_build is built with flags of its own, never empty
  // (harness/tests/CMakeLists.txt): they must come back as they were given.
  const std::string cuda = KBIT_TEST_CUDA_FLAGS, cxx = KBIT_TEST_CXX_FLAGS;
  REQUIRE(cuda.rfind("-DKBIT_TEST_CUDA_KNOB=3", 0) == 0);
  REQUIRE(cxx.rfind("-DKBIT_TEST_CXX_KNOB=5", 0) == 0);
  const BuildInfo b = query_build();
  CHECK(b.cuda_flags == cuda);
  CHECK(b.cxx_flags == cxx);
  const nlohmann::json j = to_json(b);
  CHECK(j["cuda_flags"] == cuda);
  CHECK(j["cxx_flags"] == cxx);
  CHECK(!j["nvcc_version"].get<std::string>().empty());
}

TEST_CASE("rows timed below 90% of the run's highest SM clock are named", "[results]") {
  auto row = [](double before, double after) {
    ResultRow r;
    r.sm_mhz_before = before;
    r.sm_mhz_after = after;
    return r;
  };
  // The highest reading is any row's, before or after; a row's lower nonzero reading is judged.
  const std::vector<ResultRow> rows = {row(1980, 1975), row(1620, 1624), row(1980, 1700),
                                       row(0, 1790),    row(0, 1700),    row(0, 0),
                                       row(1782, 1990)};
  // 90% of 1990 = 1791: 1624 -> 1620, 1700, 1790 (no before), 1700 (no before) are below;
  // 1782 is below too; a row without readings is not judged.
  CHECK(highest_sm_clock(rows) == 1990);
  CHECK(low_clock_rows(rows) == std::vector<std::size_t>{1, 2, 3, 4, 6});
  CHECK(low_clock_rows(rows, 0.85) == std::vector<std::size_t>{1});  // 1691.5: 1700 is not
  CHECK(low_clock_rows({row(1980, 1980), row(1900, 1890)}).empty());
  CHECK(low_clock_rows({}).empty());
}
