// What a variant sees: the problem's dimensions, its weights in the layout it asked for, the
// activations and the output buffer. Shared by the .cu variants and the host registry
// (harness/registry.cpp); plain C++ with no device code, Eigen or toml++.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/dtype.hpp"
#include "reference/tiled.hpp"
#include "variants/format/format_kernels.hpp"

namespace kbit {

// Where a variant reads its weights from. The harness builds each layout once per problem
// (and once per L2-rotation copy) and hands every variant the one its registry row names.
enum class LayoutKind {
  flat,         // packed[block*K + b], E4M4 absmax[block], block = n*(K_dim/32) + k/32
  tiled,        // reference/tiled.hpp with the row's tile_k / tile_n
  dequantized,  // W[N, K_dim] in the problem's dtype (what cuBLAS multiplies)
  awq,          // the AutoAWQ checkpoint tensors as they are (docs/awq_format.md)
  awq_tiled,    // the tiled repack of the AWQ tensors for the wgmma kernel (kbit::awq_tile)
  fragment,     // the tiled 64x128 layout at K = 2..5 in fragment order (reference/fragment.hpp)
};
const char* layout_kind_name(LayoutKind k);

struct WeightLayout {
  LayoutKind kind = LayoutKind::flat;
  TileConfig tiles{};  // used when kind == tiled
  bool operator==(const WeightLayout& o) const {
    return kind == o.kind && (kind != LayoutKind::tiled || tiles == o.tiles);
  }
};
// "flat", "tiled 64x128", "dequantized", "awq", "awq tiled", "fragment"
std::string layout_name(const WeightLayout& l);

// Dimensions of one problem. Dense: C[M, N] = A[M, K_dim] * W^T. Grouped (MoE): experts
// 0..E-1 each own rows expert_offsets[e] .. expert_offsets[e+1] of A and C (rows sorted by
// expert, zero rows allowed) and one weight W_e[N, K_dim]; M is the total row count.
struct GemmDims {
  std::int64_t M = 0, N = 0, K_dim = 0;
  int k_bits = 4;
  // 0: kbit weights; 32, 64, 128: AWQ int4 weights of that group (docs/awq_format.md), k_bits 4
  int awq_group = 0;
  DType dtype = DType::f16;
  int num_experts = 0;                       // 0 for a dense problem
  std::vector<std::int64_t> expert_offsets;  // host copy, E+1 entries (grouped only)
  bool grouped() const { return num_experts > 0; }
};

// One copy of the weights in one layout. For grouped problems expert e starts at
// e * expert_words (packed), e * expert_bytes (absmax) or e * expert_elems (dequantized).
// AWQ weights are dense only (one expert).
struct WeightView {
  WeightLayout layout;
  const std::uint32_t* packed = nullptr;
  const std::uint8_t* absmax = nullptr;
  const void* dequantized = nullptr;
  TiledGeometry geo{};  // valid for tiled layouts (one expert's geometry)
  std::int64_t expert_words = 0, expert_bytes = 0, expert_elems = 0;
  // kind awq: qweight [K_dim][N/8], qzeros [K_dim/G][N/8], scales [K_dim/G][N] (fp16 bits)
  const std::int32_t* awq_qweight = nullptr;
  const std::int32_t* awq_qzeros = nullptr;
  const std::uint16_t* awq_scales = nullptr;
  // kind awq_tiled: AwqTiled::words [k_tiles][n_tiles][1024], AwqTiled::meta (reference/awq.hpp)
  const std::uint32_t* awq_tiles = nullptr;
  const std::uint32_t* awq_meta = nullptr;
  int awq_group = 0;  // G of the awq layouts, 0 otherwise
};

struct GemmArgs {
  const void* A = nullptr;  // [M, K_dim], dtype
  void* C = nullptr;        // [M, N], dtype; owned by the caller
  WeightView w;
  gpu::CodebookArg codebook{};
  const std::int64_t* expert_offsets = nullptr;  // device copy (grouped only)
  // Launch with programmatic dependent launch: the kernel may start while the stream's previous
  // kernel still runs and waits (griddepcontrol.wait) before touching A, C or its workspace.
  // Honoured by rows whose Support::pdl is set; the others launch as usual.
  bool pdl = false;
};

// Knobs the harness may force (validate runs split-K both ways).
enum class SplitMode { automatic, force_on, force_off };

// One option a registry row offers (an integer; a boolean is 0..1). The variant declares its
// options next to its entry points and the registry row lists them; an experiment sets them in
// `[options.ROW]`, validate with `--option NAME=VALUE`. The harness checks the range before any
// GPU work and records every value in the CSV's `config` column and run.json. The rules a range
// cannot say are declared here too, and the harness checks them where the value is given (a
// config's file and line, --option); a variant's setup may check them again.
struct OptionSpec {
  std::string_view name;
  std::int64_t default_value = 0, min = 0, max = 0;
  bool boolean = false;
  std::string_view why;          // one line: what the option changes
  std::int64_t multiple_of = 1;  // every value is a multiple of this
  bool power_of_two = false;     // every nonzero value is a power of two
  std::string_view needs;        // a nonzero value needs this other option of the row nonzero

