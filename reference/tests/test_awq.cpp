// The AWQ int4 format (docs/awq_format.md): golden words derived by hand, the nibble order,
// the quantization error bound, the GEMM orientation, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/gemm_ref.hpp"
#include "reference/random.hpp"

using namespace kbit;

namespace {

// The golden matrix, kbit orientation W[n][k], N = 8, K_dim = 32, one group of 32.
// Every column is built so that its scale, zero and q can be worked out on paper:
//   n = 0: ramp (k%16 - 5)/8       range 15/8, s = 1/8    (0x3000), zero 5,  q = k%16
//   n = 1: ramp (10 - k%16)/16     range 15/16, s = 1/16  (0x2C00), zero 5,  q = 15 - k%16
//   n = 2: ties: (k - 5)/8 for k <= 30, 0 at k = 31: range 30/8, s = 1/4 (0x3400);
//          -min/s = 2.5 rounds to zero 2 (half to even), w/s = (k - 5)/2 is a tie at every
//          even k, so q = 2*(k/4) + (k%4 == 3): the max (12.5) lands on 14; k = 31: q = 2
//   n = 3: constant 0 (degenerate): range clamped to 1e-5, s = 1e-5f/15 = 11.18 * 2^-24
//          -> fp16 subnormal 0x000B; zero 0, q 0
//   n = 4: (k - 16)/32 for k <= 30, 0.5 at k = 31: range 1, s32 = float(1/15) but
//          s16 = 273/4096 (0x2C44, 68.27/1024 -> 68); w/s16 = 128 (k - 16) / 273 and
//          0.5/s16 = 7.5018: zero 8 (with s32 it would be 7); q = (k+1)/2 for k <= 15,
//          8 + (k-16)/2 for 16 <= k <= 30, and round(7.5018) + 8 = 16 clamps to 15 at k = 31
//   n = 5: 20 + k%16, all positive: s = 1 (0x3C00), zero round(-20) clamps to 0, every q
//          round(w) clamps to 15 (AWQ's zero clamp cannot represent a group away from 0)
//   n = 6: -((3k)%16)/2: range 7.5, s = 1/2 (0x3800), zero 15, q = 15 - (3k)%16
//   n = 7: ((7k)%16)*2: range 30, s = 2 (0x4000), zero 0, q = (7k)%16
std::vector<float> golden_w() {
  std::vector<float> w(8 * 32);
  for (int k = 0; k < 32; ++k) {
    w[std::size_t(0 * 32 + k)] = float(k % 16 - 5) / 8.0f;
    w[std::size_t(1 * 32 + k)] = float(10 - k % 16) / 16.0f;
    w[std::size_t(2 * 32 + k)] = k <= 30 ? float(k - 5) / 8.0f : 0.0f;
    w[std::size_t(3 * 32 + k)] = 0.0f;
    w[std::size_t(4 * 32 + k)] = k <= 30 ? float(k - 16) / 32.0f : 0.5f;
    w[std::size_t(5 * 32 + k)] = float(20 + k % 16);
    w[std::size_t(6 * 32 + k)] = -float((3 * k) % 16) / 2.0f;
    w[std::size_t(7 * 32 + k)] = float((7 * k) % 16) * 2.0f;
  }
  return w;
}

// Word k holds row k; its hex digits, most significant first, are the nibbles 7..0, i.e.
// the columns order[7..0] = 7 5 3 1 6 4 2 0. Column 5 is always F and column 3 always 0.
const std::uint32_t kGoldenQweight[32] = {
    0x0F0FF000, 0x7F0EC101, 0xEF0D9102, 0x5F0C6213, 0xCF0B3224, 0x3F0A0325, 0xAF09D326, 0x1F08A437,
    0x8F077448, 0xFF064549, 0x6F05154A, 0xDF04E65B, 0x4F03B66C, 0xBF02876D, 0x2F01576E, 0x9F00287F,
    0x0F0FF880, 0x7F0EC881, 0xEF0D9982, 0x5F0C6993, 0xCF0B3AA4, 0x3F0A0AA5, 0xAF09DBA6, 0x1F08ABB7,
    0x8F077CC8, 0xFF064CC9, 0x6F051DCA, 0xDF04EDDB, 0x4F03BEEC, 0xBF028EED, 0x2F015FEE, 0x9F002F2F};
// zeros 5 5 2 0 8 0 15 0 for columns 0..7, in nibble order 7 5 3 1 6 4 2 0.
const std::uint32_t kGoldenQzeros = 0x0005F825;
const std::uint16_t kGoldenScales[8] = {0x3000, 0x2C00, 0x3400, 0x000B,
                                        0x2C44, 0x3C00, 0x3800, 0x4000};

// The bound of docs/awq_format.md for an element of a group that contains 0:
// s16/2 + 15 |s32 - s16| plus float32 slack, with s32 and s16 recomputed here from the group's
// range (not read from the tensor, so that a corrupted stored scale is caught).
double element_bound(float lo, float hi, float x) {
  const float s32 = std::max(hi - lo, 1e-5f) / 15.0f;
  const double s16 = half_to_float(float_to_half(s32));
  return s16 / 2 + 15 * std::fabs(double(s32) - s16) + 0x1p-20 * (std::fabs(x) + (hi - lo));
}

// Largest err / bound over all elements; asserts the precondition min <= 0 <= max per group.
double worst_ratio(const std::vector<float>& w, const std::vector<float>& deq, std::int64_t n,
                   std::int64_t k_dim, int group) {
  double worst = 0;
  for (std::int64_t c = 0; c < n; ++c) {
    for (std::int64_t k0 = 0; k0 < k_dim; k0 += group) {
      const auto b = w.begin() + std::ptrdiff_t(c * k_dim + k0);
      const float lo = *std::min_element(b, b + group), hi = *std::max_element(b, b + group);
      REQUIRE(lo <= 0.0f);
      REQUIRE(hi >= 0.0f);
      for (std::int64_t k = k0; k < k0 + group; ++k) {
        const float x = w[std::size_t(c * k_dim + k)];
        const double err = std::fabs(double(deq[std::size_t(c * k_dim + k)]) - x);
        worst = std::max(worst, err / element_bound(lo, hi, x));
      }
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("awq: golden words worked out by hand (N = 8, K_in = 32, G = 32)", "[awq]") {
  const auto w = golden_w();
  const AwqTensor t = awq_quantize(w, 8, 32, 32);
  REQUIRE(t.k_in == 32);
  REQUIRE(t.n_out == 8);
  REQUIRE(t.qweight.size() == 32);
  REQUIRE(t.qzeros.size() == 1);
  REQUIRE(t.scales.size() == 8);
  for (int k = 0; k < 32; ++k) {
    INFO("row k = " << k);
    CHECK(std::uint32_t(t.qweight[std::size_t(k)]) == kGoldenQweight[k]);
  }
  CHECK(std::uint32_t(t.qzeros[0]) == kGoldenQzeros);
  for (int c = 0; c < 8; ++c) {
    INFO("column n = " << c);
    CHECK(t.scales[std::size_t(c)] == kGoldenScales[c]);
  }
  // The same tensors built from the hand words dequantize to hand-computed values.
  AwqTensor h = t;
  for (int k = 0; k < 32; ++k) h.qweight[std::size_t(k)] = std::int32_t(kGoldenQweight[k]);
  h.qzeros[0] = std::int32_t(kGoldenQzeros);
  h.scales.assign(kGoldenScales, kGoldenScales + 8);
  const auto v = awq_unpack(h);
  CHECK(v.q_at(30, 2) == 14);  // the column's max rounds to 14, not 15
  CHECK(v.q_at(31, 4) == 15);  // 16 clamped
  CHECK(v.zero_at(0, 2) == 2);
  CHECK(v.zero_at(0, 4) == 8);
  const auto d = awq_dequantize(h);  // [n][k]
  for (int k = 0; k < 32; ++k) {
    INFO("row k = " << k);
    // Columns 0, 1, 6 and 7 hold multiples of their scale: exact.
    for (int c : {0, 1, 6, 7}) CHECK(d[std::size_t(c * 32 + k)] == w[std::size_t(c * 32 + k)]);
    CHECK(d[std::size_t(3 * 32 + k)] == 0.0f);
    CHECK(d[std::size_t(5 * 32 + k)] == 15.0f);  // (15 - 0) * 1: clipped, w is 20..35
  }
  // Column 2: ties to even (half away from zero: -0.25, 0.25, 0.5, 0.75).
  CHECK(d[2 * 32 + 4] == 0.0f);                // w = -1/8, w/s = -0.5 -> -0: q 2
  CHECK(d[2 * 32 + 6] == 0.0f);                // w = 1/8, w/s = 0.5 -> 0: q 2
  CHECK(d[2 * 32 + 8] == 0.5f);                // w = 3/8, w/s = 1.5 -> 2: q 4
  CHECK(d[2 * 32 + 10] == 0.5f);               // w = 5/8, w/s = 2.5 -> 2: q 4
  CHECK(d[2 * 32 + 30] == 3.0f);               // (14 - 2) / 4, w = 3.125
  CHECK(d[4 * 32 + 0] == -2184.0f / 4096.0f);  // (0 - 8) * 273/4096, w = -0.5
  CHECK(d[4 * 32 + 31] == 1911.0f / 4096.0f);  // (15 - 8) * 273/4096, w = 0.5
}

TEST_CASE("awq: nibble position i holds column order[i], pack/unpack round trip", "[awq]") {
  for (int i = 0; i < 8; ++i) CHECK(kAwqReverseOrder[kAwqOrder[i]] == i);
  // One column at 0xF: written out from order = {0, 2, 4, 6, 1, 3, 5, 7}.
  const std::uint32_t single[8] = {0x0000000F, 0x000F0000, 0x000000F0, 0x00F00000,
                                   0x00000F00, 0x0F000000, 0x0000F000, 0xF0000000};
  for (int c = 0; c < 8; ++c) {
    AwqNibbles v{};
    v[std::size_t(c)] = 0xF;
    INFO("column " << c);
    CHECK(std::uint32_t(awq_pack_nibbles(v)) == single[c]);
    CHECK(awq_unpack_nibbles(std::int32_t(single[c])) == v);
  }
  // Columns 0..7 holding their own index: nibbles 7..0 read 7 5 3 1 6 4 2 0.
  const AwqNibbles iota = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(std::uint32_t(awq_pack_nibbles(iota)) == 0x75316420u);
  // Random words and random nibbles, both directions.
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint32_t u = std::uint32_t(splitmix64(i));
    REQUIRE(std::uint32_t(awq_pack_nibbles(awq_unpack_nibbles(std::int32_t(u)))) == u);
    AwqNibbles v{};
    for (int c = 0; c < 8; ++c) v[std::size_t(c)] = std::uint8_t((u >> (4 * c)) & 0xF);
    const std::uint32_t word = std::uint32_t(awq_pack_nibbles(v));
    REQUIRE(awq_unpack_nibbles(std::int32_t(word)) == v);
    for (int p = 0; p < 8; ++p) REQUIRE(((word >> (4 * p)) & 0xF) == v[std::size_t(kAwqOrder[p])]);
  }
  CHECK_THROWS_WITH(awq_pack_nibbles({0, 0, 0, 16, 0, 0, 0, 0}),
                    Catch::Contains("value 16 of column 3"));
}

TEST_CASE("awq: every element within s16/2 + 15|s32 - s16| for G = 32, 64, 128", "[awq]") {
  const std::int64_t N = 64, K = 512;
  for (float sigma : {1.0f, 1e-5f, 300.0f}) {  // 1e-5: fp16-subnormal scales
    const auto w = random_normal(N * K, 77, sigma);
    for (int g : {32, 64, 128}) {
      INFO("sigma " << sigma << " G = " << g);
      const auto t = awq_quantize(w, N, K, g);
      const auto d = awq_dequantize(t);
      const double worst = worst_ratio(w, d, N, K, g);
      CHECK(worst <= 1.0);
      CHECK(worst > 0.5);  // the bound is tight: some element sits near a half step
      // A second, naive reading of the spec in AWQ orientation (W_awq[k][n] = W[n][k]).
      const auto v = awq_unpack(t);
      for (std::int64_t k = 0; k < K; ++k) {
        for (std::int64_t n = 0; n < N; ++n) {
          const std::int64_t gi = k / g;
          float lo = w[std::size_t(n * K + gi * g)], hi = lo;
          for (std::int64_t kk = gi * g; kk < gi * g + g; ++kk) {
            lo = std::min(lo, w[std::size_t(n * K + kk)]);
            hi = std::max(hi, w[std::size_t(n * K + kk)]);
          }
          const float s = half_to_float(float_to_half(std::max(hi - lo, 1e-5f) / 15.0f));
          const float z = std::min(std::max(std::nearbyint(-lo / s), 0.0f), 15.0f);
          const float q =
              std::min(std::max(std::nearbyint(w[std::size_t(n * K + k)] / s) + z, 0.0f), 15.0f);
          REQUIRE(v.q_at(k, n) == int(q));
          REQUIRE(v.zero_at(gi, n) == int(z));
        }
      }
    }
  }
}

TEST_CASE("awq: the SQNR of a tensor worked out by hand", "[awq][sqnr]") {
  // Each of the 8 rows of one group of 32: min -1.5, max 2.25, so scale 3.75 / 15 = 0.25 (exact in
  // fp16) and zero 6; 0.5 and the ends are on the grid, 0.1 rounds to 0 (error 0.1) and 0.3 to
  // 0.25 (error 0.05). Signal 2.25 + 5.0625 + 0.01 + 0.09 + 28 * 0.25 = 14.4125 a row, noise
  // 0.01 + 0.0025 = 0.0125: ratio 1153.
  const std::int64_t N = 8, K = 32;
  std::vector<float> w(std::size_t(N * K), 0.5f);
  for (std::int64_t n = 0; n < N; ++n) {
    w[std::size_t(n * K + 0)] = -1.5f;
    w[std::size_t(n * K + 1)] = 2.25f;
    w[std::size_t(n * K + 2)] = 0.1f;
    w[std::size_t(n * K + 3)] = 0.3f;
  }
  const auto t = awq_quantize(w, N, K, 32);
  CHECK(half_to_float(t.scales[0]) == 0.25f);
  const auto d = awq_dequantize(t);
  CHECK(d[2] == 0.0f);
  CHECK(d[3] == 0.25f);
  double sig = 0, err = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    sig += double(w[i]) * w[i];
    err += (double(d[i]) - w[i]) * (double(d[i]) - w[i]);
  }
  CHECK(10 * std::log10(sig / err) == Approx(30.618293).margin(1e-4));  // 10 log10(1153)
}

TEST_CASE("awq: SQNR on N(0,1) pinned per group size (a change to the quantizer moves it)",
          "[awq][sqnr]") {
  // The data of the kbit SQNR test (docs/format.md: nf K = 4, E4M4, 4.25 bits: 21.09 dB),
  // as a 1024 x 1024 weight; docs/awq_format.md quotes these figures.
  const std::int64_t N = 1024, K = 1024;
  const auto w = random_normal(N * K, 2024);
  const struct {
    int group;
    double db;
  } expect[] = {{32, 21.85}, {64, 20.80}, {128, 19.93}};
  for (const auto& e : expect) {
    const auto d = awq_dequantize(awq_quantize(w, N, K, e.group));
    double sig = 0, err = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      sig += double(w[i]) * w[i];
      err += (double(d[i]) - w[i]) * (double(d[i]) - w[i]);
    }
    const double db = 10 * std::log10(sig / err);
    INFO("G = " << e.group << ": " << db << " dB");
    CHECK(db == Approx(e.db).margin(0.01));
  }
}

TEST_CASE("awq: a corrupted nibble, zero or scale breaks the bound", "[awq]") {
  const std::int64_t N = 16, K = 256;
  const int g = 64;
  const auto w = random_normal(N * K, 5);
  const auto t = awq_quantize(w, N, K, g);
  REQUIRE(worst_ratio(w, awq_dequantize(t), N, K, g) <= 1.0);
  auto bad_q = t;
  bad_q.qweight[37] ^= 0x8 << 12;  // q of one element moves by 8 steps
  CHECK(worst_ratio(w, awq_dequantize(bad_q), N, K, g) > 1.0);
  auto bad_z = t;
  bad_z.qzeros[3] ^= 0x8 << 20;  // zero of one (group, column) moves by 8
  CHECK(worst_ratio(w, awq_dequantize(bad_z), N, K, g) > 1.0);
  auto bad_s = t;
  bad_s.scales[9] = std::uint16_t(bad_s.scales[9] + 0x0400);  // twice the scale
  CHECK(worst_ratio(w, awq_dequantize(bad_s), N, K, g) > 1.0);
}

TEST_CASE("awq: dequantize rounds (q - z) * s to the output type", "[awq]") {
  const std::int64_t N = 24, K = 128;
  const auto t = awq_quantize(random_normal(N * K, 9), N, K, 32);
  const auto f32 = awq_dequantize(t);
  const auto v = awq_unpack(t);
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t k = 0; k < K; ++k) {
      const float s = half_to_float(t.scales[std::size_t((k / 32) * N + n)]);
      REQUIRE(f32[std::size_t(n * K + k)] == float(v.q_at(k, n) - v.zero_at(k / 32, n)) * s);
    }
  }
  for (DType d : {DType::f16, DType::bf16}) {
    std::vector<std::uint16_t> out(std::size_t(N * K));
    awq_dequantize(t, d, out.data());
    for (std::size_t i = 0; i < out.size(); ++i)
      REQUIRE(load_as_float(d, out.data(), i) == round_to(d, f32[i]));
  }
}

