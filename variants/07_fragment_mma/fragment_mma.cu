// Variant 07: the fragment-order layout (reference/fragment.hpp), K = 2..5. The layout moves the
// tiled layout's plane merge (2K + 1 instructions per block-row a thread decodes) into a one-off
// repack, so a consumer's k-tile at K = 4 is one LDS.128, one LDS.32 of codes and per pair one
// PRMT + LDS + HMUL2 (K = 3: an LDS.64 and an LDS.32 of words; K = 2: one LDS.64, two pairs a
// PRMT + LDS.64 of the quad table; K = 5: K = 4's loads and a fifth word, a pair's address one
// PRMT from a register of two pairs' plane-4 bits, 128 KB table; fragment_weights.cuh). Dense
// problems only, with the shared dense tile order and plan (variants/hopper/dense_tiles.cuh,
// launcher.cuh), on the own kernel (pipelines.cuh: mma.sync consumers to 16 tokens,
// sync_kernel.cuh; wgmma at 32..128, wgmma_kernel.cuh, and over m-tiles at 129..512 tokens on
// small layers) or the shared mainloop (variants/hopper/mainloop.cuh: 256 tokens, and `kernel =
// 1`). README.md beside this file.
#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "reference/error.hpp"
#include "variants/07_fragment_mma/awq_fragment_weights.cuh"
#include "variants/07_fragment_mma/fragment_kernels.cuh"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/07_fragment_mma/own_kernel.cuh"
#include "variants/hopper/dense_tiles.cuh"
#include "variants/hopper/launcher.cuh"
#include "variants/hopper/mainloop.cuh"

