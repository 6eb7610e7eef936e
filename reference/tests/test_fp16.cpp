#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "reference/fp16.hpp"
#include "reference/random.hpp"

using namespace kbit;

namespace {
std::uint16_t eigen_half(float f) {
  return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f));
}
std::uint16_t eigen_bf16(float f) {
  return Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(f));
}
}  // namespace

TEST_CASE("float_to_half matches Eigen::half on edge cases and random values", "[fp16]") {
  const float edge[] = {0.0f,
                        -0.0f,
                        1.0f,
                        -2.5f,
                        65504.0f,
                        65519.99f,
                        65520.0f,
                        1e9f,
                        -1e9f,
                        0x1p-14f,
                        0x1p-24f,
                        0x1p-25f,
                        0x1.8p-25f,
                        0x1p-26f,
                        0x1.ffcp-15f,
                        5.9604645e-08f,
                        6.1035156e-05f,
                        1.0009766f,
                        1.0004883f,
                        1.0014648f,
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::denorm_min()};
  for (float f : edge) {
    INFO("f = " << f);
    CHECK(float_to_half(f) == eigen_half(f));
  }
  const auto r = random_normal(200000, 3);
  for (std::size_t i = 0; i < r.size(); ++i) {
    const float f = r[i] * std::ldexp(1.0f, int(i % 50) - 30);  // spans subnormal to overflow
    REQUIRE(float_to_half(f) == eigen_half(f));
  }
  CHECK((float_to_half(NAN) & 0x7C00) == 0x7C00);
  CHECK((float_to_half(NAN) & 0x3FF) != 0);
}

TEST_CASE("half_to_float is exact for all 65536 patterns", "[fp16]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(std::uint16_t(h));
    const float e = float(Eigen::numext::bit_cast<Eigen::half>(std::uint16_t(h)));
    if (std::isnan(e)) {
      REQUIRE(std::isnan(f));
    } else {
      REQUIRE(float_bits(f) == float_bits(e));
      REQUIRE(float_to_half(f) == h);  // round trip
    }
  }
}

TEST_CASE("float_to_bf16 rounds to nearest even like Eigen::bfloat16", "[fp16]") {
  const auto r = random_normal(200000, 4);
  for (std::size_t i = 0; i < r.size(); ++i) {
    const float f = r[i] * std::ldexp(1.0f, int(i % 200) - 100);
    REQUIRE(float_to_bf16(f) == eigen_bf16(f));
  }
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3F80);    // tie -> even
  CHECK(float_to_bf16(1.0f + 0x1.8p-7f) == 0x3F82);  // tie -> even (up)
  CHECK(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST_CASE("a few patterns worked out by hand", "[fp16]") {
  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0xC000) == -2.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(half_to_float(0x0001) == 0x1p-24f);  // the smallest subnormal
  CHECK(half_to_float(0x2E66) == 0.0999755859375f);
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_float(0x3DCD) == 0.10009765625f);
}

TEST_CASE("round_to, load_as_float and store_from_float agree on 0.1", "[fp16]") {
  // 0.1 = 1.6 * 2^-4. fp16: mantissa 0.6 * 1024 = 614.4 -> 614: 0x2E66 = 1638 / 16384. bf16: float
  // 0x3DCCCCCD, low half 0xCCCD above half way -> 0x3DCD = 205 / 2048.
  const struct {
    DType t;
    std::uint16_t bits;
    float value;
  } want[] = {{DType::f16, 0x2E66, 0.0999755859375f}, {DType::bf16, 0x3DCD, 0.10009765625f}};
  std::uint16_t h[1];
  for (const auto& w : want) {
    INFO(dtype_name(w.t));
    store_from_float(w.t, h, 0, 0.1f);
    CHECK(h[0] == w.bits);
    CHECK(load_as_float(w.t, h, 0) == w.value);
    CHECK(round_to(w.t, 0.1f) == w.value);
  }
  float f[1];
  store_from_float(DType::f32, f, 0, 0.1f);
  CHECK(load_as_float(DType::f32, f, 0) == 0.1f);
}
