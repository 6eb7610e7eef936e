#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"

using namespace kbit;

namespace {
std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> b;
  for (float x : v) b.push_back(float_bits(x));
  return b;
}
}  // namespace

TEST_CASE("nf codebooks reproduce the golden bits of docs/format.md", "[codebook]") {
  const std::vector<std::vector<std::uint32_t>> golden = {
      {0xbf800000, 0xbe8dd21a, 0x3e8dd21a, 0x3f800000},
      {0xbf800000, 0xbf1409f5, 0xbea32005, 0xbdd20129, 0x3dd20129, 0x3ea32005, 0x3f1409f5,
       0x3f800000},
      {0xbf800000, 0xbf35233b, 0xbf0ace38, 0xbed56949, 0xbe9f2ee8, 0xbe5d2107, 0xbe0265ad,
       0xbd2c6c36, 0x3d2c6c36, 0x3e0265ad, 0x3e5d2107, 0x3e9f2ee8, 0x3ed56949, 0x3f0ace38,
       0x3f35233b, 0x3f800000},
      {0xbf800000, 0xbf4731dc, 0xbf288359, 0xbf122cf2, 0xbf001198, 0xbee10f82, 0xbec56bf3,
       0xbeac39a3, 0xbe94d4a9, 0xbe7d9849, 0xbe539bdb, 0xbe2b36ba, 0xbe04052d, 0xbdbb691d,
       0xbd5ff631, 0xbc950060, 0x3c950060, 0x3d5ff631, 0x3dbb691d, 0x3e04052d, 0x3e2b36ba,
       0x3e539bdb, 0x3e7d9849, 0x3e94d4a9, 0x3eac39a3, 0x3ec56bf3, 0x3ee10f82, 0x3f001198,
       0x3f122cf2, 0x3f288359, 0x3f4731dc, 0x3f800000}};
  for (int k = 2; k <= 5; ++k) {
    INFO("K = " << k);
    CHECK(bits_of(codebook_nf(k)) == golden[std::size_t(k - 2)]);
  }
}

TEST_CASE("inverse_normal_cdf is accurate to double precision", "[codebook]") {
  for (double p : {1e-12, 1e-6, 0.01, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.97575, 0.999, 1 - 1e-9}) {
    const double x = inverse_normal_cdf(p);
    const double back = 0.5 * std::erfc(-x / std::sqrt(2.0));
    CHECK(std::fabs(back - p) <= 4e-16 * std::max(p, 1e-3));
  }
  CHECK(inverse_normal_cdf(0.5) == 0.0);
  CHECK_THROWS_AS(inverse_normal_cdf(0.0), Error);
  CHECK_THROWS_AS(inverse_normal_cdf(1.0), Error);
}

TEST_CASE("nf_expected follows the seed's conditional-mean wording", "[codebook]") {
  const auto cb = codebook_nf_expected(4);
  REQUIRE(cb.size() == 16);
  CHECK(cb[0] == -1.0f);
  CHECK(cb[15] == 1.0f);
  CHECK(cb[1] == Approx(-0.67382437).epsilon(1e-7));
  CHECK(cb[2] == Approx(-0.514745712).epsilon(1e-7));
  for (int i = 0; i < 16; ++i) CHECK(cb[std::size_t(i)] == -cb[std::size_t(15 - i)]);
}

TEST_CASE("uniform codebooks are evenly spaced from -1 to 1", "[codebook]") {
  for (int k = 2; k <= 5; ++k) {
    const auto cb = codebook_uniform(k);
    REQUIRE(cb.size() == std::size_t(1) << k);
    CHECK(cb.front() == -1.0f);
    CHECK(cb.back() == 1.0f);
    const double step = 2.0 / double(cb.size() - 1);
    for (std::size_t i = 1; i < cb.size(); ++i)
      CHECK(double(cb[i]) - cb[i - 1] == Approx(step).epsilon(1e-6));
  }
}

TEST_CASE("codebooks are sorted and normalized", "[codebook]") {
  for (const char* name : {"nf", "nf_expected", "uniform"}) {
    for (int k = 2; k <= 5; ++k) {
      const auto cb = make_codebook(name, k);
      CHECK(codebook_max_abs(cb) == 1.0);
      for (std::size_t i = 1; i < cb.size(); ++i) CHECK(cb[i - 1] < cb[i]);
    }
  }
}

TEST_CASE("bad codebooks and bit widths are refused with the value in the message", "[codebook]") {
  CHECK_THROWS_WITH(check_k_bits(6), Catch::Contains("k_bits = 6") && Catch::Contains("2..5"));
  CHECK_THROWS_WITH(check_k_bits(1), Catch::Contains("k_bits = 1"));
  CHECK_THROWS_WITH(make_codebook("nf4", 4), Catch::Contains("'nf4'"));
  CHECK_THROWS_WITH(validate_codebook({0.f, 1.f, 2.f}, 2),
                    Catch::Contains("3 entries") && Catch::Contains("4"));
  CHECK_THROWS_WITH(validate_codebook({0.f, NAN, 1.f, 2.f}, 2), Catch::Contains("entry 1"));
  CHECK_NOTHROW(validate_codebook({0.5f, 0.1f, 0.9f, 0.2f}, 2));  // unsorted, all-positive: valid
}

TEST_CASE("half_gap covers the end points of [-1, 1]", "[codebook]") {
  CHECK(codebook_half_gap({-1.f, -0.5f, 0.5f, 1.f}) == Approx(0.5));
  CHECK(codebook_half_gap({0.1f, 0.2f, 0.3f, 0.4f}) == Approx(1.1));  // v = -1 is 1.1 away
  CHECK(codebook_half_gap({-1.f, 0.f, 0.5f, 0.6f}) == Approx(0.5));   // gap [-1, 0] and end 0.6..1
}
