// results/<experiment>/CURRENT per GPU (harness/current.hpp) and the dispatch tables built from
// it, on the fixture tree harness/tests/fixtures/gpus/: gemv has one run on an H100 and one on an
// H200 (its CURRENT names both), envelope one on the H200 (its CURRENT a run folder alone).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/current.hpp"
#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/tests/temp_dir.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {

namespace fs = std::filesystem;

const std::string kGpus = source_dir() + "/harness/tests/fixtures/gpus";
const std::string kH100Run = "20260201T000000Z_NVIDIA_H100_80GB_HBM3_abc1234";
const std::string kH200Run = "20260202T000000Z_NVIDIA_H200_abc1234";

// A copy of the fixture tree under the system's temporary folder, removed at the end.
struct Scratch : test::TempDir {
  Scratch() : TempDir("current", kGpus), root(path) {}
  void current(const std::string& exp, const std::string& text) const {
    std::ofstream(root + "/" + exp + "/CURRENT", std::ios::trunc) << text;
  }
  const std::string& root;
};

}  // namespace

TEST_CASE("CURRENT names one run per GPU, a run folder alone takes run.json's GPU", "[current]") {
  const std::vector<CurrentRun> gemv = read_current(kGpus, "gemv");
  REQUIRE(gemv.size() == 2);
  CHECK(gemv[0].gpu == "NVIDIA_H100_80GB_HBM3");
  CHECK(gemv[0].gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(gemv[0].run == kH100Run);
  CHECK(gemv[0].line == 2);  // line 1 is a comment
  CHECK(gemv[1].gpu == "NVIDIA_H200");
  CHECK(gemv[1].dir == kGpus + "/gemv/" + kH200Run);
  const std::vector<CurrentRun> env = read_current(kGpus, "envelope");
  REQUIRE(env.size() == 1);
  CHECK(env[0].gpu == "NVIDIA_H200");
  CHECK(env[0].gpu_name == "NVIDIA H200");
  CHECK(current_gpu_key("NVIDIA H100 80GB HBM3") == "NVIDIA_H100_80GB_HBM3");
}

TEST_CASE("CURRENT lines: malformed ones are refused with the place", "[current]") {
  CurrentRun r;
  CHECK_FALSE(parse_current_line("", "C:1", r));
  CHECK_FALSE(parse_current_line("  # a note", "C:1", r));
  REQUIRE(parse_current_line("NVIDIA_H200 run_a", "C:1", r));
  CHECK((r.gpu == "NVIDIA_H200" && r.run == "run_a"));
  REQUIRE(parse_current_line(" run_b \r", "C:2", r));
  CHECK((r.gpu.empty() && r.run == "run_b"));
  CHECK_THROWS_WITH(parse_current_line("NVIDIA H200 run_a", "C:3", r),
                    Catch::StartsWith("C:3: 'NVIDIA H200 run_a' has 3 words"));
  CHECK_THROWS_WITH(parse_current_line("NVIDIA_H200 gemv/run_a", "C:4", r),
                    Catch::StartsWith("C:4: 'gemv/run_a' is not the name of a run folder"));
  CHECK_THROWS_WITH(parse_current_line("NVIDIA:H200 run_a", "C:5", r),
                    Catch::StartsWith("C:5: GPU 'NVIDIA:H200' is not written as run folders"));
  // "." and ".." name the experiment's folder and its parent, never a run folder.
  for (const std::string run : {".", ".."}) {
    INFO("run folder " << run);
    CHECK_THROWS_WITH(parse_current_line("NVIDIA_H200 " + run, "C:6", r),
                      Catch::StartsWith("C:6: '" + run + "' is not the name of a run folder"));
    CHECK_THROWS_WITH(parse_current_line(run, "C:7", r),
                      Catch::StartsWith("C:7: '" + run + "' is not the name of a run folder"));
  }
  // Only a line starting with '#' is a comment: a note after a run makes three or more words.
  CHECK_THROWS_WITH(parse_current_line("NVIDIA_H200 run_a # the H200", "C:8", r),
                    Catch::StartsWith("C:8: 'NVIDIA_H200 run_a # the H200' has 5 words"));
  CHECK_THROWS_WITH(parse_current_line("NVIDIA_H200 run_a #note", "C:9", r),
                    Catch::StartsWith("C:9: 'NVIDIA_H200 run_a #note' has 3 words"));
}

TEST_CASE("CURRENT refusals name the file and the line", "[current]") {
  Scratch s;
  const std::string file = s.root + "/gemv/CURRENT";
  s.current("gemv", "NVIDIA_H100_80GB_HBM3 " + kH100Run + "\nNVIDIA_H200 20260309T000000Z_gone\n");
  CHECK_THROWS_WITH(read_current(s.root, "gemv"),
                    Catch::StartsWith(file + ":2: names '20260309T000000Z_gone', which is not in"));
  s.current("gemv", "NVIDIA_H200 " + kH100Run + "\n");
  CHECK_THROWS_WITH(read_current(s.root, "gemv"),
                    Catch::StartsWith(file + ":1: names GPU NVIDIA_H200, but run " + kH100Run +
                                      " was timed on 'NVIDIA H100 80GB HBM3'"));
  fs::copy(s.root + "/gemv/" + kH100Run, s.root + "/gemv/again", fs::copy_options::recursive);
  s.current("gemv", kH100Run + "\n# the same GPU again\nNVIDIA_H100_80GB_HBM3 again\n");
  CHECK_THROWS_WITH(
      read_current(s.root, "gemv"),
      Catch::StartsWith(file + ":3: a second run of GPU NVIDIA_H100_80GB_HBM3 (line 1"));
  s.current("gemv", "\n# none yet\n");
  CHECK_THROWS_WITH(read_current(s.root, "gemv"), Catch::StartsWith(file + " names no run"));
  // A refusal quotes a CRLF file's line without its carriage return.
  s.current("gemv", "NVIDIA_H200 " + kH200Run + " extra\r\n");
  CHECK_THROWS_WITH(
      read_current(s.root, "gemv"),
      Catch::StartsWith(file + ":1: 'NVIDIA_H200 " + kH200Run + " extra' has 3 words"));
  // A plain file of the name is not a run folder.
  std::ofstream(s.root + "/gemv/plain_file") << "{}\n";
  s.current("gemv", "plain_file\n");
  CHECK_THROWS_WITH(read_current(s.root, "gemv"),
                    Catch::StartsWith(file + ":1: names 'plain_file', which is not in"));
  // device.name must be a non-empty string (the GPU the run was timed on).
  fs::create_directory(s.root + "/gemv/odd");
  for (const char* device :
       {R"({"name": ""})", R"({"name": 7})", R"({"model": "NVIDIA H200"})", R"("NVIDIA H200")"}) {
    INFO("device " << device);
    std::ofstream(s.root + "/gemv/odd/run.json", std::ios::trunc)
        << "{\"device\": " << device << "}\n";
    s.current("gemv", "odd\n");
    CHECK_THROWS_WITH(
        read_current(s.root, "gemv"),
        Catch::StartsWith(file + ":1: " + s.root + "/gemv/odd/run.json has no device.name"));
    s.current("gemv", "NVIDIA_H200 odd\n");
    CHECK_THROWS_WITH(
        read_current(s.root, "gemv"),
        Catch::StartsWith(file + ":1: " + s.root + "/gemv/odd/run.json has no device.name"));
  }
  // dispatch build reads CURRENT the same way: the missing run refuses the whole build.
  s.current("gemv", "NVIDIA_H200 20260309T000000Z_gone\n");
  CHECK_THROWS_WITH(build_dispatch_tables(s.root),
                    Catch::Contains(file + ":1: names '20260309T000000Z_gone'"));
}

TEST_CASE("dispatch build writes one table per GPU from each GPU's CURRENT runs", "[current]") {
  const std::vector<DispatchTable> ts = build_dispatch_tables(kGpus);
  REQUIRE(ts.size() == 2);
  const DispatchTable& h100 = ts[0];
  const DispatchTable& h200 = ts[1];
  CHECK(h100.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(h100.runs == std::vector<std::string>{"gemv/" + kH100Run});
  CHECK(h200.gpu == "NVIDIA H200");
  CHECK(h200.runs == std::vector<std::string>{"envelope/20260203T000000Z_NVIDIA_H200_abc1234",
                                              "gemv/" + kH200Run});
  auto variant_at = [](const DispatchTable& t, const std::string& shape, std::int64_t m) {
    for (const DispatchEntry& e : t.entries)
      if (e.shape == shape && e.M == m) return e.variant + " " + e.run;
    return std::string("none");
  };
  // The same point, another GPU: each table holds its own GPU's fastest row.
  CHECK(variant_at(h100, "test.a", 16) == "warp_specialized gemv/" + kH100Run);
  CHECK(variant_at(h200, "test.a", 16) == "fetch_dequant gemv/" + kH200Run);
  CHECK(variant_at(h100, "test.a", 1) == "scalar_gemv gemv/" + kH100Run);
  CHECK(variant_at(h200, "test.b", 1) ==
        "scalar_gemv envelope/20260203T000000Z_NVIDIA_H200_abc1234");
  CHECK(variant_at(h100, "test.b", 1) == "none");  // envelope has no H100 run
  CHECK(h100.entries.size() == 2);
  CHECK(h200.entries.size() == 3);
  CHECK(dispatch_file_name(h200.gpu) == "NVIDIA_H200.toml");
}
