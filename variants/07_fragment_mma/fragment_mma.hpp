// Variant 07 (fragment_mma.cu): the fragment-order layout (reference/fragment.hpp), K = 2..5, on
// its own kernel (mma.sync to 16 tokens, wgmma at 32..128) and the shared mainloop
// (variants/hopper/mainloop.cuh). Host entry points and options (the layout's GPU repack:
// variants/format/).
#pragma once
#include "variants/variant_api.hpp"

namespace kbit::variants {

// Tokens per tile, as variant 03's option; 0 picks by M.
inline constexpr OptionSpec kFragmentMmaTokenTile{
    "token_tile",
    0,
    0,
    256,
    false,
    "tokens per tile (the MMA's N): 8 (mma.sync only), 16, 32, 64, 128 or 256; 0 = by M (and "
    "the layer: 64 at 65..128 tokens on a small one, 128 on the own kernel at 129..512 tokens on "
    "one of at most 64 k-tiles an SM)",
    /*multiple_of=*/8,
    /*power_of_two=*/true};
// The consumers' MMA, as variant 03's option.
inline constexpr OptionSpec kFragmentMmaMma{
    "mma",
    0,
    0,
    2,
    false,
    "consumer MMA where it exists: 0 = by token tile (the own kernel: mma.sync to 16 tokens, "
    "wgmma at 32..128; the shared mainloop's wgmma at 256), 1 = wgmma (own 32..128, shared "
    "16..256), 2 = mma.sync (8..64); given, the shared mainloop keeps 129..512 tokens"};

// k-tiles a stage: on the own kernel's mma.sync 2 at 8 and 16 tokens, 1 or 2 at 32 and 64 (0 =
// 1); on its wgmma 1 or 2 (0 = 2 where the registers and the ring hold it); on the shared mainloop
// at 8..32 tokens (two blocks per SM) as before (README.md).
inline constexpr OptionSpec kFragmentMmaStageKTiles{
    "stage_k_tiles",
    0,
    0,
    2,
    false,
    "k-tiles (64 k) a ring stage holds: 1 or 2; 0 = by token tile (own mma.sync: 2 at 8 and 16 "
    "tokens, else 1; own wgmma: 2, but 1 at 64 tokens on 2 pipelines of two warpgroups or on 3, "
    "and at 128 on 2; shared mainloop: 2 to 16)"};
// Which kernel runs: the own one (pipelines over one table, no per-stage tile-end test;
// sync_kernel.cuh, wgmma_kernel.cuh) or the shared mainloop (variant 03's, the ladder's earlier
// rows).
inline constexpr OptionSpec kFragmentMmaKernel{
    "kernel",
    0,
    0,
    1,
    false,
    "0 = the own kernel (mma.sync 8..64 tokens, wgmma 32..128), 1 = the shared mainloop "
    "(variant 03's)"};
// Where the block scales are applied on the own kernel: to the weight pairs before the MMA
// (HMUL2) or to each block's products after it (FFMA, fp32 scales).
inline constexpr OptionSpec kFragmentMmaScaleAfter{
    "scale_after_mma",
    0,
    0,
    2,
    false,
    "own kernel, 8 and 16 tokens: 0 = by token tile (after), 1 = before the MMA (HMUL2 on the "
    "pairs), 2 = after (FFMA on each block's products, fp32 scales)"};

// Pipelines a block of the own kernel runs over its one table. mma.sync: 2 (8 consumer warps
// each, one 16-row block a warp), 3 or 4 (4 consumer warps each, two row blocks a warp: each
// activation fragment loaded once for two MMAs; at 16 tokens 4 pipelines of 2 consumer warps
// holding four, row_blocks). wgmma: 1 (two consumer warpgroups), 2 (two warpgroups each, or one
// of two row blocks a warp: row_blocks) or 3 (one warpgroup each, beside a producer warpgroup).
inline constexpr OptionSpec kFragmentMmaPipelines{
    "pipelines",
    0,
    0,
    4,
    false,
    "own kernel: walks a block runs over one table. mma.sync: 2 (one 16-row block a warp), 3 or "
    "4 (two row blocks a warp, or four: row_blocks); 0 = 4 to 16 tokens, 3 above. wgmma: 1, 2 "
    "or 3 (3: one warpgroup each, row_blocks 2); 0 = 3 at 32 and 64 tokens (2 with row_blocks "
    "= 1), 1 at 128 and where 3 would make short stream-K walks (fewer than 6 weights a walk "
    "a byte of its split-K partial; 2 there with row_blocks = 2)"};

// How the own kernel lays its walks (each one stream-K stripe of the plan) on blocks
// (variants/hopper/stream_k.hpp's WalkOrder).
inline constexpr OptionSpec kFragmentMmaWalkOrder{
    "walk_order",
    0,
    0,
    3,
    false,
    "own kernel: 0 = by problem (spread when block-major would leave a tenth of the SMs idle), "
    "1 = pipeline-major (neighbouring stripes on different SMs), 2 = block-major (a block's "
    "pipelines take neighbouring stripes), 3 = spread (pipeline-major over min(SMs, walks) "
    "blocks)"};
// Row blocks (16 weight rows) a consumer warp of the own kernel holds: each activation
// fragment it loads feeds that many MMAs.
inline constexpr OptionSpec kFragmentMmaRowBlocks{
    "row_blocks",
    0,
    0,
    4,
    false,
    "own kernel: 16-row blocks a consumer warp holds. mma.sync: 0 = 4 at 16 tokens on 4 "
    "pipelines, else 1 with 2 pipelines, 2 with 3 or 4; 1, 2, 4 (4 pipelines of 2 consumer "
    "warps, 8 and 16 tokens). wgmma: 1 (two warpgroups a pipeline), 2 (one, on 2 or 3 "
    "pipelines, beside a producer warpgroup that gives it its registers); 0 = 2 on 3 pipelines "
    "(the default at 32 and 64 tokens), else 1"};
// Whether the own kernel's wgmma consumers keep a commit group in flight under the next decode.
inline constexpr OptionSpec kFragmentMmaGroupInFlight{
    "group_in_flight",
    0,
    0,
    1,
    false,
    "own kernel's wgmma: 0 = a k-step's k-tiles one commit group, waited for before the stage's "
    "arrival; 1 = a group a k-tile, one left in flight: each k-tile's decode runs under the "
    "previous k-tile's wgmmas (stage_k_tiles = 2; not on 2 pipelines of two warpgroups)"};
// How the own kernel's producers and consumers wait on the ring's barriers.
inline constexpr OptionSpec kFragmentMmaWaitHint{
    "wait_hint_ns",
    0,
    0,
    1000000,
    false,
    "own kernel: the suspend-time hint (ns) of the ring's barrier waits (mma.sync: the "
    "producer's for a free stage and the consumers' for a full one, measured slower; wgmma: the "
    "producer's only): asleep until the stage is ready or the time passes; 0 = re-poll "
    "(try_wait's own short limit)"};

// Who stores a split tile on the own kernel.
inline constexpr OptionSpec kFragmentMmaSplitStore{
    "split_store",
    0,
    0,
    2,
    false,
    "own kernel: who stores a tile that several walks share. 1 = its last arrival (every "
    "contributor's consumer warps wait for the counter's answer); 2 = its fixed owner, the walk "
    "with its first k-steps (the others add their sums and release a count, one warp waiting); "
    "0 = the owner on wgmma (32..128 tokens) and, on kbit weights, on mma.sync where a walk is a "
    "third of a tile or more (3 x tiles >= walks: -1% to -2.5% on the Llama3 gate/up layers), "
    "else the last arrival (shorter walks on mma.sync: +0.6% to +4.7% with the owner)"};

// How the own kernel stores a walk's last piece.
inline constexpr OptionSpec kFragmentMmaStagedStore{
    "staged_store",
    0,
    0,
    2,
    false,
    "own kernel's wgmma (32..128 tokens): how a walk's last piece reaches C. 1 = 2-byte stores "
    "from the accumulators' registers (each warp instruction 16 bytes of 4 lines, as the "
    "mma.sync kernel stores, where 1 is also taken); 2 = through the pipeline's ring, free after "
    "the walk, as a "
    "[token][row] tile stored 16 bytes a thread (whole lines: +0.4% to -11% of the time, variant "
    "07's README); 0 = 2"};

// How a split tile's other contributors hand the fixed owner their sums.
inline constexpr OptionSpec kFragmentMmaPartialSums{
    "partial_sums",
    0,
    0,
    2,
    false,
    "own kernel under the fixed owner (split_store): how a split tile's other contributors hand "
    "it their sums. 1 = added into a zeroed fp32 workspace at L2 (red.add), which the owner "
    "clears after reading; 2 = where the tile has one other contributor, stored whole (nothing "
    "to add at L2, nothing to clear; tiles of three or more add as in 1: -1% to -5% at 64 and "
    "128 tokens, variant 07's README, build U); 0 = 2. Where the last arrival stores (mma.sync's "
    "default on short walks) every contributor adds: 1 is taken there too, 2 refused"};

// Weight rows a tile of the own kernel's wgmma: the layout's n-tile, or two of them sharing each
// stage's activation box (pipelines.cuh's kTileRows).
inline constexpr OptionSpec kFragmentMmaTileRows{
    "tile_rows",
    0,
    0,
    256,
    false,
    "own kernel's wgmma, 64 and 128 tokens: weight rows a tile. 128 = the layout's n-tile; 256 = "
    "two n-tiles on one pipeline (four consumer warpgroups, or two of two row blocks at 128 "
    "tokens), each stage's activation box feeding both: half the activation copies a weight; "
    "0 = 256 at 128 tokens where a walk streams 5 bytes of weights a byte of its split-K "
    "partial (pipelines, row_blocks, stage_k_tiles, group_in_flight at their defaults), else 128",
    /*multiple_of=*/128};

// What fragment_mma runs for a problem and options, decided on the host with every refusal
// before any GPU work (fragment_mma_setup: this, then the dense plan).
struct FragmentMmaChoice {
  int token_tile = 0;
  bool own = false;    // the own kernel (pipelines.cuh); false: the shared mainloop
  bool wgmma = false;  // the own kernel's consumers: wgmma (wgmma_kernel.cuh), else mma.sync
  int mma = 0;         // the `mma` option (the shared mainloop's path)
  int k_bits = 4;      // the weights' K (2..5; AWQ: 4)
  // Own kernel: k-tiles a ring stage. Shared mainloop: 2 asks for two at two blocks an SM
  // (FragmentWeightsT<K, true>), 1 for the mainloop's own rule.
  int k_tiles = 1;
  int pipelines = 1, row_blocks = 1;     // own kernel: walks a block, 16-row blocks a consumer warp
  bool scale_after = false;              // own mma.sync at 8 and 16 tokens: FFMA after the MMA
  int walk_order = 0, wait_hint_ns = 0;  // own kernel
  bool group_in_flight = false;          // own wgmma: a k-tile's commit group under the next decode
  bool split_owner = false;              // own kernel: a split tile stored by its fixed owner
  bool staged_store = false;             // own kernel: a walk's last piece stored through its ring
  bool stored_partials = false;          // own kernel, fixed owner: a sole partial stored whole
  int tile_rows = 128;                   // own wgmma: weight rows a tile (128 or 256)
};
// sms: the device's SM count (0: none visible, taken as 132, the H100's and H200's).
FragmentMmaChoice fragment_mma_choose(const GemmDims& dims, const VariantOptions& opts, int sms);
// The compiled kernel a choice runs, by its shape (no GPU call): CPU tests check that every
// choice the setup accepts has its kernel. `found`: a kernel exists (else it throws, naming it).
struct FragmentMmaKernelShape {
  bool found;
  int threads, stages, k_tiles, pipelines;
  bool sync;       // mma.sync consumers
  const void* fn;  // the kernel itself (choices that differ only in group_in_flight differ here)
  int tile_rows;   // weight rows a tile (128, or 256: two n-tiles)
};
FragmentMmaKernelShape fragment_mma_kernel_shape(const FragmentMmaChoice& choice, DType dtype);

// The device's SM count where one is visible, else 0 (the choice's refusals come first, and
// require_wgmma_device names the missing device after them).
int fragment_mma_visible_sms();

std::unique_ptr<VariantState> fragment_mma_setup(const GemmDims& dims, const VariantOptions& opts);
void fragment_mma_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                      cudaStream_t stream);

