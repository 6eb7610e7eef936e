// The producer's side of the shared mainloop: one ring stage's fill (the activation boxes by TMA,
// the weight format's tiles by cp.async.bulk), shared by the mainloop (mainloop.cuh) and variant
// 07's own kernel.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "variants/common/barrier.cuh"
#include "variants/common/tma_tensor.cuh"
#include "variants/hopper/config.cuh"

namespace kbit::variants::ws {

// Fills one ring stage at st (KT k-tiles of k-step ks of `tile`, completing on mbarrier
// `full`): every activation box, even one past K_dim (the TMA fills it with zeros), so that the
// consumers multiply with no branch; the format's weight and scale tiles only for the k-tiles
// that exist. One producer thread calls it; the mainloop (mainloop.cuh) and variant 07's kernel
// share it.
template <typename F, int KT, int kABytes, int kWeightsAt, int kScalesAt>
__device__ __forceinline__ void fill_stage(uint32_t st, uint32_t full, const CUtensorMap* amap,
                                           const MainloopArgs& a, const TileInfo& tile, int ks) {
  const int kt0 = ks * KT, n_kt = min(KT, a.k_tiles - kt0);
  dev::mbar_arrive_expect_tx(full, KT * kABytes + n_kt * F::k_tile_bytes(a));
  for (int j = 0; j < KT; ++j)
    dev::tma_load_2d(st + j * kABytes, amap, (kt0 + j) * Config::kTileK, tile.a_row, full);
  for (int j = 0; j < n_kt; ++j)
    F::copy_k_tile(st + kWeightsAt + j * F::kWeightBytes, st + kScalesAt + j * F::kScaleBytes, a,
                   tile, kt0 + j, full);
}

}  // namespace kbit::variants::ws
