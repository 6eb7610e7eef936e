#include "reference/awq.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "reference/error.hpp"
#include "reference/fp16.hpp"

namespace kbit {

namespace {

// Round half to even: nearbyint in the default rounding mode (the project never changes
// it). std::round would round halves away from zero, which AutoAWQ's torch.round does not.
float round_half_even(float x) {
  return std::nearbyint(x);
}

float clamp_0_15(float x) {
  return std::min(std::max(x, 0.0f), 15.0f);
}

std::string size_mismatch(const char* what, std::size_t got, std::int64_t want) {
  return std::string("awq: ") + what + " holds " + std::to_string(got) + " elements, expected " +
         std::to_string(want);
}

}  // namespace

void awq_check_shape(std::int64_t k_in, std::int64_t n_out, int group) {
  if (n_out <= 0 || n_out % 8 != 0) {
    throw Error("awq: N_out = " + std::to_string(n_out) +
                " must be a positive multiple of 8 (eight 4-bit columns pack into one int32)");
  }
  if (group != 32 && group != 64 && group != 128) {
    throw Error("awq: group size " + std::to_string(group) + " is not one of 32, 64, 128");
  }
  if (k_in <= 0 || k_in % group != 0) {
    throw Error("awq: K_in = " + std::to_string(k_in) +
                " must be a positive multiple of the group size " + std::to_string(group));
  }
}

void awq_validate(const AwqTensor& t) {
  awq_check_shape(t.k_in, t.n_out, t.group);
  const std::int64_t words = t.k_in * t.words_per_row();
  const std::int64_t zwords = t.num_groups() * t.words_per_row();
  const std::int64_t nscales = t.num_groups() * t.n_out;
  if (std::int64_t(t.qweight.size()) != words)
    throw Error(size_mismatch("qweight", t.qweight.size(), words));
  if (std::int64_t(t.qzeros.size()) != zwords)
    throw Error(size_mismatch("qzeros", t.qzeros.size(), zwords));
  if (std::int64_t(t.scales.size()) != nscales)
    throw Error(size_mismatch("scales", t.scales.size(), nscales));
}

std::int32_t awq_pack_nibbles(const AwqNibbles& v) {
  std::uint32_t word = 0;
  for (int i = 0; i < 8; ++i) {
    const int c = kAwqOrder[i];
    if (v[std::size_t(c)] > 15) {
      throw Error("awq_pack_nibbles: value " + std::to_string(int(v[std::size_t(c)])) +
                  " of column " + std::to_string(c) + " does not fit in 4 bits (max 15)");
    }
    word |= std::uint32_t(v[std::size_t(c)]) << (4 * i);
  }
  return static_cast<std::int32_t>(word);  // two's complement: bit 31 becomes the sign
}

AwqNibbles awq_unpack_nibbles(std::int32_t word) {
  const std::uint32_t u = static_cast<std::uint32_t>(word);
  AwqNibbles v{};
  for (int c = 0; c < 8; ++c)
    v[std::size_t(c)] = std::uint8_t((u >> (4 * kAwqReverseOrder[c])) & 0xFu);
  return v;
}

AwqTensor awq_quantize(const float* w, std::int64_t n, std::int64_t k_dim, int group) {
  awq_check_shape(k_dim, n, group);
  // Refuse before any work, naming the first bad element in memory order (row n, column k
  // of the kbit-oriented input).
  for (std::int64_t i = 0; i < n * k_dim; ++i) {
    if (!std::isfinite(w[i])) {
      throw Error("awq_quantize: w_kbit[n = " + std::to_string(i / k_dim) +
                  "][k = " + std::to_string(i % k_dim) + "] is " +
                  (std::isnan(w[i]) ? "nan" : "inf") + "; input must be finite");
    }
  }
  AwqTensor t;
  t.k_in = k_dim;
  t.n_out = n;
  t.group = group;
  const std::int64_t ng = t.num_groups(), wpr = t.words_per_row();

  // Pass 1: per (group, column) the float32 scale, its fp16 storage and the zero point.
  std::vector<float> scale32(std::size_t(ng * n));
  std::vector<float> zero(std::size_t(ng * n));
  t.scales.resize(std::size_t(ng * n));
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < n; ++c) {
    for (std::int64_t g = 0; g < ng; ++g) {
      const float* x = w + c * k_dim + g * group;
      float lo = x[0], hi = x[0];
      for (int j = 1; j < group; ++j) {
        lo = std::min(lo, x[j]);
        hi = std::max(hi, x[j]);
      }
      // AutoAWQ: scales = (max - min).clamp(min=1e-5) / 15. The clamp keeps a constant
      // group's scale nonzero (1e-5f / 15 rounds to fp16 0x000B, a subnormal).
      const float s32 = std::max(hi - lo, 1e-5f) / 15.0f;
      const std::uint16_t h = float_to_half(s32);
      // zero and q use the scale the kernels will read (the fp16 one), as AutoAWQ does: its
      // scale tensor is fp16. -min/s16 rounds to the same integer as AutoAWQ's -round(min/s):
      // round half to even is symmetric.
      const std::size_t idx = std::size_t(g * n + c);
      scale32[idx] = s32;
      t.scales[idx] = h;
      zero[idx] = clamp_0_15(round_half_even(-lo / half_to_float(h)));
    }
  }
  // A range above 15 * 65504 (or one that overflowed float32) has no fp16 scale.
  for (std::int64_t g = 0; g < ng; ++g) {
    for (std::int64_t c = 0; c < n; ++c) {
      const std::size_t idx = std::size_t(g * n + c);
      if ((t.scales[idx] & 0x7FFFu) >= 0x7C00u) {
        throw Error("awq_quantize: group " + std::to_string(g) + " (k " +
                    std::to_string(g * group) + ".." + std::to_string(g * group + group - 1) +
                    ") of column n = " + std::to_string(c) + " has scale " +
                    std::to_string(scale32[idx]) + ", which overflows fp16 (max 65504)");
      }
    }
  }

