// kbit-harness format / codebook / list.
#include <cstdio>
#include <iostream>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/dispatch.hpp"
#include "harness/options.hpp"
#include "harness/peers.hpp"
#include "harness/registry.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/error_budget.hpp"
#include "reference/fp16.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"
#include "reference/tiled.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/format/format_kernels.hpp"

namespace kbit {
namespace {

// Quantizes x on the GPU and compares every byte with the reference; also dequantize (fp16)
// and the tiled repack. Returns true when all are identical.
bool gpu_matches(const std::vector<float>& x, std::int64_t rows, std::int64_t k_dim,
                 const std::vector<float>& cb, int k, const QuantizedTensor& ref) {
  const std::int64_t n = std::int64_t(x.size()), nb = ref.num_blocks();
  DeviceBuffer<float> dx(x);
  DeviceBuffer<std::uint32_t> dp(std::size_t(nb * k));
  DeviceBuffer<float> da(static_cast<std::size_t>(nb));
  DeviceBuffer<std::uint8_t> de(static_cast<std::size_t>(nb));
  dp.fill_bytes(0xFF);
  de.fill_bytes(0xFF);
  const std::int64_t sat = gpu::quantize(DType::f32, dx.get(), n, cb, k,
                                         {dp.get(), da.get(), de.get(), nullptr}, nullptr);
  const bool q_ok = dp.download() == ref.packed && de.download() == ref.absmax_e4m4 &&
                    da.download() == ref.absmax && sat == ref.saturated_blocks;
  DeviceBuffer<std::uint16_t> dd(static_cast<std::size_t>(n));
  gpu::dequantize(dp.get(), de.get(), AbsmaxStorage::e4m4, n, gpu::make_codebook_arg(cb, k),
                  DType::f16, dd.get(), nullptr);
  std::vector<std::uint16_t> expect(static_cast<std::size_t>(n));
  dequantize(ref.packed.data(), ref.absmax_e4m4.data(), AbsmaxStorage::e4m4, n, k, cb, DType::f16,
             expect.data());
  const bool d_ok = dd.download() == expect;
  const TiledWeight tw =
      repack(ref.packed.data(), ref.absmax_e4m4.data(), rows, k_dim, k, {64, 128});
  DeviceBuffer<std::uint32_t> tp(tw.packed.size());
  DeviceBuffer<std::uint8_t> ta(tw.absmax.size());
  gpu::repack(dp.get(), de.get(), tw.geo, tp.get(), ta.get(), nullptr);
  const bool r_ok = tp.download() == tw.packed && ta.download() == tw.absmax;
  std::printf("      GPU quantize %s, dequantize(fp16) %s, repack(64x128) %s\n",
              q_ok ? "identical" : "DIFFERENT", d_ok ? "identical" : "DIFFERENT",
              r_ok ? "identical" : "DIFFERENT");
  return q_ok && d_ok && r_ok;
}

}  // namespace

int format_check(const FormatOptions& o) {
  // Every argument first: nothing is printed for a command line that will be refused.
  check_weight_shape(o.rows, o.k_dim);
  if (o.rows > kMaxDim || o.k_dim > kMaxDim || o.rows * o.k_dim > kMaxWeightElems)
    throw Error("--rows x --k-dim = " + std::to_string(o.rows) + " x " + std::to_string(o.k_dim) +
                " is above the limits (each at most " + std::to_string(kMaxDim) +
                ", their product at most " + std::to_string(kMaxWeightElems) + " elements)");
  if (o.k_bits.empty()) throw Error("--k-bits needs at least one bit width (2..5)");
  for (int k : o.k_bits) {
    check_k_bits(k);
    make_codebook(o.codebook, k);  // an unknown name throws, naming it and the known ones
  }
  const bool gpu = cuda_device_available();
  std::printf("W[%lld, %lld] ~ N(0,1), seed %llu, codebook %s\n", (long long)o.rows,
              (long long)o.k_dim, (unsigned long long)o.seed, o.codebook.c_str());
  if (!gpu)
    std::printf("no CUDA device: the GPU part (byte comparison) is skipped; CPU reference only\n");
  const std::vector<float> x = random_normal(o.rows * o.k_dim, o.seed);
  bool all_ok = true;
  std::printf("%3s %10s %10s %12s %9s %10s\n", "K", "SQNR(dB)", "rms err", "max err", "err/bnd",
              "saturated");
  for (int k : o.k_bits) {
    const auto cb = make_codebook(o.codebook, k);
    const auto q = quantize(x, cb, k);
    const auto st = quant_error_stats(x, q, cb, AbsmaxStorage::e4m4);
    std::printf("%3d %10.2f %10.5f %12.5f %9.4f %10lld\n", k, st.sqnr_db, st.rms_err,
                st.max_abs_err, st.max_err_over_bound, (long long)q.saturated_blocks);
    all_ok = all_ok && st.violations == 0;
    if (gpu) all_ok = gpu_matches(x, o.rows, o.k_dim, cb, k, q) && all_ok;
  }
  std::printf("%s\n", all_ok ? "OK" : "MISMATCH");
  return all_ok ? kExitOk : kExitCheckFailed;
}

int print_codebook(const std::string& name, int k) {
  const auto cb = make_codebook(name, k);
  std::printf("codebook %s, K = %d (%zu entries)\n", name.c_str(), k, cb.size());
  for (std::size_t i = 0; i < cb.size(); ++i)
    std::printf("%3zu  %+.9f  0x%08x\n", i, double(cb[i]), float_bits(cb[i]));
  return kExitOk;
}

int list_variants() {
  // The peers' columns up to `shapes` are read by harness/tests/check_peer_table.py; a peer
  // picks the problems of its format itself (the problems JSON's "format").
  std::printf("%-22s %-9s %-8s %-10s %-8s %-28s %-31s %-14s %s\n", "name", "family", "K bits",
              "dtypes", "M", "shapes", "formats", "layout", "description");
  for (const auto& r : registry()) {
    std::printf("%-22s %-9s %-8s %-10s %-8s %-28s %-31s %-14s %s\n", std::string(r.name).c_str(),
                family_name(r.family), describe_k_bits(r.support).c_str(),
                describe_dtypes(r.support).c_str(), describe_m_range(r.support).c_str(),
                describe_shape_rules(r.support).c_str(), describe_formats(r.support).c_str(),
                row_layout_name(r).c_str(), std::string(r.description).c_str());
    for (const std::string& o : describe_options(r)) std::printf("%24s option %s\n", "", o.c_str());
  }
  for (const auto& p : peers()) {
    std::string k, t;
    for (int b : p.k_bits) k += (k.empty() ? "" : ",") + std::to_string(b);
    for (DType d : p.dtypes) t += (t.empty() ? "" : ",") + std::string(dtype_name(d));
    char bits[32];
    std::snprintf(bits, sizeof bits, "%.3f bits/weight", p.bits_per_weight);
    std::printf("%-22s %-9s %-8s %-10s %-8s %-28s %-31s %-14s %s (%s; python package %s)\n",
                std::string(p.name).c_str(), "peer", k.c_str(), t.c_str(), "1..any",
                p.moe ? "dense+moe" : "dense", "-", "its own", std::string(p.description).c_str(),
                bits, std::string(p.package).c_str());
  }
  return kExitOk;
}

}  // namespace kbit
