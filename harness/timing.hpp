// Timing with CUDA events (method in docs/harness.md): warm-up, then samples until the
// spread is small or the time is up; launches shorter than ~20 us on the GPU, or whose host
// side takes more than half their GPU time, are timed as a CUDA graph of many launches; L2-cold
// runs rotate through weight copies.
#pragma once
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "harness/config.hpp"

namespace kbit {

struct TimingResult {
  double median_us = 0, p10_us = 0, p90_us = 0;
  int samples = 0;
  int launches_per_sample = 1;  // launches a sample averages: a graph replay or a plain batch
  bool graph = false;
  int copies = 1;          // weight copies the launches rotated through
  bool converged = false;  // (p90 - p10) / median reached max_rel_noise
  double rel_noise = 0;
  double sm_mhz_before = 0, sm_mhz_after = 0;
};

// One launch of the variant on weight copy `copy`; must not synchronize or allocate.
using LaunchFn = std::function<void(int copy, cudaStream_t stream)>;

// A CUDA graph of `count` launches, launch i on copy i % copies, captured on `stream` (a launch
// that synchronizes or allocates is refused by name); destroyed with the object.
class LaunchGraph {
 public:
  LaunchGraph(const LaunchFn& launch, int count, int copies, cudaStream_t stream);
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;
  ~LaunchGraph();
  void replay(cudaStream_t stream);

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// `copies` > 1 rotates launch i onto copy i % copies (L2-cold); 1 reuses one copy (hot).
TimingResult time_launches(const LaunchFn& launch, int copies, const TimingConfig& cfg,
                           cudaStream_t stream, double graph_threshold_us = 20.0);

// p-th percentile (0..100) of v, linear between order statistics.
double percentile(std::vector<double> v, double p);

}  // namespace kbit
