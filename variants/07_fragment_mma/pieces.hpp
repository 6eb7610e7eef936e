// Variant 07's own kernel (pipelines.cuh: both its mma.sync and its wgmma consumers): the pieces
// of one walk. Plain C++ (host and device),
// so that a CPU test walks the plans the kernel runs.
#pragma once
#include "variants/common/host_device.hpp"

namespace kbit::variants::fragment {

// A walk's pieces: whole tiles b, b + grid, ... below dp_tiles, then the stripe of units
// [dp_tiles k_steps + b per, + per) cut at tile boundaries (the plan's stream-K, stream_k.hpp,
// whose contributor counts DenseTiles::contributors gives). Walk b of `grid` over the plan in
// `a`: its dp_tiles, k_steps, units (tiles x k_steps) and per, from the kernel's MainloopArgs or
// the host's ws::StreamK (read from `a` in place: the kernel's SASS is that of the expressions on
// its parameters, which values passed in would change).
struct Pieces {
  int t, grid, dp_tiles, k_steps, u, u_end;
  template <typename Args>
  KBIT_HOST_DEVICE Pieces(const Args& a, int b, int grid_)
      : t(b),
        grid(grid_),
        dp_tiles(a.dp_tiles),
        k_steps(a.k_steps),
        u(a.dp_tiles * a.k_steps + b * a.per),
        u_end(least(a.units, a.dp_tiles * a.k_steps + (b + 1) * a.per)) {}
  // The next piece: tile `tile`, k-steps [ks0, ks1); false past the walk's end.
  KBIT_HOST_DEVICE_INLINE bool next(int& tile, int& ks0, int& ks1) {
    if (t < dp_tiles) {
      tile = t;
      ks0 = 0;
      ks1 = k_steps;
      t += grid;
      return true;
    }
    if (u >= u_end) return false;
    tile = u / k_steps;
    ks0 = u - tile * k_steps;
    ks1 = least(k_steps, ks0 + (u_end - u));
    u += ks1 - ks0;
    return true;
  }
  // Whether the piece next() gave last is the walk's last (no piece follows it).
  KBIT_HOST_DEVICE_INLINE bool last() const { return t >= dp_tiles && u >= u_end; }
  static KBIT_HOST_DEVICE_INLINE int least(int x, int y) { return x < y ? x : y; }
};

}  // namespace kbit::variants::fragment
