// Split-K's contributor count of a stripe cut (splitk.cuh ends the split tiles), as plain C++:
// the host plans and the kernels count the same.
#pragma once
#include "variants/common/host_device.hpp"

namespace kbit::dev::splitk {

// Blocks that own contiguous runs of `per` work items (block b: items [b * per, (b + 1) * per))
// and meet tile t, whose items are [t * items, (t + 1) * items): the tile's contributor count.
KBIT_HOST_DEVICE constexpr int stripe_contributors(long long t, long long items, long long per) {
  return int(((t + 1) * items - 1) / per - (t * items) / per + 1);
}

}  // namespace kbit::dev::splitk
