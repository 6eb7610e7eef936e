// run --devices without a GPU (harness/run_devices.hpp): the children (shell commands here) run at
// once, each seeing its device's UUID in CUDA_VISIBLE_DEVICES, their lines prefixed with their
// device; the run folders they wrote are joined by merge_runs.py into one, refused for two GPU
// models or a child that wrote none.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/results.hpp"
#include "harness/run_devices.hpp"
#include "harness/tests/temp_dir.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {

namespace fs = std::filesystem;

struct TempRoot : test::TempDir {
  TempRoot() : TempDir("devices") {}
};

const std::string kRun = "20260301T000000Z_NVIDIA_H200_abc1234";

// A child's run folder as `run --shard` writes it: one row per shape given.
void write_part(const std::string& root, const std::string& gpu, int index,
                const std::vector<std::string>& shapes) {
  const std::string dir = root + "/exp/" + kRun;
  fs::create_directories(dir);
  {
    CsvWriter w(dir + "/results.csv");
    for (const std::string& s : shapes) {
      ResultRow r;
      r.experiment = "exp", r.shape = s, r.M = 1, r.N = 64, r.K_dim = 128, r.k_bits = 4;
      r.dtype = "fp16", r.variant = "scalar_gemv", r.check = "pass", r.median_us = 10;
      r.device = std::to_string(index) + " GPU-" + std::to_string(index);
      w.append(r);
    }
  }
  nlohmann::json j = {{"experiment", "exp"},
                      {"config", {{"hash", "h"}}},
                      {"build", {{"git_sha", "abc1234"}, {"dirty", false}}},
                      {"device", {{"name", gpu}, {"host_index", index}}},
                      {"argv", {"kbit-harness", "run", "--shard"}},
                      {"started_utc", "20260301T000000Z"},
                      {"finished_utc", "20260301T000100Z"},
                      {"status", "complete"},
                      {"summary", {{"rows", shapes.size()}, {"check_passed", shapes.size()}}},
                      {"overrides", {{"shapes", nlohmann::json::array()}}}};
  write_json_file(dir + "/run.json", j);
}

DeviceChild child(int index, const std::string& name, const std::string& out_root) {
  DeviceChild c;
  c.device = {index, name, "GPU-" + std::to_string(index)};
  c.out_root = out_root;
  return c;
}

}  // namespace

TEST_CASE("run --devices children: one device each, lines prefixed, exit codes kept", "[devices]") {
  std::vector<DeviceChild> cs = {child(0, "X", ""), child(1, "X", "")};
  std::ostringstream out;
  run_device_children(
      cs,
      {{"/bin/sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\"; echo err >&2; printf end"},
       {"/bin/sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\"; exit 3"}},
      out);
  CHECK(cs[0].rc == 0);
  CHECK(cs[1].rc == 3);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("[gpu 0] GPU-0\n") && Catch::Contains("[gpu 0] err\n") &&
                       Catch::Contains("[gpu 0] end\n") && Catch::Contains("[gpu 1] GPU-1\n"));
  CHECK_THAT(text, !Catch::Contains("[gpu 1] GPU-0"));
}

TEST_CASE("run --devices joins its children's run folders into one", "[devices]") {
  TempRoot t;
  const std::string scratch = t.path + "/exp/.devices_x";
  write_part(scratch + "/d0", "NVIDIA H200", 0, {"a", "c"});
  write_part(scratch + "/d1", "NVIDIA H200", 1, {"b"});
  const std::vector<DeviceChild> cs = {child(0, "NVIDIA H200", scratch + "/d0"),
                                       child(1, "NVIDIA H200", scratch + "/d1")};
  const std::string dir = join_device_parts(
      cs, t.path, "exp", {"kbit-harness", "run", "--devices", "all"}, "all", 12.5);
  CHECK(dir == t.path + "/exp/" + kRun);
  std::ifstream f(dir + "/results.csv");
  std::string line, shapes;
  std::getline(f, line);
  const std::size_t device =
      std::size_t(std::find(result_columns().begin(), result_columns().end(), "device") -
                  result_columns().begin());
  while (std::getline(f, line)) shapes += csv_split(line)[1] + " " + csv_split(line)[device] + ";";
  CHECK(shapes == "a 0 GPU-0;c 0 GPU-0;b 1 GPU-1;");
  const nlohmann::json run = nlohmann::json::parse(read_text_file(dir + "/run.json"));
  CHECK(run["argv"] == nlohmann::json({"kbit-harness", "run", "--devices", "all"}));
  CHECK(run["summary"]["rows"] == 3);
  CHECK(run["devices"].size() == 2);
  CHECK(run["devices"][1]["uuid"] == "GPU-1");
  CHECK(run["devices_wall_s"] == 12.5);
  CHECK(run["merged_from"].size() == 2);
  CHECK(fs::exists(dir + "/parts/" + kRun + "_gpu1/run.json"));
  CHECK_FALSE(fs::exists(scratch + "/d1/exp/" + kRun + "_gpu1"));
}

TEST_CASE("run --devices refuses to join two GPU models or a child without a folder", "[devices]") {
  TempRoot t;
  const std::string scratch = t.path + "/exp/.devices_x";
  write_part(scratch + "/d0", "NVIDIA H200", 0, {"a"});
  write_part(scratch + "/d1", "NVIDIA H100 80GB HBM3", 1, {"b"});
  const std::vector<DeviceChild> mixed = {child(0, "NVIDIA H200", scratch + "/d0"),
                                          child(1, "NVIDIA H100 80GB HBM3", scratch + "/d1")};
  CHECK_THROWS_WITH(join_device_parts(mixed, t.path, "exp", {}, "0,1", 1),
                    Catch::Contains("joining the parts failed"));
  CHECK_FALSE(fs::exists(t.path + "/exp/" + kRun));
  CHECK(fs::exists(scratch + "/d0/exp/" + kRun + "_gpu0/results.csv"));  // the parts stay
  CHECK(fs::exists(scratch + "/d1/exp/" + kRun + "_gpu1/results.csv"));

  const std::vector<DeviceChild> none = {child(0, "NVIDIA H200", scratch + "/d0"),
                                         child(2, "NVIDIA H200", scratch + "/d2")};
  CHECK_THROWS_WITH(join_device_parts(none, t.path, "exp", {}, "0,2", 1),
                    Catch::Contains("device 2 (exit -1) wrote no run folder"));
}
