// kbit-harness format --awq: the AWQ int4 quantizers (docs/awq_format.md). The CPU reference
// quantizes a random fp16 weight; the GPU's fused and multi-pass quantizers must give the same
// words; both are timed (median of event-timed launches, the weight L2-cold only when it is
// larger than L2) against a device-to-device copy of the same bytes.
#include <cmath>
#include <cstdio>
#include <string>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/device_utils.hpp"
#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/random.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/format/awq_kernels.hpp"
#include "variants/format/awq_launch.hpp"

namespace kbit {
namespace {

constexpr int kWarmup = 3, kReps = 20;
constexpr int kBatch = 10;  // launches a timed sample: the submission latency (F-002) spread

// The GPU part: bytes identical to the reference, then the throughputs. True when identical.
bool awq_gpu(const std::vector<std::uint16_t>& w16, std::int64_t n, std::int64_t k_dim, int group,
             const AwqTensor& ref) {
  DeviceBuffer<std::uint16_t> w(w16);
  DeviceBuffer<std::int32_t> qw(ref.qweight.size()), qz(ref.qzeros.size());
  DeviceBuffer<std::uint16_t> sc(ref.scales.size());
  DeviceBuffer<std::uint8_t> scratch(
      std::size_t(gpu::awq_multipass_scratch_bytes(n, k_dim, group)));
  DeviceBuffer<unsigned long long> errors(2);
  const gpu::AwqOutputs out{qw.get(), qz.get(), sc.get()};
  bool all_ok = true;
  for (bool fused : {true, false}) {
    qw.fill_bytes(0xFF), qz.fill_bytes(0xFF), sc.fill_bytes(0xFF);
    if (fused)
      gpu::awq_quantize(DType::f16, w.get(), n, k_dim, group, out, nullptr);
    else
      gpu::awq_quantize_multipass(DType::f16, w.get(), n, k_dim, group, out, scratch.get(),
                                  nullptr);
    const bool ok =
        qw.download() == ref.qweight && qz.download() == ref.qzeros && sc.download() == ref.scales;
    std::printf("  GPU %-10s quantize + interleave + pack: %s\n", fused ? "fused" : "multi-pass",
                ok ? "identical to the reference" : "DIFFERENT from the reference");
    all_ok = all_ok && ok;
  }
  // Throughput: fp16 weight read + packed words, zeros and scales written.
  const double bytes = double(w.bytes() + qw.bytes() + qz.bytes() + sc.bytes());
  KBIT_CUDA_CHECK(cudaMemset(errors.get(), 0xFF, errors.bytes()));
  auto per_launch_ms = [&](auto&& launch) {
    return gpu::median_event_ms(nullptr, kWarmup, kReps,
                                [&] {
                                  for (int b = 0; b < kBatch; ++b) launch();
                                }) /
           kBatch;
  };
  const double fused_ms = per_launch_ms([&] {
    gpu::detail::launch_awq_fused(DType::f16, w.get(), n, k_dim, group, out, errors.get(), nullptr);
  });
  const double multi_ms = per_launch_ms([&] {
    gpu::detail::launch_awq_multipass(DType::f16, w.get(), n, k_dim, group, out, scratch.get(),
                                      errors.get(), nullptr);
  });
  DeviceBuffer<std::uint8_t> copy{w.bytes()};
  const double copy_ms = per_launch_ms([&] {
    KBIT_CUDA_CHECK(cudaMemcpyAsync(copy.get(), w.get(), w.bytes(), cudaMemcpyDeviceToDevice));
  });
  // A weight that fits in L2 (50 MB on the H100) is read from L2 after the first launch: these
  // are HBM figures only for larger weights (e.g. --rows 28672 --k-dim 8192).
  // The copy moves w.bytes() once each way: 2x its bytes, against the quantizer's read + write.
  const double copy_gbs = 2.0 * double(w.bytes()) / (copy_ms * 1e6);
  const double fused_gbs = bytes / (fused_ms * 1e6), multi_gbs = bytes / (multi_ms * 1e6);
  std::printf(
      "  fused %.1f us (%.0f GB/s, %.0f%% of the copy's %.0f GB/s); multi-pass %.1f us "
      "(%.0f GB/s effective: the fused kernel's bytes over its time): fused %.2fx\n",
      fused_ms * 1e3, fused_gbs, 100.0 * fused_gbs / copy_gbs, copy_gbs, multi_ms * 1e3, multi_gbs,
      multi_ms / fused_ms);
  return all_ok;
}

}  // namespace

int format_awq(const FormatOptions& o) {
  // Every argument first: nothing is printed for a command line that will be refused.
  awq_check_shape(o.k_dim, o.rows, o.group);
  if (o.rows > kMaxDim || o.k_dim > kMaxDim || o.rows * o.k_dim > kMaxWeightElems)
    throw Error("--rows x --k-dim = " + std::to_string(o.rows) + " x " + std::to_string(o.k_dim) +
                " is above the limits (each at most " + std::to_string(kMaxDim) +
                ", their product at most " + std::to_string(kMaxWeightElems) + " elements)");
  const bool gpu = cuda_device_available();
  std::printf("AWQ int4, W[%lld, %lld] ~ N(0,1) in fp16, group %d, seed %llu\n", (long long)o.rows,
              (long long)o.k_dim, o.group, (unsigned long long)o.seed);
  if (!gpu) std::printf("no CUDA device: the GPU part is skipped; CPU reference only\n");
  // fp16 weights, as AWQ checkpoints hold them; the reference quantizes the same values.
  std::vector<float> x = random_normal(o.rows * o.k_dim, o.seed);
  std::vector<std::uint16_t> w16(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    w16[i] = float_to_half(x[i]);
    x[i] = half_to_float(w16[i]);
  }
  const AwqTensor ref = awq_quantize(x, o.rows, o.k_dim, o.group);
  const std::vector<float> deq = awq_dequantize(ref);
  double err2 = 0, sig2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err2 += double(deq[i] - x[i]) * double(deq[i] - x[i]);
    sig2 += double(x[i]) * double(x[i]);
  }
  std::printf("  CPU reference: SQNR %.2f dB, %.3f bits a weight\n", 10.0 * std::log10(sig2 / err2),
              4.0 + 20.0 / o.group);
  const bool ok = !gpu || awq_gpu(w16, o.rows, o.k_dim, o.group, ref);
  std::printf("%s\n", ok ? "OK" : "MISMATCH");
  return ok ? kExitOk : kExitCheckFailed;
}

}  // namespace kbit
