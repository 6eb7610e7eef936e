// kbit-harness format --awq: the AWQ int4 quantizers (docs/awq_format.md). The CPU reference
// quantizes a random fp16 weight; the GPU's fused and multi-pass quantizers must give the same
// words; both are timed (median of event-timed launches, the weight L2-cold only when it is
// larger than L2) against a device-to-device copy of the same bytes. --dump DIR writes the
// weight and the reference's tensors of it, an activation, C_ref and its bound, before any GPU
// work, for harness/peers/awq_parity.py.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/device_utils.hpp"
#include "harness/problem.hpp"
#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "reference/error_budget.hpp"
#include "reference/fp16.hpp"
#include "reference/gemm_ref.hpp"
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

// --dump: rows of A (a decode-sized batch: enough rows for a GEMM, few enough for a quick
// float64 reference).
constexpr std::int64_t kDumpM = 16;

namespace fs = std::filesystem;

// The folder for --dump, created if missing; refused before anything is printed.
void prepare_dump_dir(const std::string& dir) {
  const std::uint16_t one = 1;
  if (*reinterpret_cast<const unsigned char*>(&one) != 1)
    throw Error("--dump writes little-endian files; this host is big-endian");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error("--dump '" + dir + "' is not a folder that can be created (" +
                (ec ? ec.message() : std::string("a file of that name exists")) + ")");
}

void write_raw(const fs::path& path, const void* data, std::size_t bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
  f.close();
  if (!f) throw Error("cannot write " + std::to_string(bytes) + " bytes to '" + path.string() + "'");
}

template <class T>
void write_vector(const fs::path& path, const std::vector<T>& v) {
  write_raw(path, v.data(), v.size() * sizeof(T));
}

