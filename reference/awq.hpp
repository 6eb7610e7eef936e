// The int4 AWQ weight format that vLLM's AWQ kernels load (AutoAWQ's "gemm" layout):
// asymmetric 4-bit with a zero point per (group along K_in, output column), values packed
// eight to an int32 in AWQ's interleaved order. Bit-exact specification: docs/awq_format.md.
//
// Orientation: AWQ stores W_awq[K_in][N_out] (input dimension first); this project's weights
// are W[N][K_dim] (nn.Linear). W_awq[k][n] == W[n][k]: the quantizer takes the kbit-oriented
// float matrix and awq_dequantize gives it back in that orientation, so the result plugs
// into reference_gemm unchanged.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "reference/awq_layout.hpp"
#include "reference/dtype.hpp"
#include "reference/gemm_ref.hpp"

namespace kbit {

// Nibble position i (bits 4i..4i+3) of a packed word holds column 8j + kAwqOrder[i].
inline constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
// The inverse: column 8j + c sits at nibble position kAwqReverseOrder[c].
inline constexpr int kAwqReverseOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};
inline constexpr int kAwqDefaultGroup = 128;

struct AwqTensor {
  std::int64_t k_in = 0;              // rows: the input dimension (the kbit K_dim)
  std::int64_t n_out = 0;             // columns: the output dimension (the kbit N)
  int group = kAwqDefaultGroup;       // G, consecutive rows k sharing a scale and a zero
  std::vector<std::int32_t> qweight;  // [k_in][n_out / 8], packed 4-bit q
  std::vector<std::int32_t> qzeros;   // [k_in / group][n_out / 8], packed 4-bit zero points
  std::vector<std::uint16_t> scales;  // [k_in / group][n_out], fp16 bit patterns

  std::int64_t num_groups() const { return group > 0 ? k_in / group : 0; }
  std::int64_t words_per_row() const { return n_out / 8; }
};

// Throws kbit::Error naming the value unless n_out > 0 and n_out % 8 == 0, k_in > 0,
// group is 32, 64 or 128, and k_in % group == 0.
void awq_check_shape(std::int64_t k_in, std::int64_t n_out, int group);
// awq_check_shape plus the three vectors' sizes.
void awq_validate(const AwqTensor& t);

// The eight 4-bit values of one word, indexed by column within the group of 8 (v[c] belongs
// to column 8j + c), not by nibble position.
using AwqNibbles = std::array<std::uint8_t, 8>;
// Throws if a value exceeds 15. The word's top nibble makes it negative as int32 when >= 8.
std::int32_t awq_pack_nibbles(const AwqNibbles& v);
AwqNibbles awq_unpack_nibbles(std::int32_t word);

// Quantizes w_kbit ([n][k_dim] row-major float32, the nn.Linear layout) into the AWQ tensors
// of its transpose (k_in = k_dim, n_out = n). Throws, before producing anything, on a bad
// shape, on the first non-finite element (naming n and k), and on a group whose scale
// overflows fp16.
AwqTensor awq_quantize(const float* w_kbit, std::int64_t n, std::int64_t k_dim,
                       int group = kAwqDefaultGroup);
inline AwqTensor awq_quantize(const std::vector<float>& w_kbit, std::int64_t n, std::int64_t k_dim,
                              int group = kAwqDefaultGroup) {
  return awq_quantize(w_kbit.data(), n, k_dim, group);
}

// The unpacked integers, in AWQ orientation (row = k, column = n).
struct AwqValues {
  std::int64_t k_in = 0, n_out = 0;
  int group = 0;
  std::vector<std::uint8_t> q;      // [k_in][n_out]
  std::vector<std::uint8_t> zeros;  // [k_in / group][n_out]
  int q_at(std::int64_t k, std::int64_t n) const { return q[std::size_t(k * n_out + n)]; }
  int zero_at(std::int64_t g, std::int64_t n) const { return zeros[std::size_t(g * n_out + n)]; }
};
AwqValues awq_unpack(const AwqTensor& t);

// out[n * k_in + k] = round_to(out_type, float(q[k][n] - zero[k / G][n]) * half(scale[k / G][n])),
// the product in float32: the kbit orientation [N][K_dim]. `out` holds n_out * k_in elements
// of `out_type` (floats or 16-bit patterns).
void awq_dequantize(const AwqTensor& t, DType out_type, void* out);
std::vector<float> awq_dequantize(const AwqTensor& t);  // float32, [N][K_dim]

// The tiled repack that the wgmma GEMM (variants/06_awq, awq_gemm) reads: docs/awq_format.md,
// "The tiled layout". Tiles of 128 output columns x 64 k; in each, the 16 bytes consumer thread t
// of the kernel decodes (its rows r0 = 64 (t / 128) + 16 ((t / 32) % 4) + (t % 32) / 4 and
// r0 + 8, its k 16 i + 2 (t % 4) + {0, 1, 8, 9} of k16 step i) as 4 words, one per k16 step,
// nibbles p and p + 4 the pair (k, k + 1) of wgmma A register p. Scales and zero points per
// meta tile (max(G, 64) k, one or two groups) as one word per column: the fp16 scale in the
// low half, the fp16 value 1024 + zero (0x6400 + zero) in the high half. Out of range: 0.
struct AwqTiled {
  std::int64_t n_out = 0, k_in = 0;
  int group = 0;
  int n_tiles = 0, k_tiles = 0, meta_tiles = 0, meta_words_per_tile = 0;
  std::vector<std::uint32_t> words;  // [k_tiles][n_tiles][1024]
  std::vector<std::uint32_t> meta;   // [meta_tiles][n_tiles][meta_words_per_tile]
};
AwqTiled awq_tile(const AwqTensor& t);

// reference_gemm on the float32 dequantized weight: C[M, N] = A[M, K_in] * W_awq.
GemmReference awq_gemm_ref(const float* A, std::int64_t M, const AwqTensor& t,
                           const std::vector<std::int64_t>& rows);

}  // namespace kbit
