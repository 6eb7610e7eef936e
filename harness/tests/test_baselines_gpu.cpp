// GPU: both baselines pass the check on random data; the timing machinery works (graph and
// plain paths); the check can fail.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <tuple>
#include <type_traits>

#include "harness/device_utils.hpp"
#include "harness/dispatch.hpp"
#include "harness/execute.hpp"
#include "harness/timing.hpp"
#include "reference/codebook.hpp"
#include "reference/gemm_ref.hpp"
#include "variants/tests/gpu_test_util.hpp"

using namespace kbit;

namespace {

struct Fixture {
  HostWeights hw;
  HostActivations A;
  GemmDims d;
  Fixture(std::int64_t M, std::int64_t N, std::int64_t K, int k, DType t, int experts = 0)
      : hw(make_host_weights(N, K, k, codebook_nf(k), std::max(1, experts), 11)),
        A(make_activations(M, K, t, 12)) {
    d.M = M, d.N = N, d.K_dim = K, d.k_bits = k, d.dtype = t, d.num_experts = experts;
  }
  // AWQ int4 weights of group `awq_group` (dense).
  Fixture(std::int64_t M, std::int64_t N, std::int64_t K, DType t, int awq_group)
      : hw(make_host_weights_awq(N, K, awq_group, 1, 11)), A(make_activations(M, K, t, 12)) {
    d.M = M, d.N = N, d.K_dim = K, d.k_bits = 4, d.awq_group = awq_group, d.dtype = t;
  }
};

Outcome run_row(const VariantRow& row, Fixture& f, Stream& s) {
  DeviceWeights dw(f.hw, f.d.dtype, {row_layout(row, f.d)}, 1, s.get());
  const OwnedProblem p(dw, f.A, f.d, f.hw.codebook);
  const auto ref = make_reference(f.hw, f.A, f.d, sample_rows(f.d.M, 1 << 20));
  return execute_and_check(row, {}, f.d, p.view(), &ref, s.get());
}

}  // namespace

TEST_CASE("baselines pass the check on random data", "[gpu][baseline]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  for (const char* name : {"cublas_fp16", "dequant_cublas"}) {
    for (DType t : {DType::f16, DType::bf16}) {
      for (int k : {2, 5}) {
        for (std::int64_t M : {1, 17, 64}) {
          Fixture f(M, 200, 96, k, t);
          const Outcome o = run_row(find_variant(name), f, s);
          INFO(name << " " << dtype_name(t) << " K=" << k << " M=" << M << " " << o.error);
          REQUIRE(o.error.empty());
          CHECK(o.check.pass);
          CHECK(o.check.max_err_over_bound < 1.0);
          CHECK(o.check.max_err_over_bound > 0.0);
        }
      }
    }
  }
}

TEST_CASE("cuBLAS passes the check on AWQ weights of every group, and the device layouts hold them",
          "[gpu][baseline][awq]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  const VariantRow& row = find_variant("cublas_fp16");
  for (int g : {32, 64, 128}) {
    for (DType t : {DType::f16, DType::bf16}) {
      for (std::int64_t M : {1, 17, 64}) {
        Fixture f(M, 264, 384, t, g);
        REQUIRE(unsupported_reason(row, f.d).empty());
        const Outcome o = run_row(row, f, s);
        INFO("G = " << g << " " << dtype_name(t) << " M=" << M << " " << o.error);
        REQUIRE(o.error.empty());
        CHECK(o.check.pass);
        CHECK(o.check.max_err_over_bound > 0.0);
      }
    }
    // The awq layouts are the host tensors, byte for byte, in every rotation copy.
    const HostWeights hw = make_host_weights_awq(264, 384, g, 1, 11);
    DeviceWeights dw(hw, DType::f16, {{LayoutKind::awq, {}}, {LayoutKind::awq_tiled, {}}}, 2,
                     s.get());
    const AwqTiled tiled = awq_tile(hw.awq);
    for (int copy : {0, 1}) {
      const WeightView a = dw.view({LayoutKind::awq, {}}, copy);
      const WeightView b = dw.view({LayoutKind::awq_tiled, {}}, copy);
      CHECK(a.awq_group == g);
      CHECK(b.awq_group == g);
      auto download = [](const auto* p, std::size_t n) {
        std::vector<std::remove_const_t<std::remove_pointer_t<decltype(p)>>> h(n);
        KBIT_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(h[0]), cudaMemcpyDeviceToHost));
        return h;
      };
      CHECK(download(a.awq_qweight, hw.awq.qweight.size()) == hw.awq.qweight);
      CHECK(download(a.awq_qzeros, hw.awq.qzeros.size()) == hw.awq.qzeros);
      CHECK(download(a.awq_scales, hw.awq.scales.size()) == hw.awq.scales);
      CHECK(download(b.awq_tiles, tiled.words.size()) == tiled.words);
      CHECK(download(b.awq_meta, tiled.meta.size()) == tiled.meta);
    }
    CHECK_THROWS_WITH(DeviceWeights(hw, DType::f16, {{LayoutKind::tiled, {64, 128}}}, 1, s.get()),
                      Catch::Contains("awq_g"));
  }
}

