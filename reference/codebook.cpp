#include "reference/codebook.hpp"

#include <algorithm>
#include <cmath>

#include "reference/error.hpp"

namespace kbit {

void check_k_bits(int k) {
  if (k < kMinKBits || k > kMaxKBits) {
    throw Error("k_bits = " + std::to_string(k) + " is outside the supported range " +
                std::to_string(kMinKBits) + ".." + std::to_string(kMaxKBits));
  }
}

namespace {

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}
double normal_pdf(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}

// Divides every entry by the largest magnitude, in float32 (the format's definition).
std::vector<float> normalize_f32(std::vector<float> v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  for (float& x : v) x = x / m;
  return v;
}

}  // namespace

double inverse_normal_cdf(double p) {
  if (!(p > 0.0 && p < 1.0))
    throw Error("inverse_normal_cdf: p = " + std::to_string(p) + " is outside (0, 1)");
  // Acklam's rational approximation (relative error < 1.2e-9) ...
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double plow = 0.02425, phigh = 1 - plow;
  double x;
  if (p < plow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= phigh) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // ... refined by Halley steps on erfc, which bring it to double precision.
  for (int it = 0; it < 3; ++it) {
    const double e = normal_cdf(x) - p;
    const double u = e / normal_pdf(x);
    x = x - u / (1 + x * u / 2);
  }
  return x;
}

std::vector<float> codebook_nf(int k) {
  check_k_bits(k);
  const int n = 1 << k;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(inverse_normal_cdf(double(2 * i + 1) / double(2 * n)));
  return normalize_f32(v);
}

std::vector<float> codebook_nf_expected(int k) {
  check_k_bits(k);
  const int n = 1 << k;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) {
    // E[X | lo < X < hi] = (pdf(lo) - pdf(hi)) / P(bin), P(bin) = 1/n.
    const double lo_pdf = i == 0 ? 0.0 : normal_pdf(inverse_normal_cdf(double(i) / n));
    const double hi_pdf = i == n - 1 ? 0.0 : normal_pdf(inverse_normal_cdf(double(i + 1) / n));
    v[i] = float((lo_pdf - hi_pdf) * n);
  }
  return normalize_f32(v);
}

std::vector<float> codebook_uniform(int k) {
  check_k_bits(k);
  const int n = 1 << k;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(-1.0 + 2.0 * double(i) / double(n - 1));
  return v;
}

std::vector<float> make_codebook(std::string_view name, int k) {
  if (name == "nf") return codebook_nf(k);
  if (name == "nf_expected") return codebook_nf_expected(k);
  if (name == "uniform") return codebook_uniform(k);
  throw Error("codebook '" + std::string(name) +
              "' is not one of nf, nf_expected, uniform (or a list of 2^K numbers)");
}

void validate_codebook(const std::vector<float>& cb, int k) {
  check_k_bits(k);
  if (cb.size() != (std::size_t(1) << k)) {
    throw Error("codebook has " + std::to_string(cb.size()) + " entries; K = " + std::to_string(k) +
                " needs exactly " + std::to_string(1 << k));
  }
  for (std::size_t i = 0; i < cb.size(); ++i) {
    if (!std::isfinite(cb[i]))
      throw Error("codebook entry " + std::to_string(i) + " is not finite");
  }
}

double codebook_half_gap(const std::vector<float>& cb) {
  std::vector<double> s(cb.begin(), cb.end());
  std::sort(s.begin(), s.end());
  double g = std::max({0.0, s.front() - (-1.0), 1.0 - s.back()});
  for (std::size_t i = 1; i < s.size(); ++i) g = std::max(g, (s[i] - s[i - 1]) / 2.0);
  return g;
}

double codebook_max_abs(const std::vector<float>& cb) {
  double m = 0.0;
  for (float x : cb) m = std::max(m, double(std::fabs(x)));
  return m;
}

}  // namespace kbit