  // {name, default, min, max, boolean, why[, multiple_of[, power_of_two[, needs]]]}
  constexpr OptionSpec(std::string_view name_, std::int64_t default_, std::int64_t min_,
                       std::int64_t max_, bool boolean_, std::string_view why_,
                       std::int64_t multiple_of_ = 1, bool power_of_two_ = false,
                       std::string_view needs_ = {})
      : name(name_),
        default_value(default_),
        min(min_),
        max(max_),
        boolean(boolean_),
        why(why_),
        multiple_of(multiple_of_),
        power_of_two(power_of_two_),
        needs(needs_) {}
};

struct VariantOptions {
  SplitMode split_k = SplitMode::automatic;
  // The row's options as the harness resolved them (harness/options.hpp); a setup called
  // without them (a test) gets each option's default.
  std::vector<std::pair<std::string, std::int64_t>> values;
  std::int64_t get(const OptionSpec& spec) const;
  bool flag(const OptionSpec& spec) const { return get(spec) != 0; }
  // "name=value name=value" (empty without options), for the CSV and logs.
  std::string describe() const;
};

// A variant's per-problem state: workspace, chosen config. Made by the row's setup function
// (which may allocate and synchronize); used by its run function, which allocates nothing
// and never synchronizes the host, so that runs can be captured into a CUDA graph.
class VariantState {
 public:
  virtual ~VariantState() = default;
  // One line on the chosen configuration (tile, split, grid), for logs and run.json.
  virtual std::string describe() const { return ""; }
  // fp32 roundings one output sees beyond K_dim (split-K partial sums, per-block scaling).
  virtual std::int64_t extra_additions() const { return 0; }
  // What the last run recorded on the device for the host (grouped_mma's `checked` offsets):
  // synchronizes `stream`, reads it and throws kbit::Error naming the malformed input. The
  // harness calls it after a run, outside any timed region or graph capture, before the run's
  // buffers change or are freed (it may read them to name the input); a no-op for the rows that
  // record nothing.
  virtual void check_after_run(cudaStream_t stream) { (void)stream; }
};

// The checks every tiled-layout variant makes at run time: the weights are in the tiled layout
// with these tiles and the codebook has the problem's K. Throws kbit::Error naming `who`, what it
// got and what it needs.
void require_tiled_args(const GemmArgs& g, const GemmDims& d, TileConfig tiles, const char* who);

// The checks every dense fp16/bf16 GEMM variant of the tiled layout makes in its setup: a dense
// problem, dtype fp16 or bf16, M and N at least 1, K_dim a positive multiple of 32, M * N below
// 2^31 (32-bit output indices) and K_dim below 2^30. Throws kbit::Error naming `who`, the value
// and the limit.
void require_dense_gemm_dims(const GemmDims& d, const char* who);
// The same for a grouped (MoE) variant: a grouped problem, M (all experts' rows) at least 0.
void require_grouped_gemm_dims(const GemmDims& d, const char* who);
// The checks every row on AWQ weights makes in setup (docs/awq_format.md): an AWQ problem
// (dims.awq_group 32, 64 or 128), a dense one, fp16, N a multiple of 8, K_dim of the group.
void require_awq_dims(const GemmDims& d, const char* who);

using SetupFn = std::unique_ptr<VariantState> (*)(const GemmDims& dims, const VariantOptions& opts);
using RunFn = void (*)(VariantState* state, const GemmDims& dims, const GemmArgs& args,
                       cudaStream_t stream);

}  // namespace kbit