namespace kbit::variants {

namespace {

// awq_fragment_mma's options are read through fragment_mma's specs (by name): the same names,
// defaults and ranges, only their help differs.
constexpr bool same_option(const OptionSpec& a, const OptionSpec& b) {
  return a.name == b.name && a.default_value == b.default_value && a.min == b.min &&
         a.max == b.max && a.multiple_of == b.multiple_of && a.power_of_two == b.power_of_two;
}
static_assert(same_option(kAwqFragmentMmaStageKTiles, kFragmentMmaStageKTiles) &&
                  same_option(kAwqFragmentMmaPipelines, kFragmentMmaPipelines) &&
                  same_option(kAwqFragmentMmaRowBlocks, kFragmentMmaRowBlocks) &&
                  same_option(kAwqFragmentMmaScaleAfter, kFragmentMmaScaleAfter),
              "awq_fragment_mma's option specs are fragment_mma's but for their help");

// The options that only the own kernel reads: refused where the shared mainloop runs.
constexpr const OptionSpec* kOwnKernelOptions[] = {
    &kFragmentMmaPipelines, &kFragmentMmaWalkOrder,     &kFragmentMmaRowBlocks,
    &kFragmentMmaWaitHint,  &kFragmentMmaGroupInFlight, &kFragmentMmaSplitStore,
    &kFragmentMmaTileRows,  &kFragmentMmaStagedStore,   &kFragmentMmaPartialSums};

bool given(const VariantOptions& o, const OptionSpec& spec) {
  return o.get(spec) != spec.default_value;
}

// fragment_mma_choose and awq_fragment_mma_choose: the same rules on both formats (awq: the AWQ
// tiled repack, on the own kernel alone).
FragmentMmaChoice choose(const GemmDims& d, const VariantOptions& o, int sms, bool awq) {
  const char* who = awq ? "awq_fragment_mma" : "fragment_mma";
  if (awq) {
    require_awq_dims(d, who);
  } else {
    require_dense_gemm_dims(d, who);
    if (d.k_bits < 2 || d.k_bits > 5)
      throw Error(std::string(who) + ": K = " + std::to_string(d.k_bits) +
                  "; the fragment-order layout is K = 2..5");
  }
  const std::int64_t tt_opt = o.get(awq ? kAwqFragmentMmaTokenTile : kFragmentMmaTokenTile);
  // Small layers take the 64-token tile at 65..128 tokens: at most 12 k-tiles of 128 x 64 weights
  // an SM (Qwen3's dense layers, 1280 k-tiles), two m-tiles of 64 tokens (the second read of the
  // weights from L2) run on the same 128 blocks with twice the tiles and ring stages and half the
  // split-K partial: Qwen3 dense gate/up and down -11% / -14% at K = 4, -6% to -10% at K = 2, 3, 5;
  // the GLM-4.7 shared layers (2560 k-tiles) and Llama3-8B down 2-12% slower. At 16 tokens the
  // 8-token tile measured level to 5% faster at K = 2..4 and 2-8% slower at K = 5 (README.md,
  // "Small layers"). kbit only (unmeasured on AWQ weights), and only where no option of the own
  // kernel is given (each names a configuration of the tile of its M; partial_sums, how a split
  // tile's sums travel, names none).
  const std::int64_t sms_or_132 = sms > 0 ? sms : 132;
  bool own_options_given = given(o, kFragmentMmaKernel) || given(o, kFragmentMmaMma) ||
                           given(o, kFragmentMmaStageKTiles) || given(o, kFragmentMmaScaleAfter);
  for (const OptionSpec* spec : kOwnKernelOptions)
    own_options_given = own_options_given || (spec != &kFragmentMmaPartialSums && given(o, *spec));
  const std::int64_t layer_k_tiles = (d.N + ws::Config::kTileN - 1) / ws::Config::kTileN *
                                     ((d.K_dim + ws::Config::kTileK - 1) / ws::Config::kTileK);
  const bool small_layer = !awq && !own_options_given && layer_k_tiles <= 12 * sms_or_132;
  // Prefill chunks of 129..512 tokens on layers of at most 64 k-tiles an SM (Qwen3 dense, the
  // GLM-4.7 shared layers, Llama3-8B's unfused gate and down: 10-54) take the own wgmma kernel's
  // 128-token tile over several m-tiles, where the shared mainloop's 256-token tile leaves SMs
  // idle or splits short walks: Qwen3 dense -16% to -32%, GLM-4.7 shared -11% to -17%, Llama3-8B
  // -3% to -8% at 256 and 512 tokens; the Llama3-70B layers (217 k-tiles an SM) ran +1% to +3%
  // with it and keep the shared mainloop (README.md, "Prefill chunks on the own kernel"). kbit
  // only, and only where neither `kernel` nor `mma` is given.
  const bool own_prefill = !awq && !given(o, kFragmentMmaKernel) && !given(o, kFragmentMmaMma) &&
                           d.M > 128 && d.M <= 512 && layer_k_tiles <= 64 * sms_or_132;
  const int tt_by_m = own_prefill ? 128 : ws::token_tile_for(d.M);
  const int tt = tt_opt != 0                                   ? int(tt_opt)
                 : small_layer && d.M <= 128 && tt_by_m == 128 ? 64
                                                               : tt_by_m;
  if (awq && tt > 128)
    throw Error(std::string(who) + ": M = " + std::to_string(d.M) + " takes token tile " +
                std::to_string(tt) + "; the own kernel holds 8..128 tokens (awq_gemm: any M)");
  const std::int64_t mma = o.get(kFragmentMmaMma);
  const std::int64_t kt_opt = o.get(kFragmentMmaStageKTiles);
  // The own kernel: mma.sync to 16 tokens by default, to 64 with mma = 2; wgmma at 32..128
  // tokens (measured faster than mma.sync at 32, README.md). The shared mainloop: kernel = 1, and
  // 256 tokens.
  const bool want_sync = mma == 2 || (mma == 0 && tt <= 16);
  const bool own_kernel_chosen = o.get(kFragmentMmaKernel) == 0;
  const bool own_sync = own_kernel_chosen && want_sync && tt <= 64;
  const bool own_wgmma = own_kernel_chosen && !want_sync && tt >= 32 && tt <= 128;
  const bool own = own_sync || own_wgmma;
  // Pipelines, row blocks a warp and k-tiles a stage. Own mma.sync: 4 pipelines to 16 tokens,
  // else 3; 2 k-tiles at 8 and 16 tokens, else 1. Own wgmma (README.md's ladder): at 32 and 64
  // tokens 3 pipelines of one warpgroup (two row blocks a warp; 2 k-tiles at 32, 1 at 64), or
  // one pipeline of two warpgroups where the walks are short (below); at 128 one pipeline.
  // `row_blocks = 1` there: 2 pipelines of two warpgroups. 2 k-tiles where the registers hold
  // them. The shared mainloop: 2 k-tiles to 16 tokens.
  const std::int64_t pipes_opt = o.get(kFragmentMmaPipelines);
  const std::int64_t rb_opt = o.get(kFragmentMmaRowBlocks);
  // Short walks: where 3 pipelines a block (3 x SMs walks) would decode fewer than 6 weights a
  // walk (3 bytes at K = 4) for each byte of the walk's split-K partial (TT x 128 fp32 sums), the
  // split-K traffic outweighs what the pipelines hide: one pipeline of two warpgroups a block
  // (measured on Qwen3 dense and the Llama3 down projections at K = 4, README.md's ladder, build
  // I). Weights, not bytes: a walk's work is its decode, which does not shrink with K (Llama3-8B
  // gate/up at K = 2 and 64 tokens: 36.9 us on 3 pipelines against 42.4 on one, build O).
  const int k_bits = awq ? 4 : d.k_bits;
  // Weight rows a tile (kbit only: the AWQ row has no such option): 256 = two n-tiles on one
  // pipeline of the own wgmma at 64 and 128 tokens.
  const std::int64_t tile_rows_opt = awq ? 0 : o.get(kFragmentMmaTileRows);
  if (tile_rows_opt != 0 && tile_rows_opt != 128 && tile_rows_opt != 256)
    throw Error(std::string(who) + ": tile_rows = " + std::to_string(tile_rows_opt) +
                " is not 128 or 256 (or 0: by the rule below)");
  const bool group_in_flight = o.get(kFragmentMmaGroupInFlight) != 0;
  // By default 256-row tiles at 128 tokens where a walk of one pipeline an SM streams 5 bytes of
  // weights or more for each byte of its split-K partial (128 x 256 fp32 sums): Llama3-70B
  // gate/up and down (6.8) -4% and -3%; 8B gate/up (3.4) level; 8B down (1.7) +16%, Qwen3 dense
  // (0.3) +44% (README.md, "256-row tiles"). At 64 tokens 3 pipelines of 128-row tiles ran faster
  // on every layer. Only pipelines, row_blocks, stage_k_tiles and group_in_flight given turn the
  // rule off (they name a 128-row configuration).
  const std::int64_t n_tiles = (d.N + ws::Config::kTileN - 1) / ws::Config::kTileN;
  const std::int64_t walk_weight_bytes =
      n_tiles * ((d.M + tt - 1) / tt) * d.K_dim * ws::Config::kTileN * k_bits / 8 / sms_or_132;
  const bool long_pair_walks = walk_weight_bytes >= 5 * std::int64_t(tt) * 256 * 4;
  const bool pairs_by_rule = tile_rows_opt == 0 && !awq && own_wgmma && tt == 128 &&
                             pipes_opt == 0 && rb_opt == 0 && kt_opt == 0 && !group_in_flight &&
                             long_pair_walks;
  const int tile_rows = tile_rows_opt == 256 || pairs_by_rule ? 256 : 128;
  // The ring stages each of `p` pipelines of kt_ k-tiles a stage gets beside the format's table
  // (64 KB; 128 KB at K = 5; none on AWQ weights); a kernel needs 2.
  const auto ring_stages = [&](int kt_, int p) {
    using fragment::FragmentWeightsT;
    using fragment::ring_stages;
    return awq           ? ring_stages<fragment::AwqFragmentWeights>(tt, kt_, p, who)
           : k_bits == 2 ? ring_stages<FragmentWeightsT<2, true>>(tt, kt_, p, who, tile_rows)
           : k_bits == 3 ? ring_stages<FragmentWeightsT<3, true>>(tt, kt_, p, who, tile_rows)
           : k_bits == 4 ? ring_stages<FragmentWeightsT<4, true>>(tt, kt_, p, who, tile_rows)
                         : ring_stages<FragmentWeightsT<5, true>>(tt, kt_, p, who, tile_rows);
  };
  const auto ring_fits = [&](int kt_, int p) { return ring_stages(kt_, p) >= 2; };
  const std::int64_t tiles =
      (d.N + ws::Config::kTileN - 1) / ws::Config::kTileN * ((d.M + tt - 1) / tt);
  const std::int64_t walks3 = 3 * sms_or_132;
  const std::int64_t weights = tiles * d.K_dim * ws::Config::kTileN;  // the m-tiles' reads too
  const std::int64_t weight_bytes = weights * k_bits / 8;
  // AWQ weights: one pipeline of two warpgroups ran 1.3-2x slower than 3 pipelines of one
  // warpgroup at 32 and 64 tokens and than 2 at 128 on every layer but the smallest, its
  // consumers waiting on the ring (README.md, "AWQ weights on the own kernel"). They take it
  // only where 3 pipelines a block would stream fewer than 4 k-tiles of weights (16 KB) a walk
  // (Qwen3's dense layers, 5 MB), and 2 pipelines of one warpgroup at 128 tokens.
  const bool short_walks =
      awq ? weight_bytes < walks3 * 4 * ws::Config::kTileN * ws::Config::kTileK / 2
          : weights / 2 < 3 * walks3 * tt * ws::Config::kTileN * 4;
  const bool wgmma_p3 =
      tt <= 64 && !short_walks && (rb_opt == 0 || rb_opt == 2);  // of one warpgroup
  const bool awq_p2 = awq && tt > 64 && !short_walks && rb_opt == 0 && pipes_opt == 0;
  const int pipes = pipes_opt != 0     ? int(pipes_opt)
                    : tile_rows == 256 ? 1
                    : own_wgmma        ? (short_walks && rb_opt != 2          ? 1
                                          : wgmma_p3                          ? 3
                                          : tt <= 64 || rb_opt == 2 || awq_p2 ? 2
                                                                              : 1)
                    : tt <= 16         ? (ring_fits(2, 4) ? 4 : 3)  // K = 5: 3
                                       : 3;
  const int wgmma_rb = rb_opt != 0                                  ? int(rb_opt)
                       : (pipes == 3 || awq_p2) && tile_rows == 128 ? 2
                                                                    : 1;
  // 2 k-tiles only where they leave 3 ring stages a pipeline: K = 5 at 128 tokens ran 120.4 us
  // on 1 k-tile (4 stages) against 131.8 on 2 (2 stages) (README.md, "K = 5"); every K = 2..4
  // choice keeps 3 or more.
  const int wgmma_kt = ((wgmma_rb == 2 && pipes == 2 && tt <= 64) || pipes == 1 || tt == 32) &&
                               ring_stages(2, pipes) >= 3
                           ? 2
                           : 1;
  // 256-row tiles: 1 k-tile (2 spill in the consumers' 112 registers).
  const int kt = kt_opt != 0        ? int(kt_opt)
                 : tile_rows == 256 ? 1
                 : own_wgmma        ? wgmma_kt
                 : tt <= 16         ? 2
                                    : 1;
  if (own_sync && pipes_opt == 1)
    throw Error(std::string(who) +
                ": pipelines = 1: the own kernel's mma.sync runs 2, 3 or 4 (or 0: by token tile)");
  // An option that would change nothing where it is given is refused too, so that a run's
  // config says what ran: the own kernel's options off it, and values it does not take.
  const auto refuse = [&](const std::string& what) {
    throw Error(std::string(who) + ": " + what + ", and " + std::to_string(tt) + " tokens run " +
                (own ? std::string("the own kernel")
                     : "the shared mainloop (the own kernel: kernel = 0, 8..128 tokens; wgmma "
                       "from 32, mma.sync to 64)"));
  };
  const std::int64_t wait_hint = o.get(kFragmentMmaWaitHint);
  if (!own) {
    for (const OptionSpec* spec : kOwnKernelOptions)
      if (given(o, *spec))
        refuse(std::string(spec->name) + " = " + std::to_string(o.get(*spec)) +
               " is the own kernel's");
  }
  if (const std::int64_t after = o.get(kFragmentMmaScaleAfter);
      after != 0 && !(own_sync && tt <= 16))
    refuse("scale_after_mma = " + std::to_string(after) +
           " is the own kernel's mma.sync's at 8 and 16 tokens (the rest scale before the MMA)");
  if (tile_rows_opt != 0 && !own_wgmma)
    refuse("tile_rows = " + std::to_string(tile_rows_opt) + " is the own kernel's wgmma's");
  // 1 (from the registers) is also what the own mma.sync kernel does: accepted there.
  if (o.get(kFragmentMmaStagedStore) == 2 && !own_wgmma)
    refuse("staged_store = 2 is the own kernel's wgmma's (its mma.sync stores from the registers)");
  if (tile_rows == 256) {
    if (tt != 64 && tt != 128) refuse("tile_rows = 256 is compiled at 64 and 128 tokens only");
    if (pipes != 1)
      refuse("tile_rows = 256 with pipelines = " + std::to_string(pipes) +
             ": a 256-row tile runs 1 pipeline (its 16 row blocks take 8 or 16 warps)");
    if (wgmma_rb == 2 && (tt != 128 || kt != 1))
      refuse(
          "tile_rows = 256 with row_blocks = 2 is compiled at 128 tokens with stage_k_tiles = "
          "1 only");
    if (kt != 1)
      refuse("tile_rows = 256 with stage_k_tiles = " + std::to_string(kt) +
             ": 2 k-tiles spill beside the 256-row tile's accumulators (1 only)");
    if (wgmma_rb > 2)
      refuse("tile_rows = 256 with row_blocks = " + std::to_string(wgmma_rb) +
             ": its warps hold 1 or 2 row blocks");
    if (group_in_flight) refuse("group_in_flight = 1 is not compiled with tile_rows = 256");
  } else if (own_wgmma) {
    if (pipes > 3 || (pipes == 3 && wgmma_rb != 2))
      refuse("pipelines = " + std::to_string(pipes) +
             ": the own kernel's wgmma runs 1 or 2, or 3 of one warpgroup (row_blocks = 2)");
    if (wgmma_rb > 2 || (wgmma_rb == 2 && pipes == 1))
      refuse("row_blocks = " + std::to_string(wgmma_rb) +
             " with pipelines = " + std::to_string(pipes) +
             ": the own kernel's wgmma holds 1 row block a warp (two warpgroups a pipeline) or 2 "
             "(one warpgroup, on 2 or 3 pipelines)");
    if (pipes == 3 && (tt > 64 || (tt == 64 && kt == 2)))
      refuse("pipelines = 3 with stage_k_tiles = " + std::to_string(kt) + " spills at " +
             std::to_string(tt) +
             " tokens (3 pipelines of one warpgroup hold 32 tokens, and 64 with 1 k-tile)");
    if (pipes == 2 && wgmma_rb == 1 && tt >= 64 && kt == 2)
      refuse("pipelines = 2 with row_blocks = 1 and stage_k_tiles = " + std::to_string(kt) +
             " spills (2 pipelines of two warpgroups hold 32 tokens, and 64 and 128 with 1 "
             "k-tile)");
    if (pipes == 2 && wgmma_rb == 2 && tt > 64 && kt == 2)
      refuse("stage_k_tiles = 2 on 2 pipelines leaves no two ring stages a pipeline at " +
             std::to_string(tt) + " tokens (1 there)");
    if (group_in_flight && kt != 2)
      refuse("group_in_flight = 1 with stage_k_tiles = " + std::to_string(kt) +
             ": its two fragment buffers are a stage's two k-tiles (stage_k_tiles = 2)");
    if (group_in_flight && pipes == 2 && wgmma_rb == 1)
      refuse(
          "group_in_flight = 1 on 2 pipelines of two warpgroups spills (96 registers a "
          "thread): 1 pipeline, or row_blocks = 2");
    if (group_in_flight && pipes == 3)
      refuse("group_in_flight = 1 on 3 pipelines: 1 or 2 (not compiled on 3)");
  }
  if (own_sync && group_in_flight)
    refuse("group_in_flight = 1 is the own kernel's wgmma's (mma.sync has no commit groups)");
  if (own && tt <= 16 && kt_opt == 1)
    refuse("stage_k_tiles = 1: the own kernel takes 2 k-tiles a stage at 8 and 16 tokens");
  if (own_sync && rb_opt != 0 && rb_opt != (pipes == 2 ? 1 : 2) &&
      !(rb_opt == 4 && pipes == 4 && tt <= 16))
    throw Error(std::string(who) + ": row_blocks = " + std::to_string(rb_opt) +
                " does not exist with " + std::to_string(pipes) + " pipelines at " +
                std::to_string(tt) +
                " tokens (1 with 2 pipelines, 2 with 3 or 4, 4 with 4 at 8 "
                "and 16 tokens)");
  if (own && pipes >= 1 && pipes <= 4 && !ring_fits(kt, pipes)) {
    int most = 0;  // the most pipelines that fit there
    for (int p = 1; p <= 4; ++p)
      if (ring_fits(kt, p)) most = p;
    throw Error(std::string(who) + ": pipelines = " + std::to_string(pipes) + " leaves " +
                std::to_string(ring_stages(kt, pipes)) +
                " ring stage(s) a pipeline, 2 needed, at " + std::to_string(tt) +
                " tokens, stage_k_tiles = " + std::to_string(kt) +
                (awq ? std::string() : " and K = " + std::to_string(k_bits)) + " (at most " +
                std::to_string(most) + " pipelines fit there)");
  }
  FragmentMmaChoice c;
  c.token_tile = tt;
  c.k_bits = k_bits;
  c.own = own;
  c.wgmma = own_wgmma;
  c.mma = int(mma);
  if (own) {
    c.k_tiles = kt;
    c.pipelines = pipes;
    // The scale after the MMA by default on kbit (one FFMA an accumulator a block where a pair
    // took an HMUL2 and a table load). On AWQ where one scale spans a k-step (G >= 64 x k-tiles
    // a stage: G = 128): one FFMA an accumulator a k-step where the pairs took 4 HMUL2 a word;
    // elsewhere before (a block's FFMAs equal the HMUL2s they replace at 16 tokens, README.md).
    const std::int64_t after_opt = o.get(kFragmentMmaScaleAfter);
    const bool group_step = awq && d.awq_group >= 64 * kt;
    c.scale_after = own_sync && tt <= 16 &&
                    (awq ? after_opt == 2 || (after_opt == 0 && group_step) : after_opt != 1);
    // Four row blocks a warp at 16 tokens on 4 pipelines: half the activation loads and
    // per-k-step work a weight of two (README.md's ladder); at 8 tokens two were faster.
    c.row_blocks = own_wgmma                ? wgmma_rb
                   : rb_opt != 0            ? int(rb_opt)
                   : tt == 16 && pipes == 4 ? 4
                   : pipes == 2             ? 1
                                            : 2;
    c.walk_order = int(o.get(kFragmentMmaWalkOrder));
    c.wait_hint_ns = int(wait_hint);
    c.group_in_flight = group_in_flight;
    // A split tile's store: its fixed owner on wgmma (all but one of a pipeline's 4 or 8 consumer
    // warps walk on: -11% to -14% of the time on Qwen3 dense at 32..128 tokens, -1.5% to -5% on
    // Llama3) and on mma.sync where a walk is a third of a tile or more (3 x tiles >= walks: its
    // partners' pieces are few and early; a sole one stored whole): -0.8% to -2.5% at 8 and 16
    // tokens on the Llama3 gate/up layers and over N at k_dim 8192. Shorter walks on mma.sync keep
    // the last arrival (the down projections and Qwen3 dense, walks of 4 to 28 k-steps over tiles
    // of 16 to 224: +0.6% to +4.7% with the owner). README.md, build W. kbit only (unmeasured on
    // AWQ weights).
    const std::int64_t split_store = o.get(kFragmentMmaSplitStore);
    const bool sync_long_walks = own_sync && !awq && 3 * tiles >= std::int64_t(pipes) * sms_or_132;
    c.split_owner = split_store == 2 || (split_store == 0 && (own_wgmma || sync_long_walks));
    // A walk's last piece through its free ring (whole lines to C) on wgmma: +0.4% to -11% at
    // 32..128 tokens (README.md, build T); on mma.sync -2% to +3%, not compiled there.
    c.staged_store = own_wgmma && o.get(kFragmentMmaStagedStore) != 1;
    // A tile's one other partial stored whole under the fixed owner: no reductions at L2 and no
    // zeroes at the walks' ends (README.md, build U).
    if (o.get(kFragmentMmaPartialSums) == 2 && !c.split_owner)
      refuse(
          "partial_sums = 2 needs the fixed owner (split_store = 2; the default on wgmma and on "
          "mma.sync's long walks): with the last arrival every contributor adds");
    c.stored_partials = c.split_owner && o.get(kFragmentMmaPartialSums) != 1;
    c.tile_rows = tile_rows;
  } else {
    c.split_owner = false;  // the shared mainloop: its last arrival
    c.k_tiles = kt_opt == 2 || (kt_opt == 0 && tt <= 16) ? 2 : 1;
  }
  return c;
}

}  // namespace

FragmentMmaChoice fragment_mma_choose(const GemmDims& d, const VariantOptions& o, int sms) {
  return choose(d, o, sms, false);
}
FragmentMmaChoice awq_fragment_mma_choose(const GemmDims& d, const VariantOptions& o, int sms) {
  return choose(d, o, sms, true);
}

namespace {

// The compiled kernel of a choice (no GPU call: a kernel's address and its shape), from its K's
// translation unit (fragment_kernels.cuh).
ws::Kernel fragment_mma_kernel(const FragmentMmaChoice& c, DType t) {
  return c.k_bits == 2   ? fragment::fragment_mma_kernel_k<2>(c, t)
         : c.k_bits == 3 ? fragment::fragment_mma_kernel_k<3>(c, t)
         : c.k_bits == 4 ? fragment::fragment_mma_kernel_k<4>(c, t)
                         : fragment::fragment_mma_kernel_k<5>(c, t);
}

}  // namespace

FragmentMmaKernelShape fragment_mma_kernel_shape(const FragmentMmaChoice& c, DType t) {
  const ws::Kernel k = fragment_mma_kernel(c, t);
  return {k.fn != nullptr, k.threads, k.stages, k.k_tiles_per_stage,
          k.pipelines,     k.sync,    k.fn,     k.tile_rows};
}

int fragment_mma_visible_sms() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

std::unique_ptr<VariantState> fragment_mma_setup(const GemmDims& d, const VariantOptions& o) {
  const char* who = "fragment_mma";
  const FragmentMmaChoice c = fragment_mma_choose(d, o, fragment_mma_visible_sms());
  const ws::Kernel kernel = fragment_mma_kernel(c, d.dtype);
  ws::require_wgmma_device(who);
  return fragment::plan_choice(c, kernel, d, o, who);
}

void fragment_mma_run(VariantState* state, const GemmDims& d, const GemmArgs& g,
                      cudaStream_t stream) {
  const char* who = "fragment_mma";
  if (g.w.layout.kind != LayoutKind::fragment || g.w.packed == nullptr || g.w.absmax == nullptr)
    throw Error(std::string(who) + ": needs the fragment layout's words and codes, got layout " +
                layout_name(g.w.layout));
  ws::launch_dense(*static_cast<ws::DensePlan*>(state), d, g, g.w.packed, g.w.absmax, 0, stream);
}

}  // namespace kbit::variants
