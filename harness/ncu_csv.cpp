#include "harness/ncu_csv.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string_view>

#include "harness/results.hpp"
#include "reference/error.hpp"

namespace kbit {

namespace {

const char* const kStallPrefix = "smsp__average_warps_issue_stalled_";
const char* const kStallSuffix = "_per_issue_active.ratio";

std::string stall_metric(const std::string& reason) {
  return kStallPrefix + reason + kStallSuffix;
}

// "1,234.5" -> 1234.5; false when the field is not a number ("n/a", "-", "").
bool parse_number(const std::string& field, double& out) {
  std::string s;
  for (char c : trimmed(field))
    if (c != ',') s += c;
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  out = v;
  return true;
}

// The factor to the base unit (byte, nanosecond, count) of a unit of the units row.
double unit_scale(const std::string& unit) {
  if (unit == "usecond") return 1e3;
  if (unit == "msecond") return 1e6;
  if (unit == "second") return 1e9;
  if (unit.size() > 1 && std::islower(static_cast<unsigned char>(unit[1]))) {
    switch (unit[0]) {  // Kbyte, Mbyte, Ginst, Kcycle, ...
      case 'K':
        return 1e3;
      case 'M':
        return 1e6;
      case 'G':
        return 1e9;
      case 'T':
        return 1e12;
      default:
        break;
    }
  }
  return 1;
}

}  // namespace

const std::vector<std::string>& stall_reasons() {
  // Hopper's list (gmma and imc_miss exist there only; a name the device lacks is dropped).
  static const std::vector<std::string> r = {"long_scoreboard",
                                             "short_scoreboard",
                                             "wait",
                                             "barrier",
                                             "membar",
                                             "math_pipe_throttle",
                                             "mio_throttle",
                                             "lg_throttle",
                                             "tex_throttle",
                                             "not_selected",
                                             "no_instruction",
                                             "sleeping",
                                             "branch_resolving",
                                             "dispatch_stall",
                                             "drain",
                                             "misc",
                                             "imc_miss",
                                             "gmma"};
  return r;
}

const std::vector<std::string>& profile_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> v = {
        "gpu__time_duration.sum",
        "smsp__inst_executed.sum",
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        // L2: ncu's own "L2 Cache Throughput" (its SpeedOfLight and memory tables), the largest of
        // its parts' % of peak (tag sectors, lts__t_sectors, among them; data sectors, the fabric
        // between the L2 partitions), in place of lts__t_sectors' share alone; and the bytes.
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__t_bytes.sum",
        // Shared memory: LSU wavefronts (LDS/STS/LDSM; not TMA fills or wgmma operand reads, which
        // no documented counter isolates: l1tex__throughput mixes in global traffic), % and count
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        // mma.sync (HMMA) and wgmma (GMMA): pipe cycles active, and instructions issued to each
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor_op_hmma.sum",
        "sm__inst_executed_pipe_tensor_op_gmma.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__registers_per_thread",
        "launch__shared_mem_per_block_static",
        "launch__shared_mem_per_block_dynamic",
        "launch__block_size",
        "launch__grid_size",
    };
    for (const auto& r : stall_reasons()) v.push_back(stall_metric(r));
    return v;
  }();
  return m;
}

bool NcuKernel::has(const std::string& metric) const {
  return value.count(metric) > 0;
}

double NcuKernel::num(const std::string& metric) const {
  const auto it = value.find(metric);
  double v = 0;
  if (it == value.end() || !parse_number(it->second, v)) return 0;
  const auto u = unit.find(metric);
  return u == unit.end() ? v : v * unit_scale(u->second);
}

