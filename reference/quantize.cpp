#include "reference/quantize.hpp"

#include <cmath>
#include <string>

#include "reference/codebook.hpp"
#include "reference/e4m4.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"

namespace kbit {

const char* absmax_storage_name(AbsmaxStorage s) {
  switch (s) {
    case AbsmaxStorage::e4m4:
      return "e4m4";
    case AbsmaxStorage::fp16:
      return "fp16";
    case AbsmaxStorage::fp32:
      return "fp32";
  }
  return "?";
}

std::uint32_t QuantizedTensor::index(std::int64_t i) const {
  const std::int64_t blk = i / 32;
  const int j = int(i % 32);
  std::uint32_t idx = 0;
  for (int b = 0; b < k_bits; ++b) idx |= ((packed[blk * k_bits + b] >> j) & 1u) << b;
  return idx;
}

float QuantizedTensor::scale(std::int64_t block, AbsmaxStorage s) const {
  switch (s) {
    case AbsmaxStorage::e4m4:
      return e4m4_decode(absmax_e4m4[block]);
    case AbsmaxStorage::fp16:
      return half_to_float(absmax_fp16[block]);
    case AbsmaxStorage::fp32:
      return absmax[block];
  }
  return 0.0f;
}

std::uint32_t nearest_index(float v, const std::vector<float>& cb) {
  std::uint32_t best = 0;
  float best_d = std::fabs(v - cb[0]);
  for (std::size_t i = 1; i < cb.size(); ++i) {
    const float d = std::fabs(v - cb[i]);
    if (d < best_d) {  // strict: ties keep the lower index
      best_d = d;
      best = std::uint32_t(i);
    }
  }
  return best;
}

QuantizedTensor quantize(DType in, const void* x, std::int64_t n, const std::vector<float>& cb,
                         int k) {
  validate_codebook(cb, k);
  if (n < 0) throw Error("quantize: element count " + std::to_string(n) + " is negative");
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = load_as_float(in, x, std::size_t(i));
    if (!std::isfinite(v)) {
      throw Error("quantize: element " + std::to_string(i) + " is " +
                  (std::isnan(v) ? "nan" : "inf") + "; input must be finite");
    }
  }
  QuantizedTensor q;
  q.k_bits = k;
  q.numel = n;
  const std::int64_t nb = num_blocks_for(n);
  q.packed.assign(std::size_t(nb * k), 0u);
  q.absmax.resize(std::size_t(nb));
  q.absmax_e4m4.resize(std::size_t(nb));
  q.absmax_fp16.resize(std::size_t(nb));
  std::int64_t saturated = 0;
#pragma omp parallel for schedule(static) reduction(+ : saturated)
  for (std::int64_t blk = 0; blk < nb; ++blk) {
    float v[32];
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const std::int64_t i = blk * 32 + j;
      v[j] = i < n ? load_as_float(in, x, std::size_t(i)) : 0.0f;
      amax = std::fmax(amax, std::fabs(v[j]));
    }
    const float denom = std::fmax(amax, 1e-8f);
    std::uint32_t planes[kMaxKBits] = {};
    for (int j = 0; j < 32; ++j) {
      const std::uint32_t idx = nearest_index(v[j] / denom, cb);
      for (int b = 0; b < k; ++b) planes[b] |= ((idx >> b) & 1u) << j;
    }
    for (int b = 0; b < k; ++b) q.packed[std::size_t(blk * k + b)] = planes[b];
    bool sat = false;
    q.absmax[std::size_t(blk)] = amax;
    q.absmax_e4m4[std::size_t(blk)] = e4m4_encode(amax, &sat);
    q.absmax_fp16[std::size_t(blk)] = float_to_half(amax);
    saturated += sat ? 1 : 0;
  }
  q.saturated_blocks = saturated;
  return q;
}

namespace {

float load_scale(const void* absmax, AbsmaxStorage s, std::int64_t blk) {
  switch (s) {
    case AbsmaxStorage::e4m4:
      return e4m4_decode(static_cast<const std::uint8_t*>(absmax)[blk]);
    case AbsmaxStorage::fp16:
      return half_to_float(static_cast<const std::uint16_t*>(absmax)[blk]);
    case AbsmaxStorage::fp32:
      return static_cast<const float*>(absmax)[blk];
  }
  return 0.0f;
}

}  // namespace

void dequantize(const std::uint32_t* packed, const void* absmax, AbsmaxStorage storage,
                std::int64_t n, int k, const std::vector<float>& cb, DType out_type, void* out) {
  validate_codebook(cb, k);
#pragma omp parallel for schedule(static)
  for (std::int64_t blk = 0; blk < num_blocks_for(n); ++blk) {
    const float scale = load_scale(absmax, storage, blk);
    for (int j = 0; j < 32 && blk * 32 + j < n; ++j) {
      std::uint32_t idx = 0;
      for (int b = 0; b < k; ++b) idx |= ((packed[blk * k + b] >> j) & 1u) << b;
      store_from_float(out_type, out, std::size_t(blk * 32 + j), cb[idx] * scale);
    }
  }
}

std::vector<float> dequantize_f32(const QuantizedTensor& q, const std::vector<float>& cb,
                                  AbsmaxStorage storage) {
  std::vector<float> out(std::size_t(q.numel));
  const void* abs = storage == AbsmaxStorage::e4m4 ? static_cast<const void*>(q.absmax_e4m4.data())
                    : storage == AbsmaxStorage::fp16
                        ? static_cast<const void*>(q.absmax_fp16.data())
                        : static_cast<const void*>(q.absmax.data());
  dequantize(q.packed.data(), abs, storage, q.numel, q.k_bits, cb, DType::f32, out.data());
  return out;
}

}  // namespace kbit