// awq_fragment_mma (awq_fragment_mma.cu): the own kernel on the AWQ tiled repack
// (reference/awq.hpp awq_tile, the layout awq_gemm reads), M = 1..128, fp16. Its options are
// fragment_mma's own-kernel ones under the same names and ranges (`choose` reads them by name),
// with its own defaults: one warpgroup a pipeline from 32 tokens but on the smallest layers, the
// scale after the MMA at 8 and 16 tokens where one scale spans a k-step (G = 128), else before.
inline constexpr OptionSpec kAwqFragmentMmaStageKTiles{
    "stage_k_tiles",
    0,
    0,
    2,
    false,
    "k-tiles (64 k) a ring stage holds: 1 or 2; 0 = by token tile (mma.sync at 8 and 16 tokens: "
    "2; wgmma: 2 at 32 tokens and on one pipeline of two warpgroups, else 1)"};
inline constexpr OptionSpec kAwqFragmentMmaPipelines{
    "pipelines",
    0,
    0,
    4,
    false,
    "walks a block runs. mma.sync (8, 16 tokens): 2, 3 or 4 (0 = 4). wgmma: 1 (two consumer "
    "warpgroups), 2 or 3 (one warpgroup each with row_blocks 2); 0 = 3 at 32 and 64 tokens, 2 "
    "at 128, and 1 where 3 a block would stream fewer than 16 KB of weights a walk"};