TEST_CASE("awq: awq_gemm_ref computes C = A * W_awq with W_awq[k][n] = W[n][k]", "[awq]") {
  const std::int64_t M = 3, N = 16, K = 128;
  const auto t = awq_quantize(random_normal(N * K, 21), N, K, 64);
  auto A = random_normal(M * K, 22);
  for (float& a : A) a = round_to(DType::f16, a);
  const auto r = awq_gemm_ref(A.data(), M, t, sample_rows(M, 16));
  const auto v = awq_unpack(t);
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t n = 0; n < N; ++n) {
      double c = 0;  // straight from the AWQ tensors, AWQ orientation
      for (std::int64_t k = 0; k < K; ++k) {
        const double s = half_to_float(t.scales[std::size_t((k / 64) * N + n)]);
        c += double(A[std::size_t(m * K + k)]) * (v.q_at(k, n) - v.zero_at(k / 64, n)) * s;
      }
      CHECK(r.C(m, n) == Approx(c).epsilon(1e-12));
    }
  }
}

TEST_CASE("awq: the tiled layout, one word by hand and every nibble by the inverse map", "[awq]") {
  // Golden column 0 holds q = k % 16, scale 0x3000, zero 5. Thread 0 decodes rows 0 and 8 (row 8
  // is past N = 8: zeros), k 0, 1 (nibbles 0, 4) and 8, 9 (nibbles 2, 6) at k16 step 0.
  const AwqTiled g = awq_tile(awq_quantize(golden_w(), 8, 32, 32));
  REQUIRE(g.n_tiles == 1);
  REQUIRE(g.k_tiles == 1);
  REQUIRE(g.meta_tiles == 1);  // one 64-k meta tile holds two groups of 32; the second is past K
  REQUIRE(g.meta_words_per_tile == 256);
  CHECK(g.words[0] == 0x09010800u);
  CHECK(g.meta[0] == 0x64053000u);  // 1024 + 5 over the scale 1/8
  CHECK(g.meta[128] == 0u);

  // Every (k, n) of a random tensor, located by the inverse of the layout's map, in all three
  // group sizes, N and K_in not multiples of the tile.
  for (int G : {32, 64, 128}) {
    const std::int64_t N = 136, K = G == 32 ? 160 : 2 * G + (G == 64 ? 64 : 128);
    const AwqTensor t = awq_quantize(random_normal(N * K, 40 + G), N, K, G);
    const AwqTiled tl = awq_tile(t);
    const AwqValues v = awq_unpack(t);
    const int span = G > 64 ? G : 64, per = span / G;
    CHECK(tl.k_tiles == int((K + 63) / 64));
    CHECK(tl.meta_tiles == int((K + span - 1) / span));
    int bad = 0;
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t n = 0; n < N; ++n) {
        const int kk = int(k % 64), rr = int(n % 128), e = kk % 8;
        const int th = 128 * (rr / 64) + 32 * ((rr % 64) / 16) + 4 * (rr % 8) + e / 2;
        const int p = (rr % 16 >= 8) + 2 * (kk % 16 >= 8) + 4 * (e % 2);
        const std::uint32_t word =
            tl.words[(std::size_t(k / 64) * tl.n_tiles + n / 128) * 1024 + th * 4 + kk / 16];
        bad += int((word >> (4 * p)) & 15u) != v.q_at(k, n);
        const std::int64_t g = k / G;
        const std::uint32_t m =
            tl.meta[(std::size_t(g / per) * tl.n_tiles + n / 128) * tl.meta_words_per_tile +
                    (g % per) * 128 + rr];
        bad += (m & 0xFFFFu) != t.scales[std::size_t(g * N + n)];
        bad += int(m >> 16) != 0x6400 + v.zero_at(g, n);
      }
    CHECK(bad == 0);
    // Rows past N in the last n-tile: zero nibbles (and zero metadata, which the kernel's
    // (q - z) * s turns into zero weights).
    int tail = 0;
    for (std::size_t kt = 0; kt < std::size_t(tl.k_tiles); ++kt)
      for (int th = 0; th < 256; ++th)
        for (int i = 0; i < 4; ++i)
          for (int p = 0; p < 8; ++p) {
            const int row = 64 * (th / 128) + 16 * ((th / 32) % 4) + (th % 32) / 4 + 8 * (p & 1);
            const std::uint32_t word = tl.words[(kt * tl.n_tiles + 1) * 1024 + th * 4 + i];
            tail += 128 + row >= N && ((word >> (4 * p)) & 15u) != 0;
          }
    for (int mt = 0; mt < tl.meta_tiles; ++mt)
      for (int gl = 0; gl < per; ++gl)
        for (int r = 0; r < 128; ++r) {
          const std::size_t at =
              (std::size_t(mt) * tl.n_tiles + 1) * tl.meta_words_per_tile + gl * 128 + r;
          const bool past = 128 + r >= N || std::int64_t(mt) * per + gl >= K / G;
          tail += past && tl.meta[at] != 0;
        }
    CHECK(tail == 0);
  }
}