std::vector<NcuKernel> parse_ncu_raw_csv(const std::string& text) {
  const auto recs = csv_records(text);
  std::size_t h = 0;
  for (; h < recs.size(); ++h) {
    const auto& r = recs[h];
    if (std::find(r.begin(), r.end(), "ID") != r.end() &&
        std::find(r.begin(), r.end(), "Kernel Name") != r.end())
      break;
  }
  if (h == recs.size())
    throw Error("no header row (with \"ID\" and \"Kernel Name\") in ncu's raw CSV");
  const std::vector<std::string>& head = recs[h];
  const std::size_t id_col = std::find(head.begin(), head.end(), "ID") - head.begin();
  const std::size_t name_col = std::find(head.begin(), head.end(), "Kernel Name") - head.begin();
  std::vector<NcuKernel> out;
  std::vector<std::string> units;
  for (std::size_t i = h + 1; i < recs.size(); ++i) {
    const auto& r = recs[i];
    if (r.size() != head.size()) continue;  // a line of the program's own output
    if (trimmed(r[id_col]).empty()) {       // the units row: no ID
      units = r;
      continue;
    }
    NcuKernel k;
    k.name = r[name_col];
    for (std::size_t c = 0; c < head.size(); ++c) {
      k.value[head[c]] = r[c];
      if (c < units.size() && !units[c].empty()) k.unit[head[c]] = units[c];
    }
    out.push_back(std::move(k));
  }
  return out;
}

const std::vector<HelperPattern>& helper_kernel_patterns() {
  static const std::vector<HelperPattern> p = {
      {R"(\bfill_random_kernel\b)", "data init (device_utils.cu)"},
      {R"(\bclock_probe_kernel\b)", "clock probe (device_utils.cu)"},
      {R"(\bfind_first_bad_kernel\b)", "output check (format_kernels.cu)"},
      {R"(\b(quantize|encode_e4m4)_kernel\b)", "kbit weight creation (format_kernels.cu)"},
      {R"(\bawq_(fused|scales|values|pack)_kernel\b)", "AWQ weight creation (awq_kernels.cu)"},
      {R"(l2_?flush|flush_?l2|\brotate_kernel\b)", "L2 flush / rotation"},
  };
  return p;
}

namespace {
// cuBLAS's kernels (the baseline): a helper in any row but a baseline one.
const char* const kCublasRegex =
    R"(^(void )?(nvjet_|sm\d+_xmma_|ampere_|volta_|turing_|cublas|gemvx?\b|gemv2[NT]_|gemmk1_kernel|splitKreduce_kernel|dot_kernel|reduce_1Block_kernel))";
}  // namespace

std::string helper_kernel(const std::string& kernel, bool baseline_row) {
  for (const auto& h : helper_kernel_patterns())
    if (std::regex_search(kernel, std::regex(h.regex))) return h.what;
  if (!baseline_row && std::regex_search(kernel, std::regex(kCublasRegex)))
    return "cuBLAS (the baseline)";
  return "";
}

