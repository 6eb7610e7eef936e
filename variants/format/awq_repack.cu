// The AWQ tiled repack (awq_repack.hpp): one block of 256 threads per tile of 128 columns x 64 k.
// The block stages the tile's qweight words (64 k rows x 16 words; a warp loads two rows of 64
// contiguous bytes, 4 independent loads a thread) in shared memory, rows 18 words apart; each
// thread then packs its 4 words (awq_map::tile_word: 32 nibbles from rows 16 i + 2 c + {0, 1, 8,
// 9} of two adjacent staged words, 8-byte shared loads without bank conflicts) and writes them as
// one 16-byte store, a warp 512 contiguous bytes. The blocks of the k-tiles that start a meta tile
// also write its 128 or 256 meta words, one a thread, between the staging and the barrier. 32
// registers, 4.5 KiB of shared memory: 8 blocks an SM. Integer work only, so bit-exact by
// construction; the index math is awq_repack_map.hpp, checked on the CPU.
#include <cuda_runtime.h>

#include <string>

#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/format/awq_repack.hpp"

namespace kbit::gpu {
namespace {

constexpr std::int64_t kGridLimit = 1ll << 31;  // blocks of a one-dimensional grid

__global__ void __launch_bounds__(awq_map::kThreads, 8)
    awq_tile_kernel(AwqTileShape s, const std::int32_t* __restrict__ qweight,
                    const std::int32_t* __restrict__ qzeros,
                    const std::uint16_t* __restrict__ scales, std::uint32_t* __restrict__ words,
                    std::uint32_t* __restrict__ meta) {
  __shared__ __align__(16) std::uint32_t stage[awq_map::kStageWords];
  const unsigned tile = blockIdx.x, kt = tile / unsigned(s.n_tiles),
                 nt = tile - kt * unsigned(s.n_tiles);
  const int t = threadIdx.x;
  std::uint32_t staged[awq_map::kStagedPerThread];
#pragma unroll
  for (int j = 0; j < awq_map::kStagedPerThread; ++j) {
    const std::int64_t src = awq_map::stage_source(s, kt, nt, t + j * awq_map::kThreads);
    staged[j] = src >= 0 ? std::uint32_t(__ldg(qweight + src)) : 0u;
  }
#pragma unroll
  for (int j = 0; j < awq_map::kStagedPerThread; ++j)
    stage[awq_map::stage_slot(t + j * awq_map::kThreads)] = staged[j];
  const std::int64_t mt = awq_map::meta_tile_of(s, kt);
  if (mt >= 0 && t < s.meta_words_per_tile)
    meta[awq_map::meta_index(s, mt, nt, t)] = awq_map::meta_word(s, scales, qzeros, mt, nt, t);
  __syncthreads();
  const uint4 out = make_uint4(awq_map::tile_word(stage, t, 0), awq_map::tile_word(stage, t, 1),
                               awq_map::tile_word(stage, t, 2), awq_map::tile_word(stage, t, 3));
  reinterpret_cast<uint4*>(words + std::int64_t(tile) * kAwqTileWords)[t] = out;
}

std::int64_t tiles_over(std::int64_t extent, int tile) {  // ceil(extent / tile), no overflow
  return extent / tile + (extent % tile != 0);
}

}  // namespace

AwqTileShape awq_tile_shape(std::int64_t k_in, std::int64_t n_out, int group) {
  const std::string who = "gpu::awq_tile: ";
  if (group != 32 && group != 64 && group != 128)
    throw Error(who + "group size " + std::to_string(group) + " is not one of 32, 64, 128");
  if (n_out <= 0 || n_out % 8 != 0)
    throw Error(who + "N_out = " + std::to_string(n_out) +
                " must be a positive multiple of 8 (eight 4-bit columns pack into one int32)");
  if (k_in <= 0 || k_in % group != 0)
    throw Error(who + "K_in = " + std::to_string(k_in) +
                " must be a positive multiple of the group size " + std::to_string(group));
  AwqTileShape s;
  s.k_in = k_in;
  s.n_out = n_out;
  s.group = group;
  s.words_per_row = n_out / 8;
  s.groups = k_in / group;
  s.n_tiles = tiles_over(n_out, kAwqTileN);
  s.k_tiles = tiles_over(k_in, kAwqTileK);
  if (s.n_tiles >= kGridLimit || s.k_tiles >= kGridLimit || s.tiles() >= kGridLimit)
    throw Error(who + "K_in = " + std::to_string(k_in) + ", N_out = " + std::to_string(n_out) +
                " make " + std::to_string(s.k_tiles) + " x " + std::to_string(s.n_tiles) +
                " tiles of 64 k x 128 columns, reaching the grid limit 2^31 (one block a tile)");
  const int span = awq_meta_tile_k(group);
  s.meta_tiles = tiles_over(k_in, span);
  s.groups_per_meta_tile = span / group;
  s.meta_words_per_tile = kAwqTileN * s.groups_per_meta_tile;
  return s;
}

void awq_tile(const std::int32_t* qweight, const std::int32_t* qzeros, const std::uint16_t* scales,
              std::int64_t k_in, std::int64_t n_out, int group, std::uint32_t* words,
              std::uint32_t* meta, cudaStream_t stream) {
  const AwqTileShape s = awq_tile_shape(k_in, n_out, group);
  if (!qweight || !qzeros || !scales || !words || !meta)
    throw Error("gpu::awq_tile: a null input or output pointer");
  if (reinterpret_cast<std::uintptr_t>(words) % 16 != 0)
    throw Error(
        "gpu::awq_tile: the tile words must be 16-byte aligned (one 16-byte store a "
        "thread)");
  awq_tile_kernel<<<unsigned(s.tiles()), awq_map::kThreads, 0, stream>>>(s, qweight, qzeros, scales,
                                                                         words, meta);
  KBIT_CHECK_LAUNCH();
}

}  // namespace kbit::gpu