  // Pass 2: q per element, packed eight columns to a word; one thread per word column so
  // no two threads write the same word.
  t.qweight.assign(std::size_t(t.k_in * wpr), 0);
  t.qzeros.assign(std::size_t(ng * wpr), 0);
#pragma omp parallel for schedule(static)
  for (std::int64_t j = 0; j < wpr; ++j) {
    for (std::int64_t g = 0; g < ng; ++g) {
      AwqNibbles zn{};
      for (int c = 0; c < 8; ++c)
        zn[std::size_t(c)] = std::uint8_t(zero[std::size_t(g * n + 8 * j + c)]);
      t.qzeros[std::size_t(g * wpr + j)] = awq_pack_nibbles(zn);
    }
    for (std::int64_t k = 0; k < k_dim; ++k) {
      const std::int64_t g = k / group;
      AwqNibbles qn{};
      for (int c = 0; c < 8; ++c) {
        const std::int64_t col = 8 * j + c;
        const std::size_t idx = std::size_t(g * n + col);
        const float s16 = half_to_float(t.scales[idx]);
        // One float32 division, then round half to even, then add the zero, then clamp.
        const float q = clamp_0_15(round_half_even(w[col * k_dim + k] / s16) + zero[idx]);
        qn[std::size_t(c)] = std::uint8_t(q);
      }
      t.qweight[std::size_t(k * wpr + j)] = awq_pack_nibbles(qn);
    }
  }
  return t;
}

AwqValues awq_unpack(const AwqTensor& t) {
  awq_validate(t);
  AwqValues v;
  v.k_in = t.k_in;
  v.n_out = t.n_out;
  v.group = t.group;
  const std::int64_t wpr = t.words_per_row();
  v.q.resize(std::size_t(t.k_in * t.n_out));
  v.zeros.resize(std::size_t(t.num_groups() * t.n_out));
  for (std::int64_t k = 0; k < t.k_in; ++k) {
    for (std::int64_t j = 0; j < wpr; ++j) {
      const AwqNibbles q = awq_unpack_nibbles(t.qweight[std::size_t(k * wpr + j)]);
      std::copy(q.begin(), q.end(), v.q.begin() + std::ptrdiff_t(k * t.n_out + 8 * j));
    }
  }
  for (std::int64_t g = 0; g < t.num_groups(); ++g) {
    for (std::int64_t j = 0; j < wpr; ++j) {
      const AwqNibbles z = awq_unpack_nibbles(t.qzeros[std::size_t(g * wpr + j)]);
      std::copy(z.begin(), z.end(), v.zeros.begin() + std::ptrdiff_t(g * t.n_out + 8 * j));
    }
  }
  return v;
}

