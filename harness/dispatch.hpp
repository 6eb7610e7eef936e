// The dispatch table: per problem, the fastest checked variant of ours that the CURRENT runs under
// results/ measured on one GPU (`kbit-harness dispatch build` writes one table per GPU name to
// results/dispatch/, `dispatch show` prints one), and the lookup by which the `auto`,
// `grouped_auto` and `awq_auto` registry rows pick the variant they run (docs/harness.md,
// "Dispatch").
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/registry.hpp"
#include "variants/variant_api.hpp"

namespace kbit {

// One problem point of a table: the fastest candidate row over every CURRENT run of the GPU.
struct DispatchEntry {
  // The weights: "kbit" or "awq_g<G>" (weight_format_names(): the CSV's codebook column read by
  // format_of_codebook). The key `format`; a table without it holds kbit entries.
  std::string format = "kbit";
  int k_bits = 0;
  std::string dtype;     // fp16 | bf16
  bool grouped = false;  // the problem class: dense (C = A W^T) or grouped (MoE)
  std::string shape;     // the layer's name in the run
  std::int64_t N = 0, K_dim = 0;
  int experts = 0;  // 0 for dense problems
  std::int64_t M = 0;
  std::string variant, config;  // the CSV's variant and config columns
  double median_us = 0;
  std::string run;        // <experiment>/<run folder>
  std::int64_t line = 0;  // the row's line in that run's results.csv (the header is line 1)
};

struct DispatchTable {
  std::string gpu;                     // run.json's device.name of every run below
  std::vector<std::string> runs;       // <experiment>/<run folder>: every CURRENT run of the GPU
  std::vector<DispatchEntry> entries;  // sorted by (format: kbit first, k_bits, dtype, class,
                                       // shape, M)
};

// How a problem without an entry is answered, in words (written into every table).
extern const char* const kDispatchFallbackRule;

// Reads every <results_root>/<experiment>/CURRENT, the run it names (results.csv, run.json) and
// returns one table per GPU name, sorted by name. Candidates: check = pass, l2 = cold, a median,
// pdl = 0 (plain launches: what the auto rows are timed as), a variant still in the registry that
// an auto row of the problem's format may run (kbit problems: auto_may_pick, kbit weights in any
// layout the harness builds; AWQ problems: awq_auto_may_pick, the awq or awq tiled layouts) and
// timed at its default options (the auto rows run a row at its defaults). Throws kbit::Error
// naming the file (and line) that is missing or does not parse, or the root when no CURRENT run
// is there.
std::vector<DispatchTable> build_dispatch_tables(const std::string& results_root);

// "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3.toml": every non-alphanumeric becomes '_'.
std::string dispatch_file_name(const std::string& gpu);
// Writes the table as TOML (one inline table per entry, one line each).
void write_dispatch_table(const DispatchTable& t, const std::string& path);
// Reads a table (dispatch_table.cpp) as strictly as a config: a regular file of at most
// kMaxTableBytes, every key known, K in 2..5, dtype fp16 or bf16, a gemm / gemv / grouped registry
// row, a finite median above 0, N, K_dim, M and experts in their config ranges, no point twice;
// `format` (absent: kbit) one of weight_format_names(), an AWQ entry dense, K = 4, N % 8 = 0 and
// K_dim a multiple of its group. Throws kbit::Error naming the file, the line, the entry and the
// key.
DispatchTable read_dispatch_table(const std::string& path);
// The same on a table's text (`path` for messages).
DispatchTable parse_dispatch_table(const std::string& text, const std::string& path);
// One line per entry, with a header (what `dispatch show` prints).
void print_dispatch_table(const DispatchTable& t, const std::string& path, std::ostream& out);

struct DispatchProblem {
  int awq_group = 0;  // 0: kbit weights; else AWQ int4 of this group (awq_auto)
  int k_bits = 4;
  DType dtype = DType::f16;
  bool grouped = false;
  std::int64_t N = 0, K_dim = 0;
  int experts = 0;
  std::int64_t M = 0;  // rows of A (grouped: all experts' rows, tokens x top_k)
};
DispatchProblem dispatch_problem(const GemmDims& d);

struct DispatchChoice {
  std::string variant;
  std::string reason;  // which rule chose it: "exact: ...", "nearest M: ...", "fixed rule: ..."
};

// The registry rows `auto`, `grouped_auto` and `awq_auto`.
bool is_auto_row(std::string_view name);

// True for the rows an auto row may run: family gemm, gemv or grouped, not an auto row, and kbit
// weights in a layout the harness builds from them (flat, tiled, fragment, dequantized). The
// harness builds the chosen row's layout for the auto row (row_layout), so any such layout will do.
bool auto_may_pick(const VariantRow& row);
// True for the rows awq_auto may run: family gemm or gemv, not an auto row, reading AWQ weights
// (layout awq or awq tiled).
bool awq_auto_may_pick(const VariantRow& row);

// The lookup. `table` may be null (no table for this GPU: `no_table` says why, for the reason).
// Among the entries of the problem's format (kbit or awq_g<G>), rules in order, each skipping an
// entry whose variant is not one the format's auto row may run (auto_may_pick for kbit,
// awq_auto_may_pick for AWQ) or whose Support does not cover the problem on a device of compute
// capability device_sm / 10 (0: not checked): the exact (shape, M) entry; the same shape's nearest
// measured M at or above M, then those below (largest first); the other shapes of the same class,
// K and dtype by |log(N*K_dim) difference| (then the experts'), each by the M rule; then the
// fixed rule, each name falling to the next that covers the problem: kbit dense M <= 4
// scalar_gemv, M >= 5 warp_specialized on compute capability 9.0 else fetch_dequant; AWQ M <= 4
// awq_gemv, then on compute capability 9.0 awq_fragment_mma (M <= 128) and awq_gemm. A shape is
// its (N, K_dim, experts). Grouped problems skip the table: grouped_mma from
// variants::kGroupedMmaFromRowsPerExpert rows per expert (M / experts) on, else
// grouped_scalar_gemv. Throws kbit::Error naming the problem and the compute capability when no
// row of ours covers the problem.
DispatchChoice choose_variant(const DispatchTable* table, const DispatchProblem& p, int device_sm,
                              const std::string& no_table = "no table");

// The tables of one folder, each read once, keyed by GPU name. A table whose recorded GPU name
// differs from the one asked for is refused; a missing one answers by the fixed rule and says so
// once, in one line on `notes`.
class DispatchTables {
 public:
  DispatchTables(std::string dir, std::ostream& notes) : dir_(std::move(dir)), notes_(notes) {}
  DispatchChoice choose(const DispatchProblem& p, const std::string& gpu, int device_sm);
  // The GPU's table, read once (read_dispatch_table's checks; a table recorded for another GPU
  // is refused); nullptr when the folder has none. `run` and `validate` call it for the auto
  // rows before any GPU work, so that a bad table is refused (exit 2) before anything runs.
  const DispatchTable* load(const std::string& gpu);
  const std::string& dir() const { return dir_; }