TEST_CASE("baselines handle grouped problems with empty experts", "[gpu][baseline]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  for (const char* name : {"cublas_fp16", "dequant_cublas", "cublas_grouped"}) {
    Fixture f(7, 64, 128, 4, DType::f16, 4);
    f.d.expert_offsets = {0, 3, 3, 7, 7};
    const Outcome o = run_row(find_variant(name), f, s);
    INFO(name << " " << o.error);
    REQUIRE(o.error.empty());
    CHECK(o.check.pass);
  }
}

TEST_CASE("a wrong output fails the check", "[gpu][baseline]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  Fixture f(4, 64, 64, 4, DType::f16);
  auto ref = make_reference(f.hw, f.A, f.d, {0, 1, 2, 3});
  ref.C(2, 5) += 1.0;  // the reference disagrees at one element
  DeviceWeights dw(f.hw, f.d.dtype, {find_variant("cublas_fp16").layout}, 1, s.get());
  DeviceBuffer<unsigned char> dA(f.A.bytes), dC(std::size_t(4 * 64 * 2));
  DeviceProblem p{&dw,        dA.get(), dC.get(),
                  dC.bytes(), nullptr,  gpu::make_codebook_arg(f.hw.codebook, 4)};
  const Outcome o = execute_and_check(find_variant("cublas_fp16"), {}, f.d, p, &ref, s.get());
  CHECK_FALSE(o.check.pass);
  CHECK(o.check.violations == 1);
  REQUIRE(o.check.first_bad.size() == 1);
  CHECK(o.check.first_bad[0].row == 2);
  CHECK(o.check.first_bad[0].col == 5);
}

TEST_CASE("timing gives positive, ordered statistics on both paths", "[gpu][timing]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  for (std::int64_t n :
       {std::int64_t(1) << 16, std::int64_t(1) << 27}) {  // ~us (graph) and ~100 us (plain)
    DeviceBuffer<float> buf(static_cast<std::size_t>(n));
    TimingConfig cfg;
    cfg.timeout_s = 0.3;
    const TimingResult t = time_launches(
        [&](int, cudaStream_t st) { gpu::fill_random(DType::f32, buf.get(), n, 1, st); }, 1, cfg,
        s.get());
    INFO("n=" << n << " median " << t.median_us << " us graph " << t.graph);
    CHECK(t.median_us > 0);
    CHECK(t.p10_us <= t.median_us);
    CHECK(t.median_us <= t.p90_us);
    CHECK(t.samples >= cfg.min_samples);
    CHECK(t.sm_mhz_before > 100);
    CHECK(t.graph == (n == (std::int64_t(1) << 16)));
  }
}

TEST_CASE("timing measures the GPU, not a launch's host cost", "[gpu][timing]") {
  // Kernels behind more host work per launch than their GPU time (cuBLAS's host side outlasted
  // its kernel at some shapes): a ~2 us kernel behind 60 us, and a ~100 us one behind 300 us.
  // Both must be timed as a graph, which leaves the host out; the plain path would read the
  // host's 60 / 300 us.
  KBIT_REQUIRE_GPU();
  Stream s;
  for (auto [log2n, sleep_us, below_us] : {std::tuple{16, 60, 20.0}, std::tuple{26, 300, 250.0}}) {
    const std::int64_t n = std::int64_t(1) << log2n;
    DeviceBuffer<float> buf(static_cast<std::size_t>(n));
    TimingConfig cfg;
    cfg.timeout_s = 0.3;
    const TimingResult t = time_launches(
        [&, sleep_us = sleep_us](int, cudaStream_t st) {
          std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
          gpu::fill_random(DType::f32, buf.get(), n, 1, st);
        },
        1, cfg, s.get());
    INFO("n = 2^" << log2n << ", host " << sleep_us << " us: median " << t.median_us
                  << " us, graph " << t.graph << ", " << t.launches_per_sample
                  << " launches per sample");
    CHECK(t.graph);
    CHECK(t.median_us < below_us);
  }
}
