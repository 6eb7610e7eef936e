// The read probes (registry family "probe"): kernels that read a problem's bytes and compute
// nothing. Their options come from the registry rows (harness/registry.cpp), set per experiment.
#pragma once
#include <cstdint>
#include <vector>

#include "variants/variant_api.hpp"

namespace kbit::variants {

// read_bulk's ring, to sweep what a stream needs without rebuilding (findings F-026, F-027).
inline constexpr OptionSpec kReadBulkOptions[] = {
    {"chunk", 16384, 16, 1 << 20, false, "bytes per cp.async.bulk copy (a multiple of 16)", 16},
    {"stages", 4, 1, 16, false, "copies in flight per block"},
    {"blocks_per_sm", 0, 0, 32, false, "resident blocks per SM (0: as many as fit)"},
    {"striped", 0, 0, 1, true, "1: one contiguous stripe per block; 0: chunks round-robin"},
    {"before_wait", -1, -1, 1 << 20, false,
     "weight chunks a block copies before griddepcontrol.wait in a dependent launch (-1: all)"},
    {"pad", 0, 0, 1 << 20, false, "bytes of shared memory added per block (caps blocks per SM)"},
    {"late_trigger", 0, 0, 1, true,
     "1: the next dependent launch may start once the block issued its last weight copy; 0: at "
     "its start"},
    {"grid", 0, 0, 1 << 20, false, "streaming blocks (0: blocks_per_sm x SMs)"},
    {"hold", 0, 0, 1, true,
     "1: blocks_per_sm x SMs blocks all the same, `grid` of them streaming, the others holding "
     "their slots",
     1, false, "grid"},
    {"a_each", 0, 0, 1, true,
     "1: 8 more warps per block read all of A after the wait (a GEMV whose blocks own whole "
     "columns)"},
};

// read_slices' unit and ring: the stream of a GEMV whose unit is `slice` columns x `kt` k-tiles.
inline constexpr OptionSpec kReadSlicesOptions[] = {
    {"slice", 32, 16, 512, false,
     "columns per unit, a power of two (above 128 a unit spans 2 or 4 n-tiles)", 1, true},
    {"kt", 16, 1, 256, false, "k-tiles per unit"},
    {"stages", 2, 1, 8, false, "units in flight per block"},
    {"blocks_per_sm", 2, 0, 32, false, "resident blocks per SM (0: as many as fit)"},
    {"smem", 110592, 0, 232448, false,
     "bytes of shared memory per block at least (scalar_gemv's 108 KB: 2 blocks per SM)"},
    {"bulk", 0, 0, 1, true,
     "1: one cp.async.bulk per k-tile piece (scalar_gemv's producer at 128 x 4); 0: two TMA "
     "tensor copies per unit"},
    {"nt_major", 0, 0, 1, true,
     "1: read the layout's 128 x 64 tiles as if stored n-tile-major (tile (nt, kt) at nt x "
     "k_tiles + kt: a block's units one contiguous stream; slice = 128, bulk = 1), 0: as stored "
     "(k-tile-major: a block's consecutive k-tiles n_tiles tiles apart)"},
};

// read_ldg, read_bulk (read_probe.cu): read the problem's bytes
// (tiled kbit weights + A), write C = 0, compute nothing. Their time is the shape's practical
// streaming ceiling under the same timing, never checked.
std::unique_ptr<VariantState> read_ldg_setup(const GemmDims& dims, const VariantOptions& opts);
std::unique_ptr<VariantState> read_bulk_setup(const GemmDims& dims, const VariantOptions& opts);
void read_probe_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                    cudaStream_t stream);
// read_ldg's record of what it read (synchronizes): the XOR of every 32-bit word of the planes,
// the absmax codes and A, for tests. 0 from read_bulk (nothing reads its ring).
std::uint32_t read_probe_checksum(VariantState* state);
// read_bulk with the option a_each = 1 (synchronizes): per streaming block, the XOR of
// every 32-bit word of A that the block read (each block reads all of A); zeros without it.
std::vector<std::uint32_t> read_bulk_a_words(VariantState* state);

// read_slices (read_slices.cu): the weights in S-column x KT-k-tile units, each
// copied by two TMA tensor copies (planes, codes), the stream a column-slice GEMV would make;
// its checksum is the XOR of every weight word that landed in its ring (planes and codes).
std::unique_ptr<VariantState> read_slices_setup(const GemmDims& dims, const VariantOptions& opts);
void read_slices_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                     cudaStream_t stream);
std::uint32_t read_slices_checksum(VariantState* state);

}  // namespace kbit::variants
