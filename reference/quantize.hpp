// Blockwise kbit quantize / dequantize to bit-planes, flat layout (docs/format.md).
#pragma once
#include <cstdint>
#include <vector>

#include "reference/dtype.hpp"

namespace kbit {

// How the per-block scale is stored next to the bit-planes.
enum class AbsmaxStorage { e4m4, fp16, fp32 };
const char* absmax_storage_name(AbsmaxStorage s);

struct QuantizedTensor {
  int k_bits = 0;
  std::int64_t numel = 0;
  std::vector<std::uint32_t> packed;       // packed[block * k_bits + b]: bit j = bit b of index j
  std::vector<float> absmax;               // exact float32 absmax per block
  std::vector<std::uint8_t> absmax_e4m4;   // e4m4_encode(absmax)
  std::vector<std::uint16_t> absmax_fp16;  // float_to_half(absmax), the alternative storage
  std::int64_t saturated_blocks = 0;       // blocks whose absmax saturated E4M4 (> 31)

  std::int64_t num_blocks() const { return std::int64_t(absmax.size()); }
  // The K-bit codebook index of element i.
  std::uint32_t index(std::int64_t i) const;
  // The scale a kernel decodes for block `block` from storage `s`.
  float scale(std::int64_t block, AbsmaxStorage s) const;
};

inline std::int64_t num_blocks_for(std::int64_t n) {
  return (n + 31) / 32;
}

// Quantizes n elements of type `in` (fp32 floats or fp16/bf16 bit patterns). The last block
// is padded with 0.0f. Throws, naming the first non-finite element, before writing anything.
QuantizedTensor quantize(DType in, const void* x, std::int64_t n,
                         const std::vector<float>& codebook, int k_bits);
inline QuantizedTensor quantize(const std::vector<float>& x, const std::vector<float>& codebook,
                                int k) {
  return quantize(DType::f32, x.data(), std::int64_t(x.size()), codebook, k);
}

// The index rule alone: argmin_i |v - cb[i]|, ties to the lowest index.
std::uint32_t nearest_index(float v, const std::vector<float>& codebook);

// out[i] = round_to(out_type, cb[index_i] * scale_i), scale from `storage`, product in float32.
// `absmax` points at e4m4 bytes, fp16 patterns or floats according to `storage`.
void dequantize(const std::uint32_t* packed, const void* absmax, AbsmaxStorage storage,
                std::int64_t n, int k_bits, const std::vector<float>& codebook, DType out_type,
                void* out);
// Convenience: float32 values of q with E4M4 scales.
std::vector<float> dequantize_f32(const QuantizedTensor& q, const std::vector<float>& codebook,
                                  AbsmaxStorage storage = AbsmaxStorage::e4m4);

}  // namespace kbit
