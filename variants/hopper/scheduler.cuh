// The shared mainloop's scheduler: the contract of a tile policy (the order of the output tiles:
// dense_tiles.cuh, grouped_tiles.cuh) and a block's walk over its (tile, k-step) units, whole
// tiles round-robin, then one stream-K stripe.
#pragma once
#include <cuda_runtime.h>

#include "variants/hopper/config.cuh"

namespace kbit::variants::ws {

// A tile policy P gives the kernel:
//   P::Args                                 : MainloopArgs plus what P reads
//   int P::whole_tiles(const Args&)         : the round-robin tiles (dp_tiles); called after the
//                                             PDL wait, so it may read what the previous kernel
//                                             wrote
//   TileInfo P::tile(const Args&, int t)    : tile t
//   int P::contributors(const Args&, int t) : blocks that add into tile t (1: stored directly)
//   int P::row_end(const Args&, TileInfo)   : the tile's row_end, as the store compares it (a
//                                             dense problem's a.M from the parameter bank: kept
//                                             in a register it made ptxas spill at TT = 256)
// A block's walk over its (tile, k-step) units, one step at a time (no division in the loop):
// the producer and the consumers each make the same one.
struct Walk {
  int k_steps, dp_steps, sk0, steps;
  int i = 0, t = 0, ks = 0;  // step i is tile t, k-step ks
  // Stages the walk takes: the steps, and one phantom stage first when the steps are odd. The
  // consumers then run the steps two at a time (fragment sets 0 and 1) with no odd step after
  // the loop: a wgmma in that conditional tail made ptxas wait after every wgmma of the kernel
  // (C7518, F-037). The phantom stage loads and multiplies step 0's data into the accumulators,
  // which step 0 then overwrites; it stores nothing.
  int stages, n = 0;  // stage n of the ring (n = i + phantom once past the phantom)
  __device__ Walk(const MainloopArgs& a, int dp_tiles) : k_steps(a.k_steps) {
    const int b = int(blockIdx.x), grid = int(gridDim.x);
    const int dp_tiles_here = b < dp_tiles ? (dp_tiles - 1 - b) / grid + 1 : 0;
    dp_steps = dp_tiles_here * k_steps;
    sk0 = dp_tiles * k_steps + b * a.per;
    steps = dp_steps + max(0, min(a.units, sk0 + a.per) - sk0);
    stages = steps + (steps & 1);
    if (dp_steps > 0)
      t = b;
    else
      enter_stripe();
  }
  __device__ void enter_stripe() {
    t = sk0 / k_steps;
    ks = sk0 - t * k_steps;
  }
  __device__ __forceinline__ bool phantom() const { return n < stages - steps; }
  __device__ __forceinline__ bool ends_tile() const {
    return !phantom() && (ks == k_steps - 1 || i == steps - 1);
  }
  __device__ __forceinline__ void advance() {
    if (phantom()) {
      ++n;
      return;
    }
    ++n;
    ++i;
    if (i == dp_steps) {
      enter_stripe();
    } else if (++ks == k_steps) {
      ks = 0;
      t += i < dp_steps ? int(gridDim.x) : 1;
    }
  }
};

}  // namespace kbit::variants::ws
