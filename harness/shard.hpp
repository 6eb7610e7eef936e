// Sweeps over several GPUs of one host (`kbit-harness run --devices`, docs/gpu_machines.md, "Sweeps
// over several GPUs"): the --devices list, the problems of a config in the order `run` times them,
// and their partition into one shard per device. No CUDA here: the CPU tests cover all of it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/config.hpp"
#include "reference/dtype.hpp"

namespace kbit {

// --devices: "all" or a comma-separated list of distinct device indices ("0,1").
struct DeviceSelection {
  bool all = false;
  std::vector<int> indices;  // in the order given (empty when all)
};
// Throws kbit::Error naming the value: an empty list, a word that is no index ("x", "-1"), an
// index given twice, an index above 1023.
DeviceSelection parse_devices(const std::string& text);
// The device indices of `sel` on a host of `device_count` devices (all: 0..count-1). Throws
// kbit::Error naming an index the host does not have and the count.
std::vector<int> resolve_devices(const DeviceSelection& sel, int device_count);

// The hidden --shard I/N of the child processes: shard I (0-based) of N.
struct ShardSpec {
  int index = 0, count = 1;
};
// Throws kbit::Error for anything but "I/N" with 0 <= I < N <= 1024.
ShardSpec parse_shard(const std::string& text);

// One device of the host: its index, its name (cudaDeviceProp::name) and UUID.
struct HostDevice {
  int index = 0;
  std::string name, uuid;
};
// A run holds one GPU model's rows: throws kbit::Error naming the first device of another model
// than the first device, and both models.
void check_one_gpu_model(const std::vector<HostDevice>& devices);

// One weight format of a layer: kbit of k_bits bits, or AWQ int4 (k_bits 4) of group awq_group.
struct WeightsOf {
  int k_bits = 4, awq_group = 0;
  std::string label() const;
};
// The config's formats in order: "kbit" as its k_bits list, each awq format as one entry (dense
// layers only: the config refuses AWQ beside MoE layers).
std::vector<WeightsOf> weights_of(const ExperimentConfig& cfg, bool moe);

// One problem of a config: a layer (dense shape or MoE layer) at one weight format, dtype and M
// (tokens for an MoE layer). plan_problems lists them in the order `run` times them: shapes,
// then MoE layers, each by weight format, dtype and M.
struct PlannedProblem {
  std::string layer;
  bool moe = false;
  std::int64_t N = 0, K_dim = 0;
  int experts = 0, top_k = 0;
  WeightsOf weights;
  DType dtype = DType::f16;
  std::int64_t m = 0;  // rows of A (dense), tokens (MoE)
  double cost = 0;     // estimated time, for the partition (problem_cost_estimate)
};
std::vector<PlannedProblem> plan_problems(const ExperimentConfig& cfg);

// The problem's floor at nominal ceilings (3 TB/s, 750 TFLOP/s: compressed weights of the experts
// its rows can reach, A and C; 2 M N K_dim flops) plus 10 us, in us: what its rows take relative
// to the others' (a problem's rows are timed to a fixed noise or sample count).
double problem_cost_estimate(const PlannedProblem& p);

// The shard (0..shards-1) of each cost: largest first, each to the shard with the least cost so
// far (the lowest index on a tie). Deterministic; every shard gets a problem when there are at
// least as many problems as shards.
std::vector<int> assign_shards(const std::vector<double>& costs, int shards);

// The shard (0..shards-1) of each problem of `plan` (plan_problems' order): a layer's problems of
// one weight format (what a child quantizes once on the CPU and lays out once) all go to one shard,
// the groups largest first (their summed costs) to the least-loaded shard. A config of fewer
// groups than shards is split problem by problem (assign_shards): then every child quantizes the
// layers it shares. Split problem by problem, small_m (3 layers) took 77 s on two H200s of one
// host against 50 s on one (docs/gpu_machines.md, "Sweeps over several GPUs").
std::vector<int> assign_shards_by_layer(const std::vector<PlannedProblem>& plan, int shards);

// The children a sweep over `devices` devices starts for `plan`: one a layer and weight format
// group, up to the device count, where the config has two groups or more (a device beyond them
// would only repeat another's quantization); else one a problem, up to the device count.
int sweep_children(const std::vector<PlannedProblem>& plan, int devices);

// The OpenMP threads of each of `children` processes where the parent may run on `cores` cores:
// an equal share, 1 at least (the CPU quantizer and the reference run on all threads of their
// process).
int child_cpu_threads(int cores, int children);

}  // namespace kbit
