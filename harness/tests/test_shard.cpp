// run --devices (harness/shard.hpp): the --devices list and its refusals, the hidden --shard,
// the one-model rule, a config's problems in run order and their partition over devices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "harness/device_info.hpp"
#include "harness/shard.hpp"
#include "reference/error.hpp"

using namespace kbit;

TEST_CASE("the devices list: all, or distinct indices", "[shard]") {
  CHECK(parse_devices("all").all);
  CHECK(parse_devices("0,1").indices == std::vector<int>{0, 1});
  CHECK(parse_devices("3").indices == std::vector<int>{3});
  CHECK(parse_devices("1,0").indices == std::vector<int>{1, 0});
  CHECK(resolve_devices(parse_devices("all"), 2) == std::vector<int>{0, 1});
  CHECK(resolve_devices(parse_devices("all"), 0).empty());
  CHECK(resolve_devices(parse_devices("1"), 2) == std::vector<int>{1});
}

TEST_CASE("the devices list refuses what is no list of distinct indices, naming the value",
          "[shard]") {
  CHECK_THROWS_WITH(parse_devices("-1"),
                    Catch::Contains("--devices '-1': '-1' is not a device index"));
  CHECK_THROWS_WITH(parse_devices("0,0"),
                    Catch::Contains("--devices '0,0': device 0 is given twice"));
  CHECK_THROWS_WITH(parse_devices("x"),
                    Catch::Contains("--devices 'x': 'x' is not a device index"));
  CHECK_THROWS_WITH(parse_devices(""), Catch::Contains("names no device"));
  CHECK_THROWS_WITH(parse_devices("0,"), Catch::Contains("an empty index"));
  CHECK_THROWS_WITH(parse_devices("0,,1"), Catch::Contains("'' is not a device index"));
  CHECK_THROWS_WITH(parse_devices("1 "), Catch::Contains("'1 ' is not a device index"));
  CHECK_THROWS_WITH(parse_devices("2048"), Catch::Contains("index 2048 is above the limit 1023"));
  CHECK_THROWS_WITH(resolve_devices(parse_devices("0,1"), 1),
                    Catch::Contains("device 1 is not on this host (1 device: indices 0..0)"));
}

TEST_CASE("a child's shard I/N", "[shard]") {
  const ShardSpec s = parse_shard("1/2");
  CHECK((s.index == 1 && s.count == 2));
  for (const char* bad : {"2/2", "0/0", "-1/2", "1", "a/b", "1/2/3", "0/2000"})
    CHECK_THROWS_WITH(parse_shard(bad), Catch::Contains(std::string("--shard '") + bad + "'"));
}

TEST_CASE("a run holds one GPU model: a mix is refused naming both", "[shard]") {
  check_one_gpu_model({{0, "NVIDIA H200", "GPU-a"}, {1, "NVIDIA H200", "GPU-b"}});
  CHECK_THROWS_WITH(
      check_one_gpu_model({{0, "NVIDIA H200", "GPU-a"}, {1, "NVIDIA H100 80GB HBM3", "GPU-b"}}),
      Catch::Contains("device 0 is a NVIDIA H200, device 1 a NVIDIA H100 80GB HBM3"));
}

TEST_CASE("the partition: each problem once, largest first to the least-loaded shard", "[shard]") {
  CHECK(assign_shards({1, 100, 1, 1}, 2) == std::vector<int>{1, 0, 1, 1});
  CHECK(assign_shards({5, 5, 5, 5}, 2) == std::vector<int>{0, 1, 0, 1});
  CHECK(assign_shards({3}, 1) == std::vector<int>{0});
  // Every shard gets a problem when there are enough, even beside one huge problem.
  CHECK(assign_shards({1000, 1, 1}, 3) == std::vector<int>{0, 1, 2});
  std::vector<double> costs;
  for (int i = 1; i <= 13; ++i) costs.push_back(double(1 << i));  // M = 2..8192: 2x steps
  const std::vector<int> of = assign_shards(costs, 2);
  double load[2] = {0, 0};
  for (std::size_t i = 0; i < costs.size(); ++i) load[of[i]] += costs[i];
  CHECK(std::abs(load[0] - load[1]) <= costs.front());  // as even as the costs allow
  CHECK(assign_shards(costs, 2) == of);                 // the children agree
  CHECK_THROWS(assign_shards(costs, 0));
}

