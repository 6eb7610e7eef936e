// The --devices list, a config's problems in run order and their partition over devices
// (harness/shard.hpp).
#include "harness/shard.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <sstream>

#include "harness/weight_format.hpp"
#include "reference/error.hpp"

namespace kbit {
namespace {

constexpr int kMaxDeviceIndex = 1023;
constexpr int kMaxShards = 1024;

// A non-negative decimal integer of at most 9 digits, or -1.
int small_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  return std::stoi(s);
}

}  // namespace

DeviceSelection parse_devices(const std::string& text) {
  DeviceSelection sel;
  if (text == "all") {
    sel.all = true;
    return sel;
  }
  if (text.empty()) throw Error("--devices '' names no device: give all or indices like 0,1");
  std::stringstream s(text);
  for (std::string word; std::getline(s, word, ',');) {
    const int i = small_index(word);
    if (i < 0)
      throw Error("--devices '" + text + "': '" + word +
                  "' is not a device index (all, or indices from 0 like 0,1)");
    if (i > kMaxDeviceIndex)
      throw Error("--devices '" + text + "': index " + word + " is above the limit " +
                  std::to_string(kMaxDeviceIndex));
    if (std::find(sel.indices.begin(), sel.indices.end(), i) != sel.indices.end())
      throw Error("--devices '" + text + "': device " + word + " is given twice");
    sel.indices.push_back(i);
  }
  if (sel.indices.empty() || text.back() == ',')
    throw Error("--devices '" + text + "': an empty index (all, or indices from 0 like 0,1)");
  return sel;
}

std::vector<int> resolve_devices(const DeviceSelection& sel, int device_count) {
  if (sel.all) {
    std::vector<int> out(std::size_t(std::max(device_count, 0)));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int i : sel.indices)
    if (i >= device_count)
      throw Error("--devices: device " + std::to_string(i) + " is not on this host (" +
                  std::to_string(device_count) + " device" + (device_count == 1 ? "" : "s") +
                  ": indices 0.." + std::to_string(device_count - 1) + ")");
  return sel.indices;
}

ShardSpec parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  ShardSpec s;
  s.index = slash == std::string::npos ? -1 : small_index(text.substr(0, slash));
  s.count = slash == std::string::npos ? -1 : small_index(text.substr(slash + 1));
  if (s.index < 0 || s.count < 1 || s.index >= s.count || s.count > kMaxShards)
    throw Error("--shard '" + text +
                "' is not I/N with 0 <= I < N <= " + std::to_string(kMaxShards));
  return s;
}

void check_one_gpu_model(const std::vector<HostDevice>& devices) {
  for (const HostDevice& d : devices)
    if (d.name != devices.front().name)
      throw Error("--devices: device " + std::to_string(devices.front().index) + " is a " +
                  devices.front().name + ", device " + std::to_string(d.index) + " a " + d.name +
                  "; a run holds one GPU model's rows: give the devices of one model");
}

std::string WeightsOf::label() const {
  return weights_label(k_bits, awq_group);
}

std::vector<WeightsOf> weights_of(const ExperimentConfig& cfg, bool moe) {
  std::vector<WeightsOf> out;
  for (const std::string& f : cfg.formats) {
    const int group = parse_weight_format(f);
    if (group == 0) {
      for (int k : cfg.k_bits) out.push_back({k, 0});
    } else if (!moe) {
      out.push_back({4, group});
    }
  }
  return out;
}

double problem_cost_estimate(const PlannedProblem& p) {
  const double rows = double(p.moe ? p.m * p.top_k : p.m);
  const double bytes_per_weight =
      p.weights.awq_group > 0 ? 0.5 + 2.5 / p.weights.awq_group : p.weights.k_bits / 8.0 + 1.0 / 32;
  const double experts = p.moe ? std::min(double(p.experts), rows) : 1.0;
  const double elem = double(dtype_size(p.dtype));
  const double bytes = double(p.N) * double(p.K_dim) * bytes_per_weight * experts +
                       rows * double(p.K_dim) * elem + rows * double(p.N) * elem;
  const double flops = 2 * rows * double(p.N) * double(p.K_dim);
  return bytes / 3.0e6 + flops / 7.5e8 + 10;
}