TEST_CASE("awq: bad shapes, groups and non-finite input are refused by name", "[awq]") {
  const auto w = random_normal(16 * 256, 3);
  CHECK_THROWS_AS(awq_quantize(w, 12, 256, 128), Error);
  CHECK_THROWS_WITH(awq_quantize(w, 12, 256, 128), Catch::Contains("N_out = 12"));
  CHECK_THROWS_WITH(awq_quantize(w, 16, 96, 64), Catch::Contains("K_in = 96"));
  CHECK_THROWS_WITH(awq_quantize(w, 16, 96, 64), Catch::Contains("group size 64"));
  CHECK_THROWS_WITH(awq_quantize(w, 16, 256, 48), Catch::Contains("group size 48"));
  CHECK_THROWS_WITH(awq_quantize(w, 16, 256, 256), Catch::Contains("group size 256"));
  CHECK_NOTHROW(awq_quantize(w, 16, 256, 128));
  auto bad = w;  // kbit orientation: element (n, k) at n * 256 + k
  bad[5 * 256 + 2] = INFINITY;
  bad[7 * 256 + 100] = NAN;
  CHECK_THROWS_WITH(awq_quantize(bad, 16, 256, 128),
                    Catch::Contains("w_kbit[n = 5][k = 2] is inf"));
  bad[5 * 256 + 2] = -INFINITY;
  CHECK_THROWS_WITH(awq_quantize(bad, 16, 256, 128), Catch::Contains("[n = 5][k = 2] is inf"));
  bad[5 * 256 + 2] = 1.0f;
  CHECK_THROWS_WITH(awq_quantize(bad, 16, 256, 128),
                    Catch::Contains("w_kbit[n = 7][k = 100] is nan"));
  // A range whose scale (range / 15) exceeds fp16's 65504 has no fp16 scale.
  auto huge = w;
  huge[2 * 256 + 130] = 6e5f;
  huge[2 * 256 + 131] = -6e5f;
  CHECK_THROWS_WITH(
      awq_quantize(huge, 16, 256, 128),
      Catch::Contains("group 1 (k 128..255) of column n = 2") && Catch::Contains("overflows fp16"));
  // Tensors whose vectors do not match their shape.
  auto t = awq_quantize(w, 16, 256, 128);
  t.scales.pop_back();
  CHECK_THROWS_WITH(awq_unpack(t), Catch::Contains("scales holds 31 elements, expected 32"));
  t = awq_quantize(w, 16, 256, 128);
  t.group = 64;  // now qzeros/scales are too short for 4 groups
  CHECK_THROWS_WITH(awq_dequantize(t), Catch::Contains("qzeros holds 4 elements, expected 8"));
}
