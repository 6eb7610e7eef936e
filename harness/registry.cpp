#include "harness/registry.hpp"

#include <algorithm>
#include <utility>

#include <cuda_runtime_api.h>

#include "harness/dispatch.hpp"
#include "harness/match_rows.hpp"
#include "harness/weight_format.hpp"
#include "reference/error.hpp"
#include "variants/01_inline_dequant/inline_dequant.hpp"
#include "variants/02_fetch_dequant/fetch_dequant.hpp"
#include "variants/03_warp_specialized/warp_specialized.hpp"
#include "variants/04_scalar_gemv/scalar_gemv.hpp"
#include "variants/05_grouped_mma/grouped_mma.hpp"
#include "variants/06_awq/awq.hpp"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/baselines/baselines.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/probes/probes.hpp"

namespace kbit {

const char* family_name(Family f) {
  switch (f) {
    case Family::gemm:
      return "gemm";
    case Family::gemv:
      return "gemv";
    case Family::grouped:
      return "grouped";
    case Family::baseline:
      return "baseline";
    case Family::probe:
      return "probe";
    case Family::diag:
      return "diag";
  }
  return "?";
}

namespace {

Support baseline_support() {
  Support s;
  s.grouped = true;  // the per-expert loop
  return s;
}

// cuBLAS on the dequantized layout: any weight format, since the harness dequantizes it.
Support cublas_support() {
  Support s = baseline_support();
  s.awq_groups = awq_group_sizes();
  return s;
}

// Rows that read AWQ weights (layouts awq or awq tiled): AWQ problems of `groups` only, dense,
// N a multiple of 8 (AWQ packs eight columns to a word); K_dim % G is the problem's own rule.
Support awq_support(std::vector<int> groups) {
  Support s;
  s.kbit = false;
  s.k_bits = {4};
  s.awq_groups = std::move(groups);
  s.n_multiple = 8;
  return s;
}

// Variant 06: fp16 only (AWQ's scales are fp16), every group; the GEMV up to 4 rows.
Support awq_gemv_support() {
  Support s = awq_support(awq_group_sizes());
  s.dtypes = {DType::f16};
  s.m_max = 4;
  // Its blocks split K; forced off, one block a column range (bit-stable); forced on, two or more
  // where K_dim holds two ranges' worth of chunks (512 k), else one.
  s.split_k = true;
  return s;
}
Support awq_gemm_support() {
  Support s = awq_support(awq_group_sizes());
  s.dtypes = {DType::f16};
  s.split_k = true;  // variant 03's stream-K plan, forced on and off by validate
  s.pdl = true;
  s.min_sm = 90;
  return s;
}

// Variant 07's own kernel on the AWQ tiled repack: awq_gemm's problems to 128 rows (its token
// tiles, 8..128).
Support awq_fragment_mma_support() {
  Support s = awq_gemm_support();
  s.m_max = 128;
  return s;
}

Support grouped_only_support() {
  Support s;
  s.dense = false;
  s.grouped = true;
  return s;
}

Support gemv_support(bool grouped) {
  Support s;
  s.m_max = grouped ? s.m_max : 4;  // grouped: any rows per expert, in groups of <= 4
  s.dense = !grouped;
  s.grouped = grouped;
  s.split_k = true;
  s.pdl = true;
  s.min_sm = 90;  // the weight ring is fed by cp.async.bulk on mbarriers
  return s;
}

Support probe_support(int min_sm, bool pdl, std::vector<int> k_bits = {2, 3, 4, 5}) {
  Support s;  // dense only
  s.min_sm = min_sm;
  s.pdl = pdl;
  s.k_bits = std::move(k_bits);
  return s;
}

Support gemm_support(int min_sm = 0) {
  Support s;  // any M >= 1, any N >= 1, K_dim % 32
  s.split_k = true;
  s.min_sm = min_sm;
  return s;
}

// sm_90a kernels that launch with programmatic dependent launch when asked.
Support hopper_gemm_support() {
  Support s = gemm_support(90);
  s.pdl = true;
  return s;
}

// Variant 07: variant 03's support (the fragment-order layout at K = 2..5).
Support fragment_mma_support() {
  Support s = hopper_gemm_support();
  s.k_bits = {2, 3, 4, 5};
  return s;
}

// Variant 05: MoE problems on the sm_90a mainloop of variant 03, any rows per expert; whole
// tiles only (no split-K); launched behind its own list kernel with PDL.
Support grouped_mma_support() {
  Support s = grouped_only_support();
  s.pdl = true;
  s.min_sm = 90;
  return s;
}

// The dispatch rows: dense or grouped problems, any M. split_k: the split mode is handed to the
// chosen row (every row they may pick splits K), so that validate and the GPU tests force it on
// and off as for that row, and compare bits only where nothing splits. Launched plainly (the
// table's timings are of plain launches). min_sm is that of the last row their fixed rule falls
// to (fetch_dequant 8.0; grouped_scalar_gemv 9.0), which covers every problem of the class.
Support auto_support(bool grouped) {
  Support s;
  s.dense = !grouped;
  s.grouped = grouped;
  s.split_k = true;
  s.min_sm = grouped ? 90 : 80;
  return s;
}

// awq_auto: awq_gemm's problems (AWQ of every group, fp16, dense, any M, compute capability
// 9.0), the split mode handed to the chosen row (awq_gemv, awq_gemm and awq_fragment_mma honour
// it), launched plainly as the table's rows were timed.
Support awq_auto_support() {
  Support s = awq_gemm_support();
  s.pdl = false;
  return s;
}

constexpr WeightLayout kTiled64x128{LayoutKind::tiled, {64, 128}};

template <std::size_t N>
std::vector<OptionSpec> options_of(const OptionSpec (&specs)[N]) {
  return {specs, specs + N};
}

}  // namespace

const std::vector<VariantRow>& registry() {
  static const std::vector<VariantRow> rows = {
      {"cublas_fp16",
       "cuBLAS GEMM (fp32 accumulation) on the dequantized fp16/bf16 weight (kbit or AWQ); "
       "per-expert loop for MoE",
       Family::baseline,
       cublas_support(),
       {LayoutKind::dequantized, {}},
       variants::cublas_fp16_setup,
       variants::cublas_fp16_run,
       {}},
      {"dequant_cublas",
       "GPU dequantize into a scratch fp16/bf16 weight, then cuBLAS (time includes both)",
       Family::baseline,
       baseline_support(),
       {LayoutKind::flat, {}},
       variants::dequant_cublas_setup,
       variants::dequant_cublas_run,
       {}},
      {"cublas_grouped",
       "cublasGemmGroupedBatchedEx over the active experts (one group each) on the dequantized "
       "weights (MoE only)",
       Family::baseline,
       grouped_only_support(),
       {LayoutKind::dequantized, {}},
       variants::cublas_grouped_setup,
       variants::cublas_grouped_run,
       {}},
      {"read_ldg",
       "probe: reads the tiled weights + A with 16-byte loads (8 in flight per thread), writes C "
       "= 0; the shape's streaming ceiling, no GEMM",
       Family::probe,
       probe_support(0, false),
       kTiled64x128,
       variants::read_ldg_setup,
       variants::read_probe_run,
       {}},
      {"read_bulk",
       "probe: streams the tiled weights + A by cp.async.bulk (16 KB chunks, 4-stage ring per "
       "block by default) into shared memory, writes C = 0; no GEMM",
       Family::probe, probe_support(90, true), kTiled64x128, variants::read_bulk_setup,
       variants::read_probe_run, options_of(variants::kReadBulkOptions)},
      {"read_slices",
       "probe: streams the tiled weights in column-slice units (default 32 columns x 16 k-tiles), "
       "one TMA tensor copy of planes and one of codes each (2-stage ring, 2 blocks/SM), and each "
       "stripe's A; writes C = 0; no GEMM",
       Family::probe, probe_support(90, true, {4}), kTiled64x128, variants::read_slices_setup,
       variants::read_slices_run, options_of(variants::kReadSlicesOptions)},
      {"inline_dequant",
       "Phase-1 fused MMA (m16n8k16): planes + E4M4 by cp.async, inline bit extraction + shfl "
       "codebook per "
       "fragment, padded B stride, persistent grid, two-tier split-K",
       Family::gemm,
       gemm_support(),
       kTiled64x128,
       variants::inline_dequant_setup,
       variants::inline_dequant_run,
       {}},
      {"inline_dequant_nopad",
       "inline_dequant with the seeds' unpadded B column stride (2K words: 2-way bank conflicts at "
       "K=4)",
       Family::gemm,
       gemm_support(),
       kTiled64x128,
       variants::inline_dequant_nopad_setup,
       variants::inline_dequant_nopad_run,
       {}},
      {"fetch_dequant",
       "variant 02: B dequantized during the fetch (pair table, one thread a block of 32) into a "
       "double-buffered ldmatrix-ready fp16/bf16 tile, pure ldmatrix + mma.sync loop, cp.async "
       "ring up to 8 k-tiles deep, stripes over the SMs with split-K",
       Family::gemm,
       gemm_support(80),
       kTiled64x128,
       variants::fetch_dequant_setup,
       variants::fetch_dequant_run,
       {}},
      {"warp_specialized",
       "variant 03 (sm_90a): TMA producer warpgroup + 2 consumer warpgroups; weights decoded "
       "from the planes straight into wgmma's register A operand (C^T = W A^T, activations as "
       "the swizzled shared-memory B operand, token tile 16..256); whole tiles then stream-K",
       Family::gemm,
       hopper_gemm_support(),
       kTiled64x128,
       variants::warp_specialized_setup,
       variants::warp_specialized_run,
       {variants::kWarpSpecializedTokenTile, variants::kWarpSpecializedMma}},
      {"scalar_gemv",
       "GEMV, M=1..4 (sm_90): producer warp streams (n-tile, 4 k-tile) units by cp.async.bulk "
       "into a 2-stage mbarrier ring; index pairs (K=2: quads, K=5: 10-bit pairs) -> 64 KB table "
       "(PRMT+LDS) -> "
       "mma.m16n8k16 with one block per MMA column (scale after the MMA); balanced stripes with "
       "split-K; M=3,4: a window warp stages A",
       Family::gemv,
       gemv_support(false),
       kTiled64x128,
       variants::scalar_gemv_setup,
       variants::scalar_gemv_run,
       {variants::kScalarGemvClusterEnd, variants::kScalarGemvTaggedEnd}},
      {"grouped_scalar_gemv",
       "scalar_gemv over host-computed (expert, <=4 rows, n-tile, k-range) stripes: MoE "
       "decode in one launch",
       Family::grouped,
       gemv_support(true),
       kTiled64x128,
       variants::grouped_scalar_gemv_setup,
       variants::grouped_scalar_gemv_run,
       {}},
      {"grouped_mma",
       "variant 05 (sm_90a): variant 03's warp-specialized RS wgmma mainloop over every active "
       "expert's (m-tile, n-tile) tiles in one launch; the m-tile list built on the device from "
       "the expert offsets (no host sync), persistent round-robin",
       Family::grouped,
       grouped_mma_support(),
       kTiled64x128,
       variants::grouped_mma_setup,
       variants::grouped_mma_run,
       {variants::kGroupedMmaTokenTile, variants::kGroupedMmaChecked}},
      // Rows reading AWQ int4 weights (docs/awq_format.md): layout {LayoutKind::awq, {}} (the
      // checkpoint tensors) or {LayoutKind::awq_tiled, {}} (kbit::awq_tile).
      {"awq_gemv",
       "AWQ int4 GEMV on the AutoAWQ tensors as they are, M = 1..4: the weights as "
       "mma.m16n8k16's A fragment (or fp32 FMAs), split-K over the blocks",
       Family::gemv,
       awq_gemv_support(),
       {LayoutKind::awq, {}},
       variants::awq_gemv_setup,
       variants::awq_gemv_run,
       {variants::kAwqGemvTensorCores}},
      {"awq_gemm",
       "variant 03's warp-specialized wgmma mainloop on the AWQ tiled repack: (q - z) * s in fp16, "
       "no table; any M",
       Family::gemm,
       awq_gemm_support(),
       {LayoutKind::awq_tiled, {}},
       variants::awq_gemm_setup,
       variants::awq_gemm_run,
       {variants::kAwqGemmTokenTile}},
      {"awq_fragment_mma",
       "variant 07's own kernel (mma.sync to 16 tokens, wgmma at 32..128) on the AWQ tiled "
       "repack: (q - z) * s in fp16 by the exponent trick, no table; M = 1..128",
       Family::gemm,
       awq_fragment_mma_support(),
       {LayoutKind::awq_tiled, {}},
       variants::awq_fragment_mma_setup,
       variants::awq_fragment_mma_run,
       {variants::kAwqFragmentMmaTokenTile, variants::kAwqFragmentMmaStageKTiles,
        variants::kAwqFragmentMmaPipelines, variants::kAwqFragmentMmaRowBlocks,
        variants::kFragmentMmaWalkOrder, variants::kAwqFragmentMmaScaleAfter,
        variants::kFragmentMmaSplitStore, variants::kFragmentMmaStagedStore,
        variants::kFragmentMmaPartialSums}},
      {"fragment_mma",
       "variant 07 (sm_90a): the fragment-order layout (K = 2..5: a thread's k-tile one load of "
       "ready pair codes, no plane merge; K = 2 through a quad table, K = 5 a fifth word of "
       "plane-4 bits and a 128 KB table) on an own kernel of "
       "pipelines over one table: mma.sync to 16 tokens (ldmatrix of the swizzled activation "
       "boxes), wgmma at 32..128; the shared mainloop's wgmma above",
       Family::gemm,
       fragment_mma_support(),
       {LayoutKind::fragment, {}},
       variants::fragment_mma_setup,
       variants::fragment_mma_run,
       {variants::kFragmentMmaTokenTile, variants::kFragmentMmaMma,
        variants::kFragmentMmaStageKTiles, variants::kFragmentMmaKernel,
        variants::kFragmentMmaScaleAfter, variants::kFragmentMmaPipelines,
        variants::kFragmentMmaWalkOrder, variants::kFragmentMmaRowBlocks,
        variants::kFragmentMmaWaitHint, variants::kFragmentMmaGroupInFlight,
        variants::kFragmentMmaSplitStore, variants::kFragmentMmaTileRows,
        variants::kFragmentMmaStagedStore, variants::kFragmentMmaPartialSums}},

      // Each problem runs the row the committed results measured fastest on this GPU
      // (results/dispatch/, harness/dispatch.hpp). Before their setup the harness builds the
      // layout of the row their lookup chooses for the problem (row_layout): tiled 64x128
      // (variants 01 to 05) or fragment (fragment_mma); `list` and run.json say "chosen row's".
      // The layout named here is the fixed rule's rows'.
      {"auto",
       "dispatch: the fastest checked variant of ours for the problem on this GPU "
       "(results/dispatch/<gpu>.toml: exact, nearest M, nearest shape, else a fixed rule)",
       Family::gemm,
       auto_support(false),
       kTiled64x128,
       auto_setup,
       auto_run,
       {}},
      {"grouped_auto",
       "dispatch for MoE problems: grouped_mma from the measured rows-per-expert crossover "
       "on, else grouped_scalar_gemv",
       Family::grouped,
       auto_support(true),
       kTiled64x128,
       grouped_auto_setup,
       auto_run,
       {}},
      // The AWQ problems' dispatch: the layout of its chosen row (awq for awq_gemv, awq tiled for
      // awq_gemm and awq_fragment_mma; row_layout); the one named here is awq tiled.
      {"awq_auto",
       "dispatch for AWQ problems: the fastest checked AWQ row of ours for the problem on this "
       "GPU (results/dispatch/<gpu>.toml: entries of its format), else awq_gemv at M <= 4, "
       "awq_fragment_mma to 128, awq_gemm above",
       Family::gemm,
       awq_auto_support(),
       {LayoutKind::awq_tiled, {}},
       awq_auto_setup,
       auto_run,
       {}},
  };
  return rows;
}

const VariantRow& find_variant(std::string_view name) {
  for (const auto& r : registry())
    if (r.name == name) return r;
  std::string known;
  for (const auto& r : registry()) known += (known.empty() ? "" : ", ") + std::string(r.name);
  throw Error("variant '" + std::string(name) + "' is not in the registry (known: " + known + ")");
}

std::vector<const VariantRow*> match_variants(const std::vector<std::string>& patterns) {
  // A name that is no row: find_variant throws with the list of known names; a glob that matches
  // none says so.
  return match_rows(registry(), patterns, [](const std::string& p) {
    if (p.find_first_of("*?[") == std::string::npos) find_variant(p);
    std::string known;
    for (const auto& r : registry()) known += (known.empty() ? "" : ", ") + std::string(r.name);
    throw Error("'" + p + "' matches no registry row (the rows: " + known + ")");
  });
}

std::string unsupported_reason(const VariantRow& row, const GemmDims& d) {
  return unsupported_reason(row, d, current_device_sm());
}

std::string unsupported_reason(const VariantRow& row, const GemmDims& d, int device_sm) {
  const Support& s = row.support;
  if (device_sm > 0 && device_sm < s.min_sm)
    return "needs compute capability " + std::to_string(s.min_sm / 10) + "." +
           std::to_string(s.min_sm % 10) + " or newer; this device is " +
           std::to_string(device_sm / 10) + "." + std::to_string(device_sm % 10);
  if (d.grouped() && !s.grouped) return "grouped (MoE) problems are not supported";
  if (!d.grouped() && !s.dense) return "dense problems are not supported (grouped only)";
  if (d.awq_group > 0) {
    if (s.awq_groups.empty())
      return "weights are " + weight_format_name(d.awq_group) + "; this row reads kbit weights";
    if (std::find(s.awq_groups.begin(), s.awq_groups.end(), d.awq_group) == s.awq_groups.end()) {
      std::string groups;
      for (int g : s.awq_groups) groups += (groups.empty() ? "" : ", ") + std::to_string(g);
      return "AWQ group " + std::to_string(d.awq_group) + " is not one of this row's groups (" +
             groups + ")";
    }
    if (d.k_bits != 4)
      return "AWQ weights are 4-bit; the problem says K = " + std::to_string(d.k_bits);
  } else if (!s.kbit) {
    return "this row reads AWQ weights (" + describe_formats(s) + "); the weights are kbit";
  } else if (std::find(s.k_bits.begin(), s.k_bits.end(), d.k_bits) == s.k_bits.end()) {
    return "K = " + std::to_string(d.k_bits) + " is not supported (" + describe_k_bits(s) + ")";
  }
  if (std::find(s.dtypes.begin(), s.dtypes.end(), d.dtype) == s.dtypes.end())
    return std::string("dtype ") + dtype_name(d.dtype) + " is not supported (" +
           describe_dtypes(s) + ")";
  if (!d.grouped() && (d.M < s.m_min || d.M > s.m_max))
    return "M = " + std::to_string(d.M) + " is outside " + describe_m_range(s);
  if (d.N % s.n_multiple != 0)
    return "N = " + std::to_string(d.N) + " is not a multiple of " + std::to_string(s.n_multiple);
  if (d.K_dim % s.k_dim_multiple != 0)
    return "K_dim = " + std::to_string(d.K_dim) + " is not a multiple of " +
           std::to_string(s.k_dim_multiple);
  return "";
}

std::string describe_k_bits(const Support& s) {
  if (!s.kbit) return "4";  // AWQ weights are int4
  std::string r;
  for (int k : s.k_bits) r += (r.empty() ? "" : ",") + std::to_string(k);
  return r;
}

std::string describe_formats(const Support& s) {
  std::string r = s.kbit ? "kbit" : "";
  for (int g : s.awq_groups) r += (r.empty() ? "" : ",") + weight_format_name(g);
  return r.empty() ? "none" : r;
}

std::string describe_dtypes(const Support& s) {
  std::string r;
  for (DType t : s.dtypes) r += (r.empty() ? "" : ",") + std::string(dtype_name(t));
  return r;
}

std::string describe_m_range(const Support& s) {
  const bool open = s.m_max == std::numeric_limits<std::int64_t>::max();
  return std::to_string(s.m_min) + ".." + (open ? std::string("any") : std::to_string(s.m_max));
}

std::string describe_shape_rules(const Support& s) {
  std::string r = "K_dim%" + std::to_string(s.k_dim_multiple);
  if (s.n_multiple > 1) r += " N%" + std::to_string(s.n_multiple);
  r += s.dense && s.grouped ? " dense+moe" : s.grouped ? " moe" : " dense";
  if (s.min_sm > 0)
    r += " sm>=" + std::to_string(s.min_sm / 10) + "." + std::to_string(s.min_sm % 10);
  if (s.pdl) r += " pdl";  // can overlap the previous launch (GemmArgs::pdl)
  return r;
}

}  // namespace kbit