std::vector<PlannedProblem> plan_problems(const ExperimentConfig& cfg) {
  std::vector<PlannedProblem> out;
  auto add = [&](PlannedProblem p) {
    p.cost = problem_cost_estimate(p);
    out.push_back(std::move(p));
  };
  for (const ShapeConfig& s : cfg.shapes)
    for (const WeightsOf& w : weights_of(cfg, false))
      for (DType t : cfg.dtypes)
        for (std::int64_t m : cfg.m) {
          PlannedProblem p;
          p.layer = s.name, p.N = s.n, p.K_dim = s.k_dim, p.weights = w, p.dtype = t, p.m = m;
          add(p);
        }
  for (const MoeConfig& mo : cfg.moe)
    for (const WeightsOf& w : weights_of(cfg, true))
      for (DType t : cfg.dtypes)
        for (std::int64_t tokens : cfg.tokens) {
          PlannedProblem p;
          p.layer = mo.name, p.moe = true, p.N = mo.n, p.K_dim = mo.k_dim;
          p.experts = mo.experts, p.top_k = mo.top_k;
          p.weights = w, p.dtype = t, p.m = tokens;
          add(p);
        }
  return out;
}

std::vector<int> assign_shards(const std::vector<double>& costs, int shards) {
  if (shards < 1) throw Error("assign_shards: " + std::to_string(shards) + " shards");
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(std::size_t(shards), 0.0);
  std::vector<int> count(std::size_t(shards), 0);
  std::vector<int> out(costs.size(), 0);
  for (std::size_t i : order) {
    // The least-loaded shard; an empty one first, so that no shard is left without a problem.
    int best = 0;
    for (int s = 1; s < shards; ++s) {
      const bool empty_s = count[s] == 0, empty_b = count[best] == 0;
      if (empty_s != empty_b ? empty_s : load[s] < load[best]) best = s;
    }
    out[i] = best;
    load[best] += costs[i];
    ++count[best];
  }
  return out;
}

namespace {

// The (layer, weight format) group of each problem of `plan` (runs of consecutive problems) and
// each group's summed cost.
std::vector<std::size_t> layer_groups(const std::vector<PlannedProblem>& plan,
                                      std::vector<double>& group_cost) {
  std::vector<std::size_t> group_of(plan.size());
  group_cost.clear();
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const bool same = i > 0 && plan[i].layer == plan[i - 1].layer &&
                      plan[i].moe == plan[i - 1].moe &&
                      plan[i].weights.k_bits == plan[i - 1].weights.k_bits &&
                      plan[i].weights.awq_group == plan[i - 1].weights.awq_group;
    if (!same) group_cost.push_back(0.0);
    group_of[i] = group_cost.size() - 1;
    group_cost.back() += plan[i].cost;
  }
  return group_of;
}

}  // namespace

std::vector<int> assign_shards_by_layer(const std::vector<PlannedProblem>& plan, int shards) {
  std::vector<double> group_cost;
  const std::vector<std::size_t> group_of = layer_groups(plan, group_cost);
  if (int(group_cost.size()) < shards) {
    std::vector<double> costs;
    for (const PlannedProblem& p : plan) costs.push_back(p.cost);
    return assign_shards(costs, shards);
  }
  const std::vector<int> of_group = assign_shards(group_cost, shards);
  std::vector<int> out(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) out[i] = of_group[group_of[i]];
  return out;
}

int sweep_children(const std::vector<PlannedProblem>& plan, int devices) {
  std::vector<double> group_cost;
  layer_groups(plan, group_cost);
  const std::size_t units = group_cost.size() >= 2 ? group_cost.size() : plan.size();
  return int(
      std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(std::max(devices, 1)), units)));
}

int child_cpu_threads(int cores, int children) {
  if (children < 1) throw Error("child_cpu_threads: " + std::to_string(children) + " children");
  return std::max(1, cores / children);
}

}  // namespace kbit
