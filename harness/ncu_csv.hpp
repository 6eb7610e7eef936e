// Nsight Compute's CSV, read on the CPU: the raw page (`ncu -i REP --csv --page raw`: a header
// row of metric names, a row of units, one row per profiled kernel) and the source page of the
// SASS (`--page source --print-source sass`: per instruction, how often it executed), turned into
// the rows of `kbit-harness profile` (docs/harness.md, "Profiling"). No CUDA here: the tests
// read committed fixtures.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kbit {

// The metrics `profile` asks for (docs/harness.md lists what each means). Names ncu does not
// know on the device are dropped before the run (profile.cpp asks `ncu --query-metrics`).
const std::vector<std::string>& profile_metrics();
// The warp stall reasons whose `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`
// profile_metrics() holds ("selected" is an issue, not a stall, and is not among them).
const std::vector<std::string>& stall_reasons();

// One profiled kernel of the raw page: its name and every metric as printed (units apart).
struct NcuKernel {
  std::string name;                          // "Kernel Name" as ncu prints it (demangled)
  std::map<std::string, std::string> value;  // metric (or column) -> field
  std::map<std::string, std::string> unit;   // metric -> unit of the units row
  bool has(const std::string& metric) const;
  // The metric in base units (bytes, nanoseconds, percent, counts): "1,234.5" and a unit of
  // Kbyte, Mbyte, usecond, ... are scaled; a missing or non-numeric field is 0.
  double num(const std::string& metric) const;
};

// The kernels of a raw-page CSV, in launch order. Lines before the header (ncu's "==PROF=="
// lines, the program's output) are skipped; throws kbit::Error when there is no header row
// (one with "ID" and "Kernel Name").
std::vector<NcuKernel> parse_ncu_raw_csv(const std::string& text);

// Helper kernels of the harness and of the peers' runner that may run while a row is profiled:
// excluded by name (a regex on the demangled name), never by position. A baseline row (cuBLAS)
// keeps the cuBLAS kernels, which are its own.
struct HelperPattern {
  std::string regex, what;
};
const std::vector<HelperPattern>& helper_kernel_patterns();
// Empty when `kernel` is the row's own, else what helper it is ("clock probe", ...).
std::string helper_kernel(const std::string& kernel, bool baseline_row);

// `text` as a regex that matches it literally (ncu's --kernel-name regex:...).
std::string regex_escape(const std::string& text);

// The opcode classes of harness/tools/sass_mix.py, in its order, with a short key for columns.
struct OpcodeClass {
  std::string key, label, regex;
};
const std::vector<OpcodeClass>& opcode_classes();
// The class key of an opcode ("HMMA" -> "mma"); "other" when none matches.
std::string opcode_class(const std::string& opcode);
// "@!P0 LDG.E.128 R4, [R2.64]" -> "LDG"
std::string sass_opcode(const std::string& instruction);

// One SASS instruction of the source page.
struct SassLine {
  std::uint64_t address = 0;
  std::string text;
  double executed = 0;  // warp-level instructions executed ("Instructions Executed")
};
struct SassKernel {
  std::string name;  // the "Kernel Name" line above its block (empty where ncu prints none)
  std::vector<SassLine> lines;
};
// The blocks of a source-page CSV, in the order ncu prints them (the raw page's order).
std::vector<SassKernel> parse_ncu_source_csv(const std::string& text);

// Where a kernel's instructions went: executed warp instructions per opcode class over the whole
// kernel, and the hottest loop (the backward branch's [target, branch] range that executed the
// most instructions; the whole kernel where there is no loop): its size in SASS instructions and
// each class's share of what it executed.
struct OpcodeMix {
  std::map<std::string, double> executed;  // class key -> warp instructions executed
  double total = 0;
  int loop_instructions = 0;                 // static size of the hottest loop
  std::map<std::string, double> loop_share;  // class key -> share (0..1) of the loop's executed
  std::vector<std::pair<std::string, double>> loop_opcodes;  // opcode -> executed in the loop
  bool loop_found = false;
};
OpcodeMix opcode_mix(const SassKernel& k);
// "LOP3 24%, HMMA 12%, ..." (the loop's opcodes with their share, largest first, `top` of them)
std::string loop_mix_text(const OpcodeMix& m, int top = 8);

// A counter the report does not hold (quiet NaN; `measured()` tells it from a number).
inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
inline bool measured(double v) {
  return !std::isnan(v);
}

// A number as profile.csv writes it: `digits` significant digits, empty where not measured.
std::string profile_field(double v, int digits = 6);

// The numbers of one kernel of one (problem, row): what profile.csv holds.
struct KernelProfile {
  std::string kernel;
  double time_us = 0;
  double inst_executed = 0;  // smsp__inst_executed.sum (warp instructions)
  double inst_per_weight = 0;
  double issue_active_pct = 0, dram_pct = 0, dram_read_bytes = 0, dram_write_bytes = 0;
  // L2 and shared memory (profile_metrics() names the counters): NaN where a kernel's report has
  // no number for one (a metric the device's ncu dropped), which profile.csv leaves empty.
  double l2_pct = kNotMeasured, l2_bytes = kNotMeasured;
  double smem_pct = kNotMeasured, smem_wavefronts = kNotMeasured;
  double tensor_hmma_pct = 0, tensor_gmma_pct = 0, hmma_inst = 0, gmma_inst = 0;
  double occupancy_pct = 0;
  int registers = 0, block = 0;
  double smem_static = 0, smem_dynamic = 0, grid = 0;
  std::map<std::string, double> stalls;  // reason -> warps stalled per issued instruction
  OpcodeMix mix;
  bool has_mix = false;
  double tensor_pct() const {
    return tensor_hmma_pct > tensor_gmma_pct ? tensor_hmma_pct : tensor_gmma_pct;
  }
  // The three largest stall reasons with their share of all stalls (0..1), largest first.
  std::vector<std::pair<std::string, double>> top_stalls(int n = 3) const;
};

// Thread-instructions a weight: warp instructions x 32 / (N x K_dim).
double per_weight(double warp_instructions, std::int64_t N, std::int64_t K_dim);

KernelProfile kernel_profile(const NcuKernel& k, std::int64_t N, std::int64_t K_dim);
// The row's total over its kernels: times, instructions, bytes, wavefronts and per-class counts
// add up; percentages and stall ratios are averaged weighted by time; registers, shared memory and
// block are the largest kernel's. An L2 or shared-memory number that one kernel lacks is NaN in
// the total too (a total without it would understate it). kernel = "(sum)".
KernelProfile sum_profile(const std::vector<KernelProfile>& ks, std::int64_t N, std::int64_t K_dim);

// The metrics of `asked` that ncu's log names on an error line (a metric it does not know on this
// device, which fails the whole command), in the order asked.
std::vector<std::string> rejected_metrics(const std::string& log,
                                          const std::vector<std::string>& asked);

// The line that says ncu cannot read the counters here (ERR_NVGPUCTRPERM, a profiler library that
// does not load, ...), or empty.
std::string ncu_refusal(const std::string& log);

}  // namespace kbit
