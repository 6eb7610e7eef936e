#include "harness/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness/device_utils.hpp"
#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * double(v.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos)), hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

LaunchGraph::LaunchGraph(const LaunchFn& launch, int count, int copies, cudaStream_t stream) {
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

LaunchGraph::~LaunchGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void LaunchGraph::replay(cudaStream_t stream) {
  KBIT_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

namespace {

// What one launch costs: on the GPU (the least of a few replays of a graph of 3 launches, so
// that one slow replay, e.g. another process on the GPU, does not send a microsecond kernel down
// the plain path; ctest runs GPU tests in parallel) and on the host (the median time to enqueue
// them, the GPU not waited for). The path is not chosen from plain launches between two events,
// which time the host whenever a call's host side outlasts its kernel (cuBLAS: 10-30 us a call at
// some shapes, a 5.5 us GEMM read 17-20 us, rel_noise up to 1.4; F-003).
struct LaunchCost {
  double gpu_us, host_us;
};

LaunchCost estimate_launch(const LaunchFn& launch, int copies, cudaStream_t stream,
                           gpu::EventTimer& ev) {
  constexpr int kProbe = 3, kReps = 5;
  std::vector<double> host_us;
  for (int rep = 0; rep < kReps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kProbe; ++i) launch(i % copies, stream);
    const auto t1 = std::chrono::steady_clock::now();
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kProbe);
    KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  LaunchGraph probe(launch, kProbe, copies, stream);
  double best_ms = 1e30;
  for (int rep = 0; rep < kReps; ++rep)
    best_ms = std::min(best_ms, ev.time_ms(stream, [&] { probe.replay(stream); }));
  return {best_ms * 1000.0 / kProbe, percentile(host_us, 50)};
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
  const LaunchCost cost = estimate_launch(launch, r.copies, stream, ev);
  const double est_us = cost.gpu_us;
  // The plain path keeps the GPU busy only while the host enqueues faster than the GPU runs
  // (the lead-in launch gives it one launch's head start); with less than 2x to spare it would
  // time the host (dequantize + cuBLAS rows of ~25 us read rel_noise ~1), so those go to a graph.
  const bool use_graph = est_us < graph_threshold_us || cost.host_us > 0.5 * est_us;

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

  if (use_graph) {
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
    // launch latency (~5 us on the H100: a 17 us kernel read 23 us, F-002).
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
