#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "reference/e4m4.hpp"
#include "reference/error.hpp"
#include "reference/random.hpp"

using namespace kbit;

namespace {

// The seeds' encoder (bitsandbytes encode_absmax_e4m4): floor(log2), round the mantissa,
// clamp it without carrying into the exponent. Kept here only to measure the difference.
std::uint8_t seed_style_encode(float x) {
  if (x <= 0) return 0;
  int e = int(std::floor(std::log2(x)));
  int eb = std::max(0, std::min(15, e + kE4M4Bias));
  if (eb == 0) return std::uint8_t(std::min(15, int(std::lround(x / std::ldexp(1.0f, -14)))));
  int m = int(std::lround((x / std::ldexp(1.0f, eb - kE4M4Bias) - 1.0f) * 16.0f));
  m = std::max(0, std::min(15, m));
  return std::uint8_t((eb << 4) | m);
}

}  // namespace

TEST_CASE("all 256 E4M4 codes decode to the documented values", "[e4m4]") {
  for (int c = 0; c < 256; ++c) {
    const int e = c >> 4, m = c & 15;
    const double expect =
        e == 0 ? std::pow(2.0, -10) * m / 16.0 : std::pow(2.0, e - 11) * (1.0 + m / 16.0);
    INFO("code 0x" << std::hex << c);
    CHECK(double(e4m4_decode(std::uint8_t(c))) == expect);
  }
  CHECK(e4m4_decode(0x00) == 0.0f);
  CHECK(e4m4_decode(0xFF) == 31.0f);
  CHECK(e4m4_decode(0x10) == 0x1p-10f);
  CHECK(e4m4_decode(0xB0) == 1.0f);  // e = 11: 2^0
}

TEST_CASE("encode(decode(c)) == c for every code, and encode is monotonic", "[e4m4]") {
  for (int c = 0; c < 256; ++c) CHECK(e4m4_encode(e4m4_decode(std::uint8_t(c))) == c);
  std::uint8_t prev = 0;
  for (double x = 0; x < 40.0; x = x < 1e-6 ? x + 1e-9 : x * 1.0007) {
    const std::uint8_t c = e4m4_encode(float(x));
    CHECK(c >= prev);
    prev = c;
  }
}

TEST_CASE("E4M4 encode rounds to nearest, ties to even, with carry", "[e4m4]") {
  // 1 + 0.5/16 is halfway between codes 0xB0 and 0xB1: ties to even mantissa 0.
  CHECK(e4m4_encode(1.0f + 0.5f / 16) == 0xB0);
  CHECK(e4m4_encode(1.0f + 1.5f / 16) == 0xB2);  // halfway 1|2 -> 2
  CHECK(e4m4_encode(1.0f + 0.51f / 16) == 0xB1);
  // Just below 2: rounds up to 2.0 by carrying into the exponent (the seeds' encoder clamps
  // the mantissa to 15 and returns 1.9375 instead).
  CHECK(e4m4_encode(1.99f) == 0xC0);
  CHECK(seed_style_encode(1.99f) == 0xBF);
  // Subnormals: m * 2^-14; 15.5 * 2^-14 ties to 16 = the smallest normal 0x10.
  CHECK(e4m4_encode(3.0f * 0x1p-14f) == 0x03);
  CHECK(e4m4_encode(15.5f * 0x1p-14f) == 0x10);
  CHECK(e4m4_encode(0x1p-16f) == 0x00);  // a quarter of the smallest step rounds to zero
}

TEST_CASE("E4M4 saturates at 31 and says so", "[e4m4]") {
  bool sat = true;
  CHECK(e4m4_encode(31.2f, &sat) == 0xFF);
  CHECK_FALSE(sat);  // ordinary rounding to the largest code
  CHECK(e4m4_encode(31.5f, &sat) == 0xFF);
  CHECK(sat);  // the tie rounds to 32, which does not exist
  CHECK(e4m4_encode(1000.0f, &sat) == 0xFF);
  CHECK(sat);
}

TEST_CASE("E4M4 encode refuses negative and non-finite input", "[e4m4]") {
  CHECK_THROWS_WITH(e4m4_encode(-1.0f), Catch::Contains("negative or not finite"));
  CHECK_THROWS_AS(e4m4_encode(NAN), Error);
  CHECK_THROWS_AS(e4m4_encode(INFINITY), Error);
}

TEST_CASE("E4M4 relative error is at most 1/32 in the normal range", "[e4m4]") {
  for (double x = kE4M4MinNormal; x <= kE4M4Max; x *= 1.0001) {
    const double d = e4m4_decode(e4m4_encode(float(x)));
    REQUIRE(std::fabs(d - x) <= kE4M4RelError * x * (1 + 1e-6));
  }
}

TEST_CASE("the seeds' encoder picks a farther code for a few % of N(0,1) blocks", "[e4m4]") {
  // absmax of 32 N(0,1) samples, 100k blocks: count blocks where the seed's code is farther.
  const int blocks = 100000;
  const auto x = random_normal(std::int64_t(blocks) * 32, 7);
  int farther = 0, different = 0;
  for (int b = 0; b < blocks; ++b) {
    float a = 0;
    for (int j = 0; j < 32; ++j) a = std::max(a, std::fabs(x[std::size_t(b * 32 + j)]));
    const std::uint8_t ours = e4m4_encode(a), theirs = seed_style_encode(a);
    different += ours != theirs;
    farther += std::fabs(e4m4_decode(theirs) - a) > std::fabs(e4m4_decode(ours) - a);
  }
  const double frac = double(farther) / blocks;
  std::printf("seed-style E4M4 encoder: %.2f%% of blocks farther, %.2f%% different\n", 100 * frac,
              100.0 * different / blocks);
  CHECK(frac > 0.005);
  CHECK(frac < 0.05);
  // ours is never farther than theirs
  for (int b = 0; b < 1000; ++b) {
    const float a = float(0.01 + 30.0 * b / 1000.0);
    CHECK(std::fabs(e4m4_decode(e4m4_encode(a)) - a) <=
          std::fabs(e4m4_decode(seed_style_encode(a)) - a));
  }
}