 private:
  const DispatchTable* load_locked(const std::string& gpu);
  std::string dir_;
  std::ostream& notes_;
  std::mutex mu_;
  std::map<std::string, std::optional<DispatchTable>> tables_;  // nullopt: no file
  bool noted_missing_ = false;
};

// The process's tables (<source>/results/dispatch, notes on stderr): what the auto rows read.
DispatchTables& process_dispatch_tables();

// The weight layout `row` reads on problem `d`, which the harness builds before the row's setup:
// VariantRow::layout, except for an auto row on a problem it supports: the layout of the row its
// lookup chooses there (tables.choose for `gpu` on compute capability device_sm / 10, the lookup
// its setup makes), so that `auto` can run fragment_mma as well as the rows of tiled 64x128, and
// `awq_auto` awq_gemv (layout awq) as well as the rows of the AWQ tiled repack.
WeightLayout row_layout(const VariantRow& row, const GemmDims& d, DispatchTables& tables,
                        const std::string& gpu, int device_sm);
// The same for this process's device and tables: what every path that builds weights (run,
// validate, profile-target, the GPU tests) calls. Touches the device only for an auto row.
WeightLayout row_layout(const VariantRow& row, const GemmDims& d);
// What `list` and run.json print as a row's layout: layout_name, or for an auto row
// "chosen row's" (it differs per problem).
std::string row_layout_name(const VariantRow& row);

// The auto rows' state: the chosen row and its state. describe() is
// "<auto row> -> <variant> (<reason>): [<its options>] <its describe()>"; extra_additions()
// forwards, so that the check's bound is the chosen row's, and check_after_run.
class AutoState : public VariantState {
 public:
  AutoState(std::string auto_name, const VariantRow& chosen, DispatchChoice choice,
            VariantOptions options, std::unique_ptr<VariantState> inner)
      : auto_name_(std::move(auto_name)),
        chosen_(chosen),
        choice_(std::move(choice)),
        options_(std::move(options)),
        inner_(std::move(inner)) {}
  std::string describe() const override;
  std::int64_t extra_additions() const override { return inner_->extra_additions(); }
  void check_after_run(cudaStream_t stream) override { inner_->check_after_run(stream); }
  const VariantRow& chosen() const { return chosen_; }
  VariantState* inner() const { return inner_.get(); }

 private:
  std::string auto_name_;
  const VariantRow& chosen_;
  DispatchChoice choice_;
  VariantOptions options_;
  std::unique_ptr<VariantState> inner_;
};

// The registry rows `auto` (kbit dense), `grouped_auto` (kbit grouped) and `awq_auto` (AWQ
// dense): setup looks the problem up for the current device (its name and compute capability) and
// sets the chosen row up at its default options with the split mode it was given; run forwards.
// `auto` and `grouped_auto` refuse AWQ weights, `awq_auto` kbit ones.
std::unique_ptr<VariantState> auto_setup(const GemmDims& dims, const VariantOptions& opts);
std::unique_ptr<VariantState> grouped_auto_setup(const GemmDims& dims, const VariantOptions& opts);
std::unique_ptr<VariantState> awq_auto_setup(const GemmDims& dims, const VariantOptions& opts);
void auto_run(VariantState* state, const GemmDims& dims, const GemmArgs& args, cudaStream_t stream);

}  // namespace kbit