std::string regex_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view(".^$|?*+()[]{}\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

const std::vector<OpcodeClass>& opcode_classes() {
  // harness/tools/sass_mix.py CATEGORIES, in its order (the first match wins).
  static const std::vector<OpcodeClass> c = {
      {"mma", "mma (HMMA, HGMMA)", "^HMMA|^HGMMA"},
      {"shfl", "shuffle (SHFL)", "^SHFL"},
      {"fp32", "fp32 fma/mul/add", "^FFMA|^FMUL|^FADD"},
      {"shift", "shift / funnel (SHF)", "^SHF|^SHL|^SHR"},
      {"logic", "logic (LOP3)", "^LOP3|^LOP"},
      {"int", "int add/mad (IADD3, IMAD, LEA)", "^IADD|^IMAD|^LEA|^IABS|^IMNMX"},
      {"smem", "shared loads/stores (LDS, LDSM, STS)", "^LDS|^LDSM|^STS"},
      {"gload", "global loads (LDG) / cp.async (LDGSTS)", "^LDG|^LDGSTS"},
      {"gstore", "global stores / atomics (STG, RED, ATOM)", "^STG|^RED|^ATOM"},
      {"cvt", "conversions / moves / select / half math",
       "^F2F|^F2I|^I2F|^MOV|^SEL|^PRMT|^HADD2|^HMUL2|^HFMA2"},
      {"sync", "barriers / sync (BAR, DEPBAR, WARPSYNC)",
       "^BAR|^DEPBAR|^WARPSYNC|^BSSY|^BSYNC|^SYNCS"},
      {"branch", "branches / compare (BRA, ISETP, FSETP)", "^BRA|^ISETP|^FSETP|^EXIT|^CALL|^RET"},
      {"other", "other", ""},
  };
  return c;
}

std::string opcode_class(const std::string& opcode) {
  static const std::vector<std::pair<std::string, std::regex>> rx = [] {
    std::vector<std::pair<std::string, std::regex>> v;
    for (const auto& c : opcode_classes())
      if (!c.regex.empty()) v.emplace_back(c.key, std::regex(c.regex));
    return v;
  }();
  for (const auto& [key, r] : rx)
    if (std::regex_search(opcode, r)) return key;
  return "other";
}

std::string sass_opcode(const std::string& instruction) {
  static const std::regex pred(R"(^\s*@!?U?P\w+\s+)");
  const std::string t = std::regex_replace(trimmed(instruction), pred, "");
  std::string op;
  for (char c : t) {
    if (c == ' ' || c == '.' || c == '\t' || c == ';') break;
    op += c;
  }
  return op;
}

std::vector<SassKernel> parse_ncu_source_csv(const std::string& text) {
  std::vector<SassKernel> out;
  std::string pending_name;
  int addr_col = -1, src_col = -1, exec_col = -1;
  for (const auto& r : csv_records(text)) {
    if (r.size() >= 2 && trimmed(r[0]) == "Kernel Name") {
      pending_name = r[1];
      addr_col = -1;
      continue;
    }
    const auto a = std::find(r.begin(), r.end(), "Address");
    const auto s = std::find(r.begin(), r.end(), "Source");
    if (a != r.end() && s != r.end()) {
      addr_col = int(a - r.begin());
      src_col = int(s - r.begin());
      const auto e = std::find(r.begin(), r.end(), "Instructions Executed");
      exec_col = e == r.end() ? -1 : int(e - r.begin());
      out.push_back({pending_name, {}});
      pending_name.clear();
      continue;
    }
    if (addr_col < 0 || int(r.size()) <= std::max({addr_col, src_col, exec_col})) continue;
    SassLine l;
    const std::string at = trimmed(r[std::size_t(addr_col)]);
    l.address = std::strtoull(at.c_str(), nullptr, at.rfind("0x", 0) == 0 ? 16 : 10);
    l.text = trimmed(r[std::size_t(src_col)]);
    if (exec_col >= 0) parse_number(r[std::size_t(exec_col)], l.executed);
    if (!l.text.empty()) out.back().lines.push_back(l);
  }
  return out;
}

OpcodeMix opcode_mix(const SassKernel& k) {
  OpcodeMix m;
  std::vector<std::string> ops;
  for (const auto& l : k.lines) {
    ops.push_back(sass_opcode(l.text));
    m.executed[opcode_class(ops.back())] += l.executed;
    m.total += l.executed;
  }
  if (k.lines.empty()) return m;
  // Backward branches: [target, branch] ranges. A target is an address of the kernel, or an
  // offset from its first instruction.
  static const std::regex bra(R"(\b(BRA|JMP)\S*\s+(?:!?U?P\d\s*,\s*)?(0x[0-9a-fA-F]+))");
  const std::uint64_t lo_addr = k.lines.front().address, hi_addr = k.lines.back().address;
  std::size_t best_lo = 0, best_hi = k.lines.size() - 1;
  double best_sum = -1;
  std::vector<std::tuple<double, std::size_t, std::size_t>> loops;
  for (std::size_t i = 0; i < k.lines.size(); ++i) {
    std::smatch mt;
    if (!std::regex_search(k.lines[i].text, mt, bra)) continue;
    std::uint64_t target = std::strtoull(mt[2].str().c_str(), nullptr, 16);
    if (target < lo_addr || target > hi_addr) target += lo_addr;
    if (target >= k.lines[i].address || target < lo_addr) continue;
    std::size_t j = i;
    while (j > 0 && k.lines[j - 1].address >= target) --j;
    double sum = 0;
    for (std::size_t x = j; x <= i; ++x) sum += k.lines[x].executed;
    loops.emplace_back(sum, j, i);
  }
  double max_sum = 0;
  for (const auto& l : loops) max_sum = std::max(max_sum, std::get<0>(l));
  // The smallest loop that executed at least half of what the busiest one did: the inner loop
  // that does the work, not the outer loop around it.
  for (const auto& [sum, j, i] : loops) {
    if (max_sum <= 0 || sum < 0.5 * max_sum) continue;
    if (best_sum < 0 || i - j < best_hi - best_lo) best_sum = sum, best_lo = j, best_hi = i;
  }
  m.loop_found = best_sum >= 0;
  double loop_total = 0;
  std::map<std::string, double> by_op;
  for (std::size_t x = best_lo; x <= best_hi; ++x) {
    m.loop_share[opcode_class(ops[x])] += k.lines[x].executed;
    by_op[ops[x]] += k.lines[x].executed;
    loop_total += k.lines[x].executed;
  }
  m.loop_instructions = int(best_hi - best_lo + 1);
  for (auto& [key, v] : m.loop_share) v = loop_total > 0 ? v / loop_total : 0;
  m.loop_opcodes.assign(by_op.begin(), by_op.end());
  std::stable_sort(m.loop_opcodes.begin(), m.loop_opcodes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (auto& [op, v] : m.loop_opcodes) v = loop_total > 0 ? v / loop_total : 0;
  return m;
}

std::string loop_mix_text(const OpcodeMix& m, int top) {
  std::ostringstream o;
  int n = 0;
  for (const auto& [op, share] : m.loop_opcodes) {
    if (n == top || share <= 0) break;
    o << (n++ ? " " : "") << op << " " << int(std::lround(100 * share)) << "%";
  }
  return o.str();
}

double per_weight(double warp_instructions, std::int64_t N, std::int64_t K_dim) {
  return N > 0 && K_dim > 0 ? warp_instructions * 32.0 / (double(N) * double(K_dim)) : 0;
}

std::string profile_field(double v, int digits) {
  if (!measured(v)) return "";
  std::ostringstream o;
  o.precision(digits);
  o << v;
  return o.str();
}

namespace {
// The metric in base units, or kNotMeasured where the report has no number for it.
double measured_num(const NcuKernel& k, const std::string& metric) {
  double v = 0;
  const auto it = k.value.find(metric);
  return it != k.value.end() && parse_number(it->second, v) ? k.num(metric) : kNotMeasured;
}
}  // namespace

KernelProfile kernel_profile(const NcuKernel& k, std::int64_t N, std::int64_t K_dim) {
  KernelProfile p;
  p.kernel = k.name;
  p.time_us = k.num("gpu__time_duration.sum") / 1e3;
  p.inst_executed = k.num("smsp__inst_executed.sum");
  p.inst_per_weight = per_weight(p.inst_executed, N, K_dim);
  p.issue_active_pct = k.num("smsp__issue_active.avg.pct_of_peak_sustained_active");
  p.dram_pct = k.num("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  p.dram_read_bytes = k.num("dram__bytes_read.sum");
  p.dram_write_bytes = k.num("dram__bytes_write.sum");
  p.l2_pct = measured_num(k, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
  p.l2_bytes = measured_num(k, "lts__t_bytes.sum");
  p.smem_pct = measured_num(
      k, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed");
  p.smem_wavefronts = measured_num(k, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum");
  p.tensor_hmma_pct =
      k.num("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  p.tensor_gmma_pct =
      k.num("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active");
  p.hmma_inst = k.num("sm__inst_executed_pipe_tensor_op_hmma.sum");
  p.gmma_inst = k.num("sm__inst_executed_pipe_tensor_op_gmma.sum");
  p.occupancy_pct = k.num("sm__warps_active.avg.pct_of_peak_sustained_active");
  p.registers = int(k.num("launch__registers_per_thread"));
  p.smem_static = k.num("launch__shared_mem_per_block_static");
  p.smem_dynamic = k.num("launch__shared_mem_per_block_dynamic");
  p.block = int(k.num("launch__block_size"));
  p.grid = k.num("launch__grid_size");
  for (const auto& r : stall_reasons())
    if (k.has(stall_metric(r))) p.stalls[r] = k.num(stall_metric(r));
  return p;
}

std::vector<std::pair<std::string, double>> KernelProfile::top_stalls(int n) const {
  double total = 0;
  for (const auto& [r, v] : stalls) total += v;
  std::vector<std::pair<std::string, double>> v(stalls.begin(), stalls.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (int(v.size()) > n) v.resize(std::size_t(n));
  for (auto& [r, x] : v) x = total > 0 ? x / total : 0;
  while (!v.empty() && v.back().second <= 0) v.pop_back();
  return v;
}

KernelProfile sum_profile(const std::vector<KernelProfile>& ks, std::int64_t N,
                          std::int64_t K_dim) {
  KernelProfile s;
  s.kernel = "(sum)";
  if (!ks.empty()) s.l2_pct = s.l2_bytes = s.smem_pct = s.smem_wavefronts = 0;  // NaN adds on
  double t = 0;
  const KernelProfile* longest = nullptr;
  for (const auto& k : ks) {
    s.time_us += k.time_us;
    s.inst_executed += k.inst_executed;
    s.dram_read_bytes += k.dram_read_bytes;
    s.dram_write_bytes += k.dram_write_bytes;
    s.l2_bytes += k.l2_bytes;
    s.smem_wavefronts += k.smem_wavefronts;
    s.hmma_inst += k.hmma_inst;
    s.gmma_inst += k.gmma_inst;
    t += k.time_us;
    if (!longest || k.time_us > longest->time_us) longest = &k;
  }
  const double tw = t > 0 ? t : 1;
  for (const auto& k : ks) {
    const double w = t > 0 ? k.time_us / tw : 1.0 / double(ks.size());
    s.issue_active_pct += w * k.issue_active_pct;
    s.dram_pct += w * k.dram_pct;
    s.l2_pct += w * k.l2_pct;
    s.smem_pct += w * k.smem_pct;
    s.tensor_hmma_pct += w * k.tensor_hmma_pct;
    s.tensor_gmma_pct += w * k.tensor_gmma_pct;
    s.occupancy_pct += w * k.occupancy_pct;
    for (const auto& [r, v] : k.stalls) s.stalls[r] += w * v;
    if (k.has_mix) {
      s.has_mix = true;
      for (const auto& [c, v] : k.mix.executed) s.mix.executed[c] += v;
      s.mix.total += k.mix.total;
    }
  }
  if (longest) {
    s.registers = longest->registers;
    s.smem_static = longest->smem_static;
    s.smem_dynamic = longest->smem_dynamic;
    s.block = longest->block;
    s.grid = longest->grid;
    if (longest->has_mix) {  // the hot loop is the longest kernel's
      s.mix.loop_instructions = longest->mix.loop_instructions;
      s.mix.loop_share = longest->mix.loop_share;
      s.mix.loop_opcodes = longest->mix.loop_opcodes;
      s.mix.loop_found = longest->mix.loop_found;
    }
  }
  s.inst_per_weight = per_weight(s.inst_executed, N, K_dim);
  return s;
}

std::vector<std::string> rejected_metrics(const std::string& log,
                                          const std::vector<std::string>& asked) {
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("ERROR") == std::string::npos && line.find("rror:") == std::string::npos)
      continue;
    for (const auto& m : asked) {
      // The whole name, or its base (before the first '.'), as a word of the line.
      const std::string base = m.substr(0, m.find('.'));
      for (const std::string& n : {m, base}) {
        const auto at = line.find(n);
        const bool word = at != std::string::npos &&
                          (at + n.size() == line.size() ||
                           !(std::isalnum(static_cast<unsigned char>(line[at + n.size()])) ||
                             line[at + n.size()] == '_'));
        if (word && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
      }
    }
  }
  std::vector<std::string> ordered;
  for (const auto& m : asked)
    if (std::find(out.begin(), out.end(), m) != out.end()) ordered.push_back(m);
  return ordered;
}

std::string ncu_refusal(const std::string& log) {
  static const char* const needles[] = {"ERR_NVGPUCTRPERM", "LibraryNotLoaded",
                                        "Failed to initialize the profiler",
                                        "Failed to load the profiler", "ProfilerNotInitialized"};
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    for (const char* n : needles)
      if (line.find(n) != std::string::npos) return trimmed(line);
  return "";
}

}  // namespace kbit
