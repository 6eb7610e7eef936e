// GPU repack of the AutoAWQ tensors into the tiled layout that awq_gemm (variants/06_awq) reads
// (docs/awq_format.md, "The tiled layout"), bit-exact with kbit::awq_tile (reference/awq.hpp).
// Host API only: no CUDA device code or CUDA headers beyond the runtime API (the index math the
// kernel shares with a CPU test is awq_repack_map.hpp).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "variants/format/awq_repack_map.hpp"

namespace kbit::gpu {

// The tiled layout's sizes for qweight [k_in][n_out / 8]. Throws kbit::Error naming the value and
// the limit unless group is 32, 64 or 128, n_out is a positive multiple of 8, k_in a positive
// multiple of the group, and the k_tiles * n_tiles tiles (one block each) stay below 2^31.
AwqTileShape awq_tile_shape(std::int64_t k_in, std::int64_t n_out, int group);

// awq_tile on the device: from the AutoAWQ tensors as they are (qweight int32 [k_in][n_out / 8]
// and qzeros int32 [k_in / group][n_out / 8] in AWQ's nibble order, scales fp16 bits
// [k_in / group][n_out]) to `words` (awq_tile_shape(..).tile_words(): [k_tiles][n_tiles][1024])
// and `meta` (meta_words(): [meta_tiles][n_tiles][meta_words_per_tile]), every word written, the
// padding as 0. One kernel, one block per tile; never synchronizes. Throws before any launch for
// a shape awq_tile_shape refuses, a null pointer, or `words` not 16-byte aligned. The outputs
// must not overlap the inputs.
void awq_tile(const std::int32_t* qweight, const std::int32_t* qzeros, const std::uint16_t* scales,
              std::int64_t k_in, std::int64_t n_out, int group, std::uint32_t* words,
              std::uint32_t* meta, cudaStream_t stream);

}  // namespace kbit::gpu