void awq_dequantize(const AwqTensor& t, DType out_type, void* out) {
  const AwqValues v = awq_unpack(t);  // validates
#pragma omp parallel for schedule(static)
  for (std::int64_t n = 0; n < t.n_out; ++n) {
    for (std::int64_t k = 0; k < t.k_in; ++k) {
      const std::int64_t g = k / t.group;
      const float s = half_to_float(t.scales[std::size_t(g * t.n_out + n)]);
      // (q - zero) is an integer in [-15, 15]; its product with an fp16 scale is exact in
      // float32, so rounding to out_type is the only rounding (as fp16 (q - z) * s is).
      const float d = float(v.q_at(k, n) - v.zero_at(g, n)) * s;
      store_from_float(out_type, out, std::size_t(n * t.k_in + k), d);
    }
  }
}

std::vector<float> awq_dequantize(const AwqTensor& t) {
  awq_validate(t);  // before sizing the output from the shape
  std::vector<float> out(std::size_t(t.n_out * t.k_in));
  awq_dequantize(t, DType::f32, out.data());
  return out;
}

GemmReference awq_gemm_ref(const float* A, std::int64_t M, const AwqTensor& t,
                           const std::vector<std::int64_t>& rows) {
  const std::vector<float> w = awq_dequantize(t);  // [N][K_dim], what reference_gemm reads
  return reference_gemm(A, M, t.k_in, w.data(), t.n_out, rows);
}

AwqTiled awq_tile(const AwqTensor& t) {
  awq_validate(t);
  const AwqValues v = awq_unpack(t);
  AwqTiled o;
  o.n_out = t.n_out, o.k_in = t.k_in, o.group = t.group;
  o.n_tiles = int((t.n_out + kAwqTileN - 1) / kAwqTileN);
  o.k_tiles = int((t.k_in + kAwqTileK - 1) / kAwqTileK);
  const int span = awq_meta_tile_k(t.group), per_tile = span / t.group;
  o.meta_tiles = int((t.k_in + span - 1) / span);
  o.meta_words_per_tile = kAwqTileN * per_tile;
  o.words.assign(std::size_t(o.k_tiles) * o.n_tiles * kAwqTileWords, 0u);
  o.meta.assign(std::size_t(o.meta_tiles) * o.n_tiles * o.meta_words_per_tile, 0u);
  auto q_at = [&](std::int64_t k, std::int64_t n) -> std::uint32_t {
    return k < t.k_in && n < t.n_out ? std::uint32_t(v.q_at(k, n)) : 0u;
  };
  for (int kt = 0; kt < o.k_tiles; ++kt)
    for (int nt = 0; nt < o.n_tiles; ++nt) {
      std::uint32_t* tile = &o.words[(std::size_t(kt) * o.n_tiles + nt) * kAwqTileWords];
      for (int th = 0; th < 256; ++th) {
        const int r0 = 64 * (th / 128) + 16 * ((th / 32) % 4) + (th % 32) / 4, c = th % 4;
        for (int i = 0; i < 4; ++i) {
          std::uint32_t word = 0;
          for (int p = 0; p < 4; ++p) {
            const std::int64_t n = std::int64_t(nt) * kAwqTileN + r0 + 8 * (p & 1);
            const std::int64_t k = std::int64_t(kt) * kAwqTileK + 16 * i + 2 * c + 8 * (p >> 1);
            word |= q_at(k, n) << (4 * p) | q_at(k + 1, n) << (4 * (p + 4));
          }
          tile[th * 4 + i] = word;
        }
      }
    }
  const std::int64_t groups = t.num_groups();
  for (int mt = 0; mt < o.meta_tiles; ++mt)
    for (int nt = 0; nt < o.n_tiles; ++nt)
      for (int gl = 0; gl < per_tile; ++gl)
        for (int r = 0; r < kAwqTileN; ++r) {
          const std::int64_t g = std::int64_t(mt) * per_tile + gl,
                             n = std::int64_t(nt) * kAwqTileN + r;
          if (g >= groups || n >= t.n_out) continue;
          o.meta[(std::size_t(mt) * o.n_tiles + nt) * o.meta_words_per_tile + gl * kAwqTileN + r] =
              std::uint32_t(t.scales[std::size_t(g * t.n_out + n)]) |
              std::uint32_t(0x6400 + v.zero_at(g, n)) << 16;
        }
  return o;
}

}  // namespace kbit