TEST_CASE("the partition by layer: a layer's problems of one format on one shard", "[shard]") {
  const ExperimentConfig cfg = parse_experiment(R"(name = "t"
shapes = [{ name = "big", k_dim = 8192, n = 28672 }, { name = "mid", k_dim = 4096, n = 28672 },
          { name = "small", k_dim = 2048, n = 5120 }]
m = [1, 8, 64]
k_bits = [3, 4]
dtype = ["fp16", "bf16"]
variants = ["cublas_fp16"]
)",
                                                source_dir() + "/experiments/x.toml");
  const std::vector<PlannedProblem> p = plan_problems(cfg);
  REQUIRE(p.size() == 3 * 2 * 2 * 3);
  const std::vector<int> of = assign_shards_by_layer(p, 2);
  REQUIRE(of.size() == p.size());
  // Each (layer, K) group's 6 problems (2 dtypes x 3 M) on one shard: its weights are
  // quantized by one child only.
  for (std::size_t i = 0; i < p.size(); ++i)
    if (i % 6 != 0) CHECK(of[i] == of[i - 1]);
  // Largest group first: the two K of the big layer on different shards, both shards used.
  CHECK(of[0] != of[6]);
  double load[2] = {0, 0};
  for (std::size_t i = 0; i < p.size(); ++i) load[of[i]] += p[i].cost;
  CHECK(load[0] > 0);
  CHECK(load[1] > 0);
  CHECK(assign_shards_by_layer(p, 2) == of);  // the children agree
  // Fewer groups than shards: problem by problem, every shard with work.
  const ExperimentConfig one = parse_experiment(R"(name = "t"
shapes = [{ name = "a", k_dim = 4096, n = 4096 }]
m = [1, 2, 4, 8]
k_bits = 4
dtype = "fp16"
variants = ["cublas_fp16"]
)",
                                                source_dir() + "/experiments/x.toml");
  const std::vector<PlannedProblem> q = plan_problems(one);
  std::vector<double> costs;
  for (const PlannedProblem& x : q) costs.push_back(x.cost);
  CHECK(assign_shards_by_layer(q, 3) == assign_shards(costs, 3));
  CHECK(assign_shards_by_layer(q, 1) == std::vector<int>(q.size(), 0));
  // One group: one child a problem, up to the devices.
  CHECK(sweep_children(q, 2) == 2);
  CHECK(sweep_children(q, 8) == 4);
  CHECK(sweep_children(q, 1) == 1);
}

TEST_CASE("the partition by layer keeps K, AWQ formats and MoE layers apart, no shard empty",
          "[shard]") {
  const ExperimentConfig dense = parse_experiment(R"(name = "t"
shapes = [{ name = "a", k_dim = 4096, n = 4096 }, { name = "b", k_dim = 2048, n = 2048 }]
m = [1, 16]
formats = ["kbit", "awq_g128"]
k_bits = [3, 4]
dtype = "fp16"
variants = ["cublas_fp16"]
)",
                                                  source_dir() + "/experiments/x.toml");
  const ExperimentConfig moe = parse_experiment(R"(name = "t"
moe = [{ name = "e", experts = 8, k_dim = 2048, n = 1024, top_k = 2 },
       { name = "f", experts = 16, k_dim = 1024, n = 1024, top_k = 2 }]
tokens = [4, 64]
k_bits = [3, 4]
dtype = "fp16"
variants = ["cublas_fp16"]
)",
                                                source_dir() + "/experiments/x.toml");
  for (const ExperimentConfig* cfg : {&dense, &moe}) {
    const std::vector<PlannedProblem> p = plan_problems(*cfg);
    // Dense: 2 layers x (K = 3, K = 4, AWQ g128) x 2 M; MoE: 2 layers x 2 K x 2 token counts.
    const std::size_t groups = cfg == &dense ? 6 : 4;
    REQUIRE(p.size() == 2 * groups);
    for (int shards = 2; shards <= int(groups); ++shards) {
      INFO(p.size() << " problems, " << shards << " shards");
      const std::vector<int> of = assign_shards_by_layer(p, shards);
      // Each group's two problems (consecutive in run order) on one shard.
      for (std::size_t i = 0; i < p.size(); i += 2) CHECK(of[i] == of[i + 1]);
      std::vector<int> count(std::size_t(shards), 0);
      for (int s : of) ++count[std::size_t(s)];
      for (int c : count) CHECK(c > 0);
      CHECK(sweep_children(p, shards) == shards);
    }
    // More devices than groups: one child a group, none to repeat another's quantization.
    CHECK(sweep_children(p, 8) == int(groups));
  }
}

TEST_CASE("the children share the host's cores", "[shard]") {
  CHECK(child_cpu_threads(32, 2) == 16);
  CHECK(child_cpu_threads(128, 8) == 16);
  CHECK(child_cpu_threads(3, 2) == 1);
  CHECK(child_cpu_threads(1, 4) == 1);  // never none
  CHECK_THROWS(child_cpu_threads(32, 0));
}

TEST_CASE("plan_problems lists a config's problems in the order run times them", "[shard]") {
  const ExperimentConfig cfg = parse_experiment(R"(name = "t"
shapes = [{ name = "a", k_dim = 64, n = 128 }, { name = "b", k_dim = 4096, n = 4096 }]
moe = [{ name = "e", experts = 8, k_dim = 64, n = 128, top_k = 2 }]
m = [1, 16]
tokens = [4]
k_bits = [3, 4]
dtype = ["fp16"]
variants = ["cublas_fp16"]
)",
                                                source_dir() + "/experiments/x.toml");
  const std::vector<PlannedProblem> p = plan_problems(cfg);
  REQUIRE(p.size() == 2 * 2 * 2 + 2);  // 2 shapes x 2 K x 2 M, then the MoE layer x 2 K
  CHECK((p[0].layer == "a" && p[0].weights.k_bits == 3 && p[0].m == 1));
  CHECK((p[1].layer == "a" && p[1].weights.k_bits == 3 && p[1].m == 16));
  CHECK((p[2].layer == "a" && p[2].weights.k_bits == 4 && p[2].m == 1));
  CHECK((p[4].layer == "b" && p[4].m == 1));
  CHECK((p[8].layer == "e" && p[8].moe && p[8].m == 4 && p[8].top_k == 2));
  CHECK(p[4].cost > p[0].cost);  // a larger weight streams longer
  CHECK(p[5].cost > p[4].cost);  // more rows
  CHECK(p[6].cost > p[4].cost);  // more bits
}
