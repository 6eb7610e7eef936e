// GPU format kernels shared by every variant: quantize, dequantize, E4M4 encode, repack.
// Each is bit-exact with the reference (reference/quantize.hpp, e4m4.hpp, tiled.hpp).
// Host API only: no CUDA device code or CUDA headers beyond the runtime API.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "reference/dtype.hpp"
#include "reference/quantize.hpp"
#include "reference/tiled.hpp"

namespace kbit::gpu {

// The codebook travels by value in the kernel parameters (no device allocation, and baked
// into CUDA graphs). Unused entries are zero.
struct CodebookArg {
  float v[32];
  int k_bits;
};
CodebookArg make_codebook_arg(const std::vector<float>& codebook, int k_bits);

struct QuantizeOutputs {
  std::uint32_t* packed = nullptr;       // num_blocks * k_bits words (required)
  float* absmax = nullptr;               // num_blocks floats (optional)
  std::uint8_t* absmax_e4m4 = nullptr;   // num_blocks bytes (optional)
  std::uint16_t* absmax_fp16 = nullptr;  // num_blocks fp16 patterns (optional)
};

// Quantizes n elements of type `in` on the device. First scans the input for non-finite
// values (one synchronization): if any, throws kbit::Error naming the first one and writes
// nothing. Returns the number of blocks whose absmax saturated E4M4.
std::int64_t quantize(DType in, const void* x, std::int64_t n, const std::vector<float>& codebook,
                      int k_bits, const QuantizeOutputs& out, cudaStream_t stream);

// out[i] = round_to(out_type, cb[idx_i] * scale_i). Never synchronizes (graph-capturable).
void dequantize(const std::uint32_t* packed, const void* absmax, AbsmaxStorage storage,
                std::int64_t n, const CodebookArg& codebook, DType out_type, void* out,
                cudaStream_t stream);

// E4M4-encodes num_blocks absmax floats. Checks for negative or non-finite values first (one
// synchronization) and throws naming the first; returns the number that saturated.
std::int64_t encode_e4m4(const float* absmax, std::int64_t num_blocks, std::uint8_t* out,
                         cudaStream_t stream);

// Flat -> tiled (reference/tiled.hpp layout, padding written as zeros), and back.
void repack(const std::uint32_t* packed_flat, const std::uint8_t* absmax_flat,
            const TiledGeometry& geo, std::uint32_t* packed_tiled, std::uint8_t* absmax_tiled,
            cudaStream_t stream);
void unrepack(const std::uint32_t* packed_tiled, const std::uint8_t* absmax_tiled,
              const TiledGeometry& geo, std::uint32_t* packed_flat, std::uint8_t* absmax_flat,
              cudaStream_t stream);

// The tiled layout (K = k_bits = 2..5, 64 x 128 tiles) to the fragment order, tile by tile:
// bit-exact with kbit::fragment_order (reference/fragment.hpp). `tiles` tiles of 256 K words and
// 256 code bytes; in and out must not overlap. Throws before any launch for another K (naming
// it) or for 2^31 tiles and more; does nothing for none.
void fragment_order(int k_bits, const std::uint32_t* tiled, const std::uint8_t* codes,
                    std::int64_t tiles, std::uint32_t* out, std::uint8_t* out_codes,
                    cudaStream_t stream);

}  // namespace kbit::gpu