// R[m][n]: the range (max - min) of the prefix sums of A[m, k] W[n, k] at 32-element boundaries
// of k, 0 included, in double (check.py reference_rows): what a kernel that adds split-K
// partial sums in the output type rounds (docs/peers.md, "The check").
std::vector<double> prefix_ranges(const std::vector<float>& A, std::int64_t M,
                                  const std::vector<float>& W, std::int64_t N, std::int64_t K) {
  std::vector<double> r(std::size_t(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      const float* a = &A[std::size_t(m * K)];
      const float* w = &W[std::size_t(n * K)];
      double sum = 0, lo = 0, hi = 0;
      for (std::int64_t k0 = 0; k0 < K; k0 += 32) {
        double part = 0;
        for (std::int64_t k = k0; k < std::min(K, k0 + 32); ++k) part += double(a[k]) * w[k];
        sum += part;
        lo = std::min(lo, sum), hi = std::max(hi, sum);
      }
      r[std::size_t(m * N + n)] = hi - lo;
    }
  return r;
}

// The fp16 weight w16 ([N][K_in], the kbit orientation) and the reference's tensors of it, a
// random fp16 A[kDumpM, K_in], the float64 reference GEMM on the dequantized weight
// (awq_gemm_ref), its element-wise bound and meta.json (docs/peers.md, "AWQ parity").
void dump_awq(const std::string& dir, const std::vector<std::uint16_t>& w16, const AwqTensor& t,
              std::uint64_t seed) {
  const std::int64_t M = kDumpM, N = t.n_out, K = t.k_in;
  // A's own stream: element i of a random_normal depends only on (seed, i), so the weight's
  // seed would give A the weight's first values.
  const std::uint64_t a_seed = splitmix64(seed);
  const HostActivations a = make_activations(M, K, DType::f16, a_seed);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(M));
  std::iota(rows.begin(), rows.end(), 0);
  const GemmReference ref = awq_gemm_ref(a.values.data(), M, t, rows);
  // The bound of docs/format.md ("2. GEMM") with fp16 in and out; one extra addition per group:
  // a kernel that scales per group adds K_in / G partial sums (the humming peers' count).
  const std::int64_t extra = K / t.group;
  const GemmBound b = gemm_bound(DType::f16, DType::f16, K, extra);
  std::vector<double> c(std::size_t(M * N)), bound(c.size());
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      const double cr = ref.C(m, n);
      c[std::size_t(m * N + n)] = cr;
      bound[std::size_t(m * N + n)] = gemm_element_bound(b, ref.abs_dot(m, n), ref.abs_a_sum(m), cr);
    }
  const std::vector<double> range = prefix_ranges(a.values, M, awq_dequantize(t), N, K);

  const fs::path d(dir);
  write_vector(d / "w.f16", w16);
  write_vector(d / "qweight.i32", t.qweight);
  write_vector(d / "qzeros.i32", t.qzeros);
  write_vector(d / "scales.f16", t.scales);
  write_raw(d / "a.f16", a.bytes.data(), a.bytes.size());
  write_vector(d / "c_ref.f64", c);
  write_vector(d / "bound.f64", bound);
  write_vector(d / "prefix_range.f64", range);
  auto file = [](const char* name, const char* dtype, std::int64_t rows_, std::int64_t cols) {
    return nlohmann::json{{"name", name}, {"dtype", dtype}, {"shape", {rows_, cols}}};
  };
  const nlohmann::json meta = {
      {"format", "awq int4, AutoAWQ gemm layout (docs/awq_format.md)"},
      {"byte_order", "little"},
      {"M", M},
      {"N", N},
      {"K_in", K},
      {"group", t.group},
      {"dtype", "fp16"},
      {"weight_seed", seed},
      {"a_seed", a_seed},
      {"files",
       {{"w", file("w.f16", "fp16", N, K)},
        {"qweight", file("qweight.i32", "int32", K, N / 8)},
        {"qzeros", file("qzeros.i32", "int32", K / t.group, N / 8)},
        {"scales", file("scales.f16", "fp16", K / t.group, N)},
        {"a", file("a.f16", "fp16", M, K)},
        {"c_ref", file("c_ref.f64", "float64", M, N)},
        {"bound", file("bound.f64", "float64", M, N)},
        {"prefix_range", file("prefix_range.f64", "float64", M, N)}}},
      {"c_ref", "awq_gemm_ref: A (the fp16 values, exact) times the float32 dequantized weight, "
                "accumulated in double"},
      {"bound",
       {{"formula",
         "gamma |A||W_deq|^T (1 + 2^-11) + eta sum|A| + ulp_fp16(|C_ref|) (reference/"
         "error_budget.cpp gemm_element_bound)"},
        {"gamma", b.gamma},
        {"eta", b.eta},
        {"extra_additions", extra},
        {"not_included",
         "split-K partial sums added in fp16: add 1.01 s^2 2^-11 prefix_range for a kernel that "
         "adds up to s of them (humming's stream-K: s = 10)"}}},
  };
  std::ofstream f(d / "meta.json", std::ios::trunc);
  f << meta.dump(2) << "\n";
  f.close();
  if (!f) throw Error("cannot write '" + (d / "meta.json").string() + "'");
  std::printf("  dump: %s (A[%lld, %lld] fp16, C_ref and its bound, meta.json)\n", dir.c_str(),
              (long long)M, (long long)K);
}

}  // namespace

int format_awq(const FormatOptions& o) {
  // Every argument first: nothing is printed for a command line that will be refused.
  awq_check_shape(o.k_dim, o.rows, o.group);
  if (o.rows > kMaxDim || o.k_dim > kMaxDim || o.rows * o.k_dim > kMaxWeightElems)
    throw Error("--rows x --k-dim = " + std::to_string(o.rows) + " x " + std::to_string(o.k_dim) +
                " is above the limits (each at most " + std::to_string(kMaxDim) +
                ", their product at most " + std::to_string(kMaxWeightElems) + " elements)");
  if (!o.dump_dir.empty()) prepare_dump_dir(o.dump_dir);
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
  if (!o.dump_dir.empty()) dump_awq(o.dump_dir, w16, ref, o.seed);  // before any GPU work
  const bool ok = !gpu || awq_gpu(w16, o.rows, o.k_dim, o.group, ref);
  std::printf("%s\n", ok ? "OK" : "MISMATCH");
  return ok ? kExitOk : kExitCheckFailed;
}

}  // namespace kbit
