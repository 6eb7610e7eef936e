#include "harness/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/device_utils.hpp"

namespace kbit {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * double(v.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos)), hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

namespace {

// A graph of `count` launches, launch i on copy i % copies.
class LaunchGraph {
 public:
  LaunchGraph(const LaunchFn& launch, int count, int copies, cudaStream_t stream) {
    KBIT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      for (int i = 0; i < count; ++i) launch(i % copies, stream);
    } catch (...) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream, &g);
      if (g) cudaGraphDestroy(g);
      cudaGetLastError();
      throw;
    }
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &g);
    if (end != cudaSuccess) {
      cudaGetLastError();
      throw Error(std::string("the run step could not be captured into a CUDA graph (") +
                  cudaGetErrorString(end) + "): a run step must not allocate or synchronize");
    }
    graph_ = g;
    KBIT_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~LaunchGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  void replay(cudaStream_t stream) { KBIT_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// A rough time of one launch on the GPU: the least of a few replays of a graph of 3 launches.
// The least, so that one slow replay (another process on the GPU) does not send a microsecond
// kernel down the plain path (ctest runs GPU tests in parallel). A graph, so that the host's
// cost of a launch is left out: timed as plain launches, a call whose host side outlasts its
// kernel (cuBLAS at some shapes: 10-30 us a call for a 5.5 us GEMM) read as a 20+ us launch,
// and the plain path then timed the host as well (rel_noise up to 1.4; session 17).
double estimate_launch_us(const LaunchFn& launch, int copies, cudaStream_t stream,
                          gpu::EventTimer& ev) {
  constexpr int kProbe = 3;
  LaunchGraph probe(launch, kProbe, copies, stream);
  double best_ms = 1e30;
  for (int rep = 0; rep < 5; ++rep)
    best_ms = std::min(best_ms, ev.time_ms(stream, [&] { probe.replay(stream); }));
  return best_ms * 1000.0 / kProbe;
}

}  // namespace

TimingResult time_launches(const LaunchFn& launch, int copies, const TimingConfig& cfg,
                           cudaStream_t stream, double graph_threshold_us) {
  TimingResult r;
  r.copies = std::max(1, copies);
  gpu::EventTimer ev;
  r.sm_mhz_before = gpu::measure_sm_clock_mhz(stream, 100);
  // Warm-up (module load, caches of the allocator, clocks), then a rough single-launch time.
  for (int i = 0; i < std::max(1, cfg.warmup); ++i) launch(i % r.copies, stream);
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double est_us = estimate_launch_us(launch, r.copies, stream, ev);

  std::vector<double> us;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto done = [&] {
    if (int(us.size()) >= cfg.max_samples) return true;
    if (int(us.size()) < cfg.min_samples) return elapsed_s() > 4 * cfg.timeout_s;  // hard stop
    const double med = percentile(us, 50);
    r.rel_noise = med > 0 ? (percentile(us, 90) - percentile(us, 10)) / med : 0;
    r.converged = r.rel_noise <= cfg.max_rel_noise;
    return r.converged || elapsed_s() > cfg.timeout_s;
  };

  if (est_us < graph_threshold_us) {
    // ~2 ms of launches per replay, and at least one pass over every copy.
    int count = int(std::ceil(2000.0 / std::max(est_us, 0.5)));
    count = std::max(count, r.copies);
    count = ((count + r.copies - 1) / r.copies) * r.copies;
    count = std::min(count, std::max(r.copies, 20000));
    LaunchGraph graph(launch, count, r.copies, stream);
    for (int i = 0; i < std::max(1, cfg.warmup); ++i) graph.replay(stream);
    KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    r.graph = true;
    r.launches_per_sample = count;
    while (!done())
      us.push_back(ev.time_ms(stream, [&] { graph.replay(stream); }) * 1000.0 / count);
  } else {
    // A sample is a batch of launches (~200 us) behind an untimed lead-in launch: the host
    // enqueues the batch while the lead-in runs, so the start event waits on the GPU, not the
    // GPU on the host. One launch between two events on an idle GPU also timed the host's
    // launch latency (~5 us on the H100: a 17 us kernel read 23 us, session 5).
    const int batch = std::clamp(int(std::ceil(200.0 / std::max(est_us, 1.0))), 1, 16);
    r.launches_per_sample = batch;
    int i = 0;
    while (!done()) {
      launch(i++ % r.copies, stream);  // lead-in
      us.push_back(ev.time_ms(stream, [&] {
        for (int j = 0; j < batch; ++j) launch(i++ % r.copies, stream);
      }) * 1000.0 / batch);
    }
  }
  KBIT_CUDA_CHECK(cudaGetLastError());
  r.samples = int(us.size());
  r.median_us = percentile(us, 50);
  r.p10_us = percentile(us, 10);
  r.p90_us = percentile(us, 90);
  r.sm_mhz_after = gpu::measure_sm_clock_mhz(stream, 100);
  return r;
}

}  // namespace kbit
