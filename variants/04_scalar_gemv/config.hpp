// Variant 04's configuration: every tuning value of the kernels and the plan, and why it is that
// value (docs/findings/variant_04.md has the measurements). Plain C++, read by the kernels
// (scalar_gemv.cu, stream.cuh) and by the host plan (plan.cpp) alike, so the two cannot disagree.
// The two choices that stay open at run time are the registry row's options `cluster_end` and
// `tagged_end` (harness/registry.cpp): how split tiles end.
#pragma once

namespace kbit::variants::scalar_gemv {

struct Config {
  // The tiled layout the kernels read (docs/format.md) and their work unit.
  static constexpr int kTileK = 64, kTileN = 128;
  static constexpr int kUnitTiles = 4;    // k-tiles per unit: quad lane t owns k-tile t
  static constexpr int kConsumers = 256;  // 8 warps x 16 columns = one n-tile
  static constexpr int kWarpThreads = 32;
  // Units in flight per block in the bulk-copy ring: 2 beat 3 and 4 (F-010), whose shared
  // memory costs the second block per SM. At K = 2, 3 (units of 1/2, 3/4 the bytes) 4 and 3
  // stages measured the same as 2 (F-034).
  static constexpr int kStages = 2;
  // Registers per thread: 2 blocks of 288 (or 320) threads per SM (9 warps allocate as 10).
  static constexpr int kMaxRegs = 96;
  // Rows x units of A staged per window: 9 KB; M = 1 stages 16 units at a time (F-017). K = 5
  // stages 8 (4.6 KB): with 16 its block took 115 KB of shared memory, room for one block per SM.
  static constexpr int kWindowRowUnits = 16;  // the most, the window warp's registers
  static constexpr int window_row_units(int k) { return k == 5 ? 8 : kWindowRowUnits; }
  // The same as a constant that device code can read (config.hpp is plain C++).
  template <int K>
  static constexpr int kWindowRowUnitsFor = window_row_units(K);
  // % more units per block allowed so that stripes start and end on k-bands of a tile (F-014).
  static constexpr int kAlignSlackPct = 20;
  static constexpr int kMaxRows = 4;     // rows of A per segment (M = 1..4)
  static constexpr int kMaxCluster = 8;  // the portable cluster size
  // Loads in flight per consumer thread in the tagged end's gather: the plan uses tagged slots
  // only where one round of them gathers every slot.
  static constexpr int kTaggedLoads = 4;
  // Bit widths whose dense M = 1, 2 kernels compile the tagged end (bit k: K = k). In K = 5 it
  // cost every M = 1, 2 row 3-8%, in K = 2 up to 0.8 us: those end through the workspace (F-022).
  static constexpr unsigned kTaggedKs = 0x18;
  // Under PDL, M = 1, 2 copy units 0 and 1 to registers before griddepcontrol.wait (8B gate/up
  // -0.2 us, F-023); plain launches copy unit 0 only.
  static constexpr bool kFirstTwoUnderPdl = true;
};

}  // namespace kbit::variants::scalar_gemv