inline constexpr OptionSpec kAwqFragmentMmaRowBlocks{
    "row_blocks",
    0,
    0,
    4,
    false,
    "16-row blocks a consumer warp holds. mma.sync: as fragment_mma's (0 = 4 at 16 tokens on 4 "
    "pipelines, else by pipelines). wgmma: 1 (two warpgroups a pipeline) or 2 (one); 0 = 2, "
    "and 1 on one pipeline"};
inline constexpr OptionSpec kAwqFragmentMmaScaleAfter{
    "scale_after_mma",
    0,
    0,
    2,
    false,
    "mma.sync at 8 and 16 tokens: 0 = after where one scale spans a k-step (G = 128: one FFMA "
    "an accumulator a k-step), else before; 1 = before the MMA (HMUL2 on the pairs), 2 = after "
    "(FFMA on each block's products, or each k-step's where one scale spans it; fp32 scales)"};
inline constexpr OptionSpec kAwqFragmentMmaTokenTile{
    "token_tile",
    0,
    0,
    128,
    false,
    "tokens per tile (the MMA's N): 8, 16 (mma.sync), 32, 64, 128 (wgmma); 0 = by M",
    /*multiple_of=*/8,
    /*power_of_two=*/true};
FragmentMmaChoice awq_fragment_mma_choose(const GemmDims& dims, const VariantOptions& opts,
                                          int sms);
FragmentMmaKernelShape awq_fragment_mma_kernel_shape(const FragmentMmaChoice& choice);
std::unique_ptr<VariantState> awq_fragment_mma_setup(const GemmDims& dims,
                                                     const VariantOptions& opts);
void awq_fragment_mma_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                          cudaStream_t stream);

}  // namespace kbit::variants
