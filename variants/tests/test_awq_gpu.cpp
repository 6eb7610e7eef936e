// The GPU AWQ quantizers (variants/format/awq_kernels.hpp) against the CPU reference
// (reference/awq.hpp), word for word: fused and multi-pass, fp16 and fp32 input, every group
// size, shapes that are not multiples of the fused kernel's 64-column tile.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/random.hpp"
#include "variants/format/awq_kernels.hpp"
#include "variants/tests/gpu_test_util.hpp"

using namespace kbit;

namespace {

// Normal data with per-row spreads, one constant group (the 1e-5 clamp), rows of sigma 1e-5
// (subnormal fp16 scales) and ramp rows whose every value is a tie: the ramp spans
// -1.875 .. 1.875, so the scale is 3.75 / 15 = 0.25 exactly, -min / s = 7.5 and each x / s is
// k - 7.5 (rintf and roundf differ on all of them).
std::vector<float> awq_test_data(std::int64_t n, std::int64_t k_dim, int group,
                                 std::uint64_t seed) {
  auto x = random_normal(n * k_dim, seed);
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t k = 0; k < k_dim; ++k) {
      float& v = x[std::size_t(c * k_dim + k)];
      if (c % 5 == 1) v *= 0.01f;
      if (c % 13 == 4) v *= 1e-5f;                          // subnormal scales
      if (c % 7 == 3 && k < group) v = 0.25f;               // a constant group
      if (c % 11 == 6) v = float(k % 16) * 0.25f - 1.875f;  // every value a tie
    }
  return x;
}

struct GpuAwq {
  std::vector<std::int32_t> qweight, qzeros;
  std::vector<std::uint16_t> scales;
};

GpuAwq run_gpu(const std::vector<float>& x, DType in, std::int64_t n, std::int64_t k_dim, int group,
               bool fused) {
  std::vector<std::uint16_t> halves;
  DeviceBuffer<float> d32;
  DeviceBuffer<std::uint16_t> d16;
  const void* w = nullptr;
  if (in == DType::f16) {
    for (float v : x) halves.push_back(float_to_half(v));
    d16 = DeviceBuffer<std::uint16_t>(halves);
    w = d16.get();
  } else {
    d32 = DeviceBuffer<float>(x);
    w = d32.get();
  }
  auto qw = test::poisoned<std::int32_t>(std::size_t(k_dim * n / 8));
  auto qz = test::poisoned<std::int32_t>(std::size_t(k_dim / group * n / 8));
  auto sc = test::poisoned<std::uint16_t>(std::size_t(k_dim / group * n));
  const gpu::AwqOutputs out{qw.get(), qz.get(), sc.get()};
  if (fused) {
    gpu::awq_quantize(in, w, n, k_dim, group, out, nullptr);
  } else {
    DeviceBuffer<std::uint8_t> scratch(
        std::size_t(gpu::awq_multipass_scratch_bytes(n, k_dim, group)));
    gpu::awq_quantize_multipass(in, w, n, k_dim, group, out, scratch.get(), nullptr);
  }
  return {qw.download(), qz.download(), sc.download()};
}

}  // namespace

TEST_CASE("GPU AWQ quantizers are bit-exact with the awq reference", "[gpu][awq]") {
  KBIT_REQUIRE_GPU();
  struct Shape {
    std::int64_t n, k_dim;
  };
  for (int group : {32, 64, 128}) {
    for (Shape s : {Shape{8, 128}, Shape{64, 256}, Shape{200, 384}, Shape{1000, 512}}) {
      for (DType in : {DType::f16, DType::f32}) {
        auto x = awq_test_data(s.n, s.k_dim, group, std::uint64_t(s.n * 7 + group));
        // fp16 input: the reference quantizes the values the GPU reads.
        if (in == DType::f16)
          for (float& v : x) v = half_to_float(float_to_half(v));
        const AwqTensor ref = awq_quantize(x, s.n, s.k_dim, group);
        for (bool fused : {true, false}) {
          INFO("N=" << s.n << " K=" << s.k_dim << " G=" << group << " " << dtype_name(in)
                    << (fused ? " fused" : " multi-pass"));
          const GpuAwq got = run_gpu(x, in, s.n, s.k_dim, group, fused);
          CHECK(got.scales == ref.scales);
          CHECK(got.qzeros == ref.qzeros);
          CHECK(got.qweight == ref.qweight);
        }
      }
    }
  }
}

TEST_CASE("GPU AWQ quantizers refuse bad input by position", "[gpu][awq]") {
  KBIT_REQUIRE_GPU();
  const std::int64_t n = 16, k_dim = 128;
  auto x = awq_test_data(n, k_dim, 64, 5);
  x[std::size_t(9 * k_dim + 70)] = std::numeric_limits<float>::quiet_NaN();
  for (bool fused : {true, false}) {
    REQUIRE_THROWS_WITH(run_gpu(x, DType::f32, n, k_dim, 64, fused),
                        Catch::Contains("w[n = 9][k = 70]"));
  }
  auto big = awq_test_data(n, k_dim, 64, 6);
  big[std::size_t(3 * k_dim + 65)] = 2.0e6f;  // group 1 of column 3: range / 15 > 65504
  for (bool fused : {true, false}) {
    REQUIRE_THROWS_WITH(run_gpu(big, DType::f32, n, k_dim, 64, fused),
                        Catch::Contains("group 1") && Catch::Contains("n = 3"));
  }
  REQUIRE_THROWS_WITH(run_gpu(x, DType::f32, 12, k_dim, 64, true), Catch::Contains("12"));
  REQUIRE_THROWS_WITH(run_gpu(x, DType::f32, n, 96, 64, true), Catch::Contains("96"));
}
