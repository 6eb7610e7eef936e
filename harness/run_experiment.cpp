// kbit-harness run EXPERIMENT.toml: check and time every (shape, M, weight format (K bits, or
// AWQ of one group), dtype, variant).
#include <sys/stat.h>
#include <unistd.h>

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/config_weights.hpp"
#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/execute.hpp"
#include "harness/peers.hpp"
#include "harness/problem.hpp"
#include "harness/progress.hpp"
#include "harness/results.hpp"
#include "harness/shard.hpp"
#include "harness/timing.hpp"
#include "harness/weight_format.hpp"
#include "reference/codebook.hpp"
#include "reference/gemm_ref.hpp"
#include "reference/random.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {
namespace {

void make_dirs(const std::string& path) {
  std::string cur;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
        throw Error("cannot create directory '" + cur + "'");
    }
    if (i < path.size()) cur += path[i];
  }
}

std::uint64_t seed_of(std::uint64_t base, const std::string& what, std::int64_t a = 0,
                      std::int64_t b = 0) {
  std::uint64_t h = splitmix64(base);
  for (char c : what) h = splitmix64(h ^ std::uint64_t(static_cast<unsigned char>(c)));
  return splitmix64(h ^ splitmix64(std::uint64_t(a) * 1315423911u ^ std::uint64_t(b)));
}

// One layer to run: a dense shape, or an MoE layer at one token count.
struct Layer {
  std::string name;
  std::int64_t N = 0, K_dim = 0;
  int experts = 1, top_k = 0;
  bool moe = false;
  const FileWeights* file = nullptr;  // a dense shape's weights from a checkpoint, if any
};

struct Context {
  Context(const ExperimentConfig& c, const RunOptions& o, std::vector<const VariantRow*> r,
          const VariantRow* b)
      : cfg(c), opts(o), rows(std::move(r)), baseline(b), dev(query_device()) {}
  const ExperimentConfig& cfg;
  const RunOptions& opts;
  std::vector<const VariantRow*> rows;  // baseline first
  const VariantRow* baseline = nullptr;
  DeviceInfo dev;
  Ceilings ceil;
  Stream stream;
  std::int64_t budget = 0;
  std::unique_ptr<CsvWriter> csv;
  Progress* progress = nullptr;
  std::map<const VariantRow*, VariantOptions> options;  // each row's, resolved from the config
  std::vector<PeerProblem> peer_problems;               // what the peers run after our rows
  // The config's problems in run order, and those of this process by their place there
  // (--shard); mine empty: all.
  std::vector<PlannedProblem> plan;
  std::vector<bool> mine;
  std::size_t next_problem = 0;  // the place of the next problem the run loops reach
  std::string device_label;      // the rows' device column: "<index on the host> <UUID>"
  // Whether the next problem is this process's (and moves past it). The run loops must reach
  // the problems in plan_problems' order, or the shards would not cover the config once: checked.
  bool take(const std::string& layer, const WeightsOf& w, DType t, std::int64_t m) {
    const std::size_t i = next_problem++;
    const PlannedProblem* p = i < plan.size() ? &plan[i] : nullptr;
    if (!p || p->layer != layer || p->weights.k_bits != w.k_bits ||
        p->weights.awq_group != w.awq_group || p->dtype != t || p->m != m)
      throw std::logic_error("run: problem " + std::to_string(i) + " (" + layer + " " + w.label() +
                             " M/tokens " + std::to_string(m) +
                             ") is not plan_problems' problem there");
    return mine.empty() || mine.at(i);
  }
  // Whether one of the next n problems is this process's (moves past none).
  bool any_of_next(std::size_t n) const {
    if (mine.empty()) return n > 0;
    for (std::size_t i = next_problem; i < next_problem + n; ++i)
      if (mine.at(i)) return true;
    return false;
  }
  int failures = 0, errors = 0, passed = 0, skipped_unsupported = 0;
  bool aborted = false;
  std::string abort_reason;
  std::vector<ResultRow> summary;
};

std::vector<float> codebook_for(const ExperimentConfig& cfg, int k) {
  if (cfg.codebook == "custom") {
    validate_codebook(cfg.codebook_values, k);
    return cfg.codebook_values;
  }
  return make_codebook(cfg.codebook, k);
}

ResultRow base_row(const Context& c, const Layer& L, const GemmDims& d, const VariantRow& row) {
  ResultRow r;
  r.experiment = c.cfg.name;
  r.shape = L.name;
  r.M = d.M;
  r.N = d.N;
  r.K_dim = d.K_dim;
  r.k_bits = d.k_bits;
  r.dtype = dtype_name(d.dtype);
  r.variant = std::string(row.name);
  r.family = family_name(row.family);
  r.l2 = c.cfg.timing.cold ? "cold" : "hot";
  r.device = c.device_label;
  // The weights' format: the codebook's name for kbit problems, "awq_g128" etc. for AWQ ones.
  r.codebook = d.awq_group > 0 ? weight_format_name(d.awq_group) : c.cfg.codebook;
  r.weights_source = weights_source(L.file, d.awq_group);
  r.experts = d.grouped() ? d.num_experts : 0;
  r.active_experts = d.grouped() ? active_experts(d.expert_offsets) : 0;
  const ProblemCost cost = problem_cost(d);
  r.floor_us = std::max(cost.bytes / (c.ceil.copy_gb_per_s * 1e9),
                        cost.flops / (c.ceil.fp16_tflops * 1e12)) *
               1e6;
  return r;
}

// Runs every supported row on one problem (weights already on the device).
void run_problem(Context& c, const Layer& L, const GemmDims& d, const HostWeights& hw,
                 const HostActivations& A, const DeviceProblem& prob) {
  std::optional<RowReference> ref;
  if (c.cfg.check.enabled) ref = make_reference(hw, A, d, sample_rows(d.M, c.cfg.check.max_rows));
  double baseline_us = 0;
  if (!c.cfg.peers.empty()) {
    PeerProblem pp;
    pp.shape = L.name;
    pp.M = d.M, pp.N = d.N, pp.K_dim = d.K_dim, pp.k_bits = d.k_bits, pp.dtype = d.dtype;
    pp.format = weight_format_name(d.awq_group);
    pp.experts = d.grouped() ? d.num_experts : 0;
    pp.expert_offsets = d.expert_offsets;
    pp.floor_us = base_row(c, L, d, *c.baseline).floor_us;
    c.peer_problems.push_back(pp);
  }
  for (const VariantRow* row : c.rows) {
    if (c.aborted) return;
    if (!unsupported_reason(*row, d).empty()) {
      ++c.skipped_unsupported;
      continue;
    }
    c.progress->start_item(std::string(row->name) + " " + L.name + " M=" + std::to_string(d.M) +
                           " " + weights_label(d) + " " + dtype_name(d.dtype));
    ResultRow r = base_row(c, L, d, *row);
    const bool pdl = c.cfg.timing.pdl && row->support.pdl;
    r.pdl = pdl ? 1 : 0;
    const VariantOptions& opts = c.options.at(row);
    const WeightLayout layout = row_layout(*row, d);  // once: the launches below reuse it
    Outcome o = execute_and_check(*row, opts, d, prob, ref ? &*ref : nullptr, c.stream.get());
    // A failure after the check: its message, the device's error cleared and whether it stuck.
    auto fail = [&](std::string what) {
      o.error = std::move(what);
      cudaGetLastError();
      o.sticky = cudaDeviceSynchronize() != cudaSuccess;
    };
    if (o.error.empty()) {
      // The row's options first (every value, defaults included), then its own description.
      const std::string set = opts.describe();
      r.config = set.empty() ? o.state->describe() : "[" + set + "] " + o.state->describe();
      try {
        const TimingResult t = time_launches(
            [&](int copy, cudaStream_t s) {
              GemmArgs args = prob.args(layout, copy);
              args.pdl = pdl;
              row->run(o.state.get(), d, args, s);
            },
            prob.weights->copies(), c.cfg.timing, c.stream.get());
        r.median_us = t.median_us;
        r.p10_us = t.p10_us;
        r.p90_us = t.p90_us;
        r.samples = t.samples;
        r.copies = t.copies;
        r.launches_per_sample = t.launches_per_sample;
        r.sm_mhz_before = t.sm_mhz_before;
        r.sm_mhz_after = t.sm_mhz_after;
        r.rel_noise = t.rel_noise;
      } catch (const std::exception& e) {
        fail(std::string("timing: ") + e.what());
      }
      // What the timed launches recorded for the host (checked offsets), read after them.
      if (o.error.empty()) {
        try {
          o.state->check_after_run(c.stream.get());
        } catch (const std::exception& e) {
          fail(e.what());
        }
      }
    }
    if (!o.error.empty()) {
      r.check = "fail";
      r.error = o.error;
      ++c.errors;
      std::cerr << "\n"
                << row->name << " on " << L.name << " M=" << d.M << " " << weights_label(d) << ": "
                << o.error << "\n";
    } else {
      r.check = o.checked              ? (o.check.pass ? "pass" : "fail")
                : !computes_gemm(*row) ? family_name(row->family)  // probe | diag
                                       : "skipped";
      r.max_err_over_bound = o.checked ? o.check.max_err_over_bound : 0;
      if (o.checked && !o.check.pass) {
        ++c.failures;
        const auto& b = o.check.first_bad.empty() ? BadElement{} : o.check.first_bad.front();
        r.error = std::to_string(o.check.violations) + " of " + std::to_string(o.check.checked) +
                  " elements outside the bound; first C[" + std::to_string(b.row) + "," +
                  std::to_string(b.col) + "] = " + std::to_string(b.got) + " vs " +
                  std::to_string(b.ref);
      } else if (o.checked) {
        ++c.passed;
      }
      const ProblemCost cost = problem_cost(d);
      r.gb_per_s = cost.bytes / (r.median_us * 1e-6) / 1e9;
      r.tflops = cost.flops / (r.median_us * 1e-6) / 1e12;
      r.frac_of_floor = r.floor_us / r.median_us;
      if (row == c.baseline) {
        baseline_us = r.median_us;
        if (!c.cfg.peers.empty()) c.peer_problems.back().baseline_us = r.median_us;
      }
      r.speedup_vs_baseline = baseline_us > 0 ? baseline_us / r.median_us : 0;
    }
    c.csv->append(r);
    c.summary.push_back(r);
    c.progress->finish_item();
    if (o.sticky) {
      c.aborted = true;
      c.abort_reason = std::string(row->name) + " broke the CUDA context: " + o.error;
    }
  }
}

// The layouts the rows that run problem d read there (an auto row's: its chosen row's), each once.
std::vector<WeightLayout> layouts_of(const Context& c, const GemmDims& d) {
  std::vector<WeightLayout> out;
  for (const VariantRow* r : c.rows) {
    if (!unsupported_reason(*r, d).empty()) continue;
    const WeightLayout l = row_layout(*r, d);
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

// Refuses, before any row runs (and before the ceilings are measured), a config one of whose
// layers cannot fit in the device's free memory at its largest problem: a run that would fail
// halfway loses nothing this way.
void check_memory_up_front(const Context& c, std::int64_t free_bytes) {
  auto check = [&](const std::string& name, std::int64_t N, std::int64_t K_dim, int experts,
                   int top_k, const std::vector<std::int64_t>& ms) {
    for (const WeightsOf& w : weights_of(c.cfg, top_k > 0)) {
      const int k = w.k_bits;
      for (DType t : c.cfg.dtypes) {
        std::vector<WeightLayout> layouts;
        bool scratch = false;
        std::int64_t max_m = 0;
        for (std::int64_t m : ms) {
          GemmDims d;
          d.M = top_k > 0 ? m * top_k : m;
          d.N = N, d.K_dim = K_dim, d.k_bits = k, d.awq_group = w.awq_group, d.dtype = t;
          d.num_experts = top_k > 0 ? experts : 0;
          const std::vector<WeightLayout> ls = layouts_of(c, d);
          if (ls.empty()) continue;
          max_m = std::max(max_m, d.M);
          for (const auto& l : ls)
            if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
          // A baseline that reads compressed weights dequantizes them into a scratch weight of
          // its own (dequant_cublas).
          for (const VariantRow* r : c.rows)
            scratch =
                scratch || (unsupported_reason(*r, d).empty() && r->family == Family::baseline &&
                            r->layout.kind != LayoutKind::dequantized);
        }
        if (layouts.empty()) continue;
        std::string what = name + " " + w.label() + " M=" + std::to_string(max_m);
        if (top_k > 0)
          what += " (" + std::to_string(max_m / top_k) + " tokens x top_k " +
                  std::to_string(top_k) + ")";
        check_device_memory(
            what,
            estimate_device_memory(N, K_dim, k, t, experts, layouts, max_m, scratch, w.awq_group),
            free_bytes);
      }
    }
  };
  for (const auto& s : c.cfg.shapes) check(s.name, s.n, s.k_dim, 1, 0, c.cfg.m);
  for (const auto& m : c.cfg.moe) check(m.name, m.n, m.k_dim, m.experts, m.top_k, c.cfg.tokens);
}

// Builds the device weights for a (layer, weight format, dtype) and runs every M (or token
// count).
void run_layer(Context& c, const Layer& L, DType dtype, const HostWeights& hw,
               const std::vector<GemmDims>& problems) {
  std::vector<WeightLayout> layouts;
  std::int64_t touched = 0, per_copy = 0;
  for (const GemmDims& d : problems) {
    for (const auto& l : layouts_of(c, d))
      if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
  }
  if (layouts.empty()) return;
  int min_active = L.experts;
  for (const GemmDims& d : problems)
    if (d.grouped()) min_active = std::min(min_active, active_experts(d.expert_offsets));
  for (const auto& l : layouts) {
    const std::int64_t b = DeviceWeights::expert_bytes(hw, dtype, l);
    per_copy += b * L.experts;
    const std::int64_t t = b * std::max(1, min_active);
    touched = touched == 0 ? t : std::min(touched, t);
  }
  const int copies =
      c.cfg.timing.cold ? rotation_copies(touched, per_copy, c.dev.l2_bytes, c.budget) : 1;
  DeviceWeights dw(hw, dtype, layouts, copies, c.stream.get());
  std::int64_t max_m = 0;
  for (const GemmDims& d : problems) max_m = std::max(max_m, d.M);
  const std::size_t es = dtype_size(dtype);
  DeviceBuffer<unsigned char> dC(std::size_t(max_m * L.N) * es);
  DeviceBuffer<std::int64_t> d_off(std::size_t(L.experts + 1));
  for (const GemmDims& d : problems) {
    if (c.aborted) return;
    const HostActivations A = make_activations(
        d.M, d.K_dim, dtype, seed_of(c.cfg.check.seed, L.name + "/A", d.M, int(dtype)));
    DeviceBuffer<unsigned char> dA(A.bytes);
    if (d.grouped()) d_off.upload(d.expert_offsets);
    DeviceProblem p;
    p.weights = &dw;
    p.A = dA.get();
    p.C = dC.get();
    p.C_bytes = std::size_t(d.M * d.N) * es;
    p.expert_offsets = d.grouped() ? d_off.get() : nullptr;
    p.codebook = codebook_arg(hw);
    run_problem(c, L, d, hw, A, p);
  }
}

int count_items(const Context& c) {
  int n = 0;
  const std::vector<PlannedProblem>& plan = c.plan;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (!c.mine.empty() && !c.mine[i]) continue;
    const PlannedProblem& p = plan[i];
    GemmDims d;
    d.M = p.moe ? p.m * p.top_k : p.m, d.N = p.N, d.K_dim = p.K_dim;
    d.k_bits = p.weights.k_bits, d.awq_group = p.weights.awq_group, d.dtype = p.dtype;
    d.num_experts = p.moe ? p.experts : 0;
    for (const VariantRow* r : c.rows) n += unsupported_reason(*r, d).empty();
  }
  return n;
}

void print_summary(const Context& c) {
  // K: the bit width of a kbit problem, the format of an AWQ one (awq_g128).
  std::printf("\n%-28s %6s %6s %8s %5s %-20s %10s %10s %7s %7s %6s %7s\n", "shape", "M", "N", "K",
              "dtype", "variant", "median_us", "floor_us", "%floor", "speedup", "check", "err/bnd");
  for (const auto& r : c.summary) {
    const std::string f = format_of_codebook(r.codebook);
    const std::string k = f == "kbit" ? std::to_string(r.k_bits) : f;
    std::printf("%-28s %6lld %6lld %8s %5s %-20s %10.2f %10.2f %6.1f%% %7.2f %6s %7.3f\n",
                r.shape.c_str(), (long long)r.M, (long long)r.N, k.c_str(), r.dtype.c_str(),
                r.variant.c_str(), r.median_us, r.floor_us, 100 * r.frac_of_floor,
                r.speedup_vs_baseline, r.check.c_str(), r.max_err_over_bound);
  }
}

// The rows timed at a throttled SM clock (results.hpp's low_clock_rows), named after the summary:
// their times are not comparable with the run's others (re-time them, or compare within a row).
void print_low_clock_rows(const std::vector<ResultRow>& rows) {
  const std::vector<std::size_t> low = low_clock_rows(rows);
  if (low.empty()) return;
  std::printf("%zu row(s) timed below 90%% of the run's highest SM clock (%.0f MHz):\n", low.size(),
              highest_sm_clock(rows));
  for (std::size_t i : low)
    std::printf("  %s %s M=%lld: %.0f / %.0f MHz\n", rows[i].variant.c_str(), rows[i].shape.c_str(),
                (long long)rows[i].M, rows[i].sm_mhz_before, rows[i].sm_mhz_after);
}

// The peers' rows the runner appended to the CSV, into the summary table.
void read_peer_rows(const std::string& csv, Context& c) {
  std::ifstream f(csv);
  std::string line;
  std::getline(f, line);
  const std::vector<std::string> cols = result_columns();
  auto col = [&](const char* name) {
    return std::size_t(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  while (std::getline(f, line)) {
    const std::vector<std::string> v = csv_split(line);
    if (v.size() != cols.size() || v[col("family")] != "peer") continue;
    ResultRow r;
    try {
      r.M = std::stoll(v[col("M")]);
      r.N = std::stoll(v[col("N")]);
      r.k_bits = std::stoi(v[col("k_bits")]);
    } catch (const std::exception&) {  // kept in the CSV; counted as an error, not summarized
      std::cerr << "peers: a row of " << csv << " does not parse: " << line << "\n";
      ++c.errors;
      continue;
    }
    r.shape = v[col("shape")];
    r.dtype = v[col("dtype")];
    r.codebook = v[col("codebook")];
    r.variant = v[col("variant")];
    r.median_us = std::atof(v[col("median_us")].c_str());
    r.floor_us = std::atof(v[col("floor_us")].c_str());
    r.frac_of_floor = std::atof(v[col("frac_of_floor")].c_str());
    r.speedup_vs_baseline = std::atof(v[col("speedup_vs_baseline")].c_str());
    r.check = v[col("check")];
    r.max_err_over_bound = std::atof(v[col("max_err_over_bound")].c_str());
    if (r.check == "fail") ++c.failures;
    c.summary.push_back(r);
  }
}

// One line: which peers ran, and why the others did not.
std::string peers_summary(const nlohmann::json& status) {
  if (status.contains("error")) return "peers: " + status["error"].get<std::string>();
  std::string out = "peers:";
  if (!status.contains("peers")) return out + " no status";
  for (const auto& [name, st] : status["peers"].items()) {
    out += " " + name + " ";
    if (!st.value("unavailable", nlohmann::json()).is_null()) {
      out += "unavailable (" + st["unavailable"].get<std::string>() + ");";
      continue;
    }
    out += std::to_string(st.value("ran", 0)) + " rows (" + std::to_string(st.value("passed", 0)) +
           " pass, " + std::to_string(st.value("failed", 0)) + " fail)";
    if (st.contains("skipped") && !st["skipped"].empty()) {
      out += ", skipped:";
      for (const auto& [why, n] : st["skipped"].items())
        out += " " + std::to_string(n.get<int>()) + " (" + why + ")";
    }
    out += ";";
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

// The closing plot step, under the configured Python (CMake's KBIT_PYTHON, harness/peers.hpp). A
// machine without one, or whose one does not import matplotlib, gets one line that says so and
// how to draw the figures later, instead of a traceback.
void plot_run(const std::string& dir) {
  const std::string py = configured_python();
  const std::string script = source_dir() + "/harness/plot.py";
  const std::string probe = shell_quote(py) + " -c 'import matplotlib' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    std::cerr << "no figures drawn: the configured Python '" << py
              << "' is missing or does not import matplotlib; the results are complete. Install "
                 "python3-matplotlib (or configure with -DKBIT_PYTHON=/path/to/python3), then: "
              << "python3 " << script << " " << dir << "\n";
    return;
  }
  const std::string cmd = shell_quote(py) + " " + shell_quote(script) + " " + shell_quote(dir);
  if (std::system(cmd.c_str()) != 0)
    std::cerr << "plotting failed (the results are complete): " << cmd << "\n";
}

// Applies the command line's --shapes and --m to the config (for profiling one problem).
static ExperimentConfig narrowed(ExperimentConfig cfg, const RunOptions& opts) {
  auto keep = [&](const std::string& name) {
    if (opts.shapes.empty()) return true;
    return std::any_of(opts.shapes.begin(), opts.shapes.end(), [&](const std::string& g) {
      return fnmatch(g.c_str(), name.c_str(), 0) == 0;
    });
  };
  cfg.shapes.erase(std::remove_if(cfg.shapes.begin(), cfg.shapes.end(),
                                  [&](const ShapeConfig& s) { return !keep(s.name); }),
                   cfg.shapes.end());
  cfg.moe.erase(std::remove_if(cfg.moe.begin(), cfg.moe.end(),
                               [&](const MoeConfig& m) { return !keep(m.name); }),
                cfg.moe.end());
  if (cfg.shapes.empty() && cfg.moe.empty())
    throw Error("--shapes matches no shape or MoE layer of " + cfg.path);
  if (opts.pdl) cfg.timing.pdl = true;
  if (!opts.m.empty()) {
    for (std::int64_t m : opts.m) {
      if (m < 1) throw Error("--m " + std::to_string(m) + " must be at least 1");
      if (m > kMaxRows)
        throw Error("--m " + std::to_string(m) + " is above the limit " + std::to_string(kMaxRows) +
                    " (rows of A; config.hpp says why)");
      for (const MoeConfig& mo : cfg.moe)  // m is the token count of the MoE layers
        if (m * mo.top_k > kMaxRows)
          throw Error("--m " + std::to_string(m) + " with top_k " + std::to_string(mo.top_k) +
                      " of '" + mo.name + "' makes " + std::to_string(m * mo.top_k) +
                      " rows of A, above the limit " + std::to_string(kMaxRows));
    }
    cfg.m = opts.m;
    cfg.tokens = opts.m;
  }
  return cfg;
}

ExperimentConfig load_run_config(const std::string& path, const RunOptions& opts) {
  ExperimentConfig cfg = narrowed(load_experiment(path), opts);
  match_variants(opts.variants.empty() ? cfg.variants : opts.variants);
  find_variant(cfg.baseline);
  match_peers(cfg.peers);
  return cfg;
}

int run_experiment(const std::string& path, const RunOptions& opts) {
  const ExperimentConfig cfg = narrowed(load_experiment(path), opts);
  const ShardSpec shard = opts.shard.empty() ? ShardSpec{} : parse_shard(opts.shard);
  std::vector<const VariantRow*> rows =
      match_variants(opts.variants.empty() ? cfg.variants : opts.variants);
  const VariantRow* baseline = &find_variant(cfg.baseline);
  rows.erase(std::remove(rows.begin(), rows.end(), baseline), rows.end());
  rows.insert(rows.begin(), baseline);  // timed first: every other row's speedup needs it
  if (!cuda_device_available()) {
    std::cerr << "kbit-harness run: no CUDA device; nothing was run (exit " << kExitNoDevice
              << ")\n";
    return kExitNoDevice;
  }
  // The auto rows' dispatch table is read and checked now: a bad one is refused before any GPU
  // work.
  for (const VariantRow* r : rows)
    if (is_auto_row(r->name)) process_dispatch_tables().load(query_device().name);
  Context c(cfg, opts, rows, baseline);
  for (const VariantRow* r : rows) c.options.emplace(r, options_for(cfg, *r));
  c.plan = plan_problems(cfg);
  const std::vector<PlannedProblem>& plan = c.plan;
  if (shard.count > 1)
    for (int s : assign_shards_by_layer(plan, shard.count)) c.mine.push_back(s == shard.index);
  // Which device timed a row: its index on the host and its UUID.
  c.device_label =
      std::to_string(opts.device_index >= 0 ? opts.device_index : c.dev.device) + " " + c.dev.uuid;
  const std::vector<const PeerRow*> peer_rows = match_peers(cfg.peers);
  std::size_t free_b = 0, total_b = 0;
  KBIT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  check_memory_up_front(c, std::int64_t(free_b));  // throws: exit 2, nothing run or written
  c.budget = opts.memory_budget_gb > 0 ? std::int64_t(opts.memory_budget_gb * 1e9)
                                       : std::int64_t(free_b / 2);
  std::cout << "device: " << c.dev.name << ", " << c.dev.sm_count << " SMs, L2 "
            << c.dev.l2_bytes / (1 << 20)
            << " MiB; measuring the copy bandwidth and the fp16 tensor rate..." << std::endl;
  c.ceil = measure_ceilings(c.stream.get());
  std::printf("ceilings: copy %.0f GB/s, fp16 tensor %.0f TFLOP/s\n", c.ceil.copy_gb_per_s,
              c.ceil.fp16_tflops);

  const BuildInfo build = query_build();
  const std::string root = opts.out_root.empty() ? source_dir() + "/results" : opts.out_root;
  const std::string dir = root + "/" + cfg.name + "/" + utc_timestamp() + "_" +
                          sanitize_name(c.dev.name) + "_" + build.git_sha.substr(0, 12);
  make_dirs(dir);
  nlohmann::json run;
  run["experiment"] = cfg.name;
  run["description"] = cfg.description;
  run["started_utc"] = utc_timestamp();
  run["status"] = "running";
  run["device"] = to_json(c.dev);
  run["device"]["host_index"] = opts.device_index >= 0 ? opts.device_index : c.dev.device;
  if (shard.count > 1)
    run["shard"] = {{"index", shard.index},
                    {"count", shard.count},
                    {"problems", std::count(c.mine.begin(), c.mine.end(), true)},
                    {"of", plan.size()}};
  run["ceilings"] = to_json(c.ceil);
  run["build"] = to_json(build);
  run["config"] = {{"path", cfg.path}, {"hash", config_hash(cfg.text)}, {"text", cfg.text}};
  run["argv"] = opts.argv;
  run["formats"] = cfg.formats;
  run["weights"] = weights_json(cfg);  // each layer's source: N(0,1) or a checkpoint's tensors
  run["overrides"] = {
      {"variants", opts.variants}, {"shapes", opts.shapes}, {"m", opts.m}, {"pdl", opts.pdl}};
  for (const VariantRow* r : rows) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [name, value] : c.options.at(r).values) o[name] = value;
    run["variants"].push_back({{"name", r->name},
                               {"description", r->description},
                               {"family", family_name(r->family)},
                               {"layout", row_layout_name(*r)},
                               {"formats", describe_formats(r->support)},
                               {"options", o}});
  }
  for (const PeerRow* p : peer_rows)
    run["peers"].push_back({{"name", p->name},
                            {"description", p->description},
                            {"family", "peer"},
                            {"bits_per_weight", p->bits_per_weight},
                            {"package", p->package}});
  run["timing"] = {{"mode", cfg.timing.cold ? "cold" : "hot"},
                   {"warmup", cfg.timing.warmup},
                   {"min_samples", cfg.timing.min_samples},
                   {"max_samples", cfg.timing.max_samples},
                   {"max_rel_noise", cfg.timing.max_rel_noise},
                   {"timeout_s", cfg.timing.timeout_s},
                   {"pdl", cfg.timing.pdl},
                   {"rotation_budget_bytes", c.budget}};
  write_json_file(dir + "/run.json", run);
  c.csv = std::make_unique<CsvWriter>(dir + "/results.csv");
  Progress progress(count_items(c), opts.quiet);
  c.progress = &progress;
  std::cout << "writing " << dir << std::endl;

  for (const auto& s : cfg.shapes) {
    const Layer L{s.name, s.n, s.k_dim, 1, 0, false, &s.weights};
    for (const WeightsOf& w : weights_of(cfg, false)) {
      if (c.aborted) break;
      if (!c.any_of_next(cfg.dtypes.size() * cfg.m.size())) {  // another shard's weights
        c.next_problem += cfg.dtypes.size() * cfg.m.size();
        continue;
      }
      const int k = w.k_bits;
      // AWQ weights draw the N(0,1) values of the same shape's K = 4 kbit weights (same seed),
      // or quantize the same file tensor (or read the file's AWQ tensors).
      const HostWeights hw = shape_host_weights(
          s, k, w.awq_group, w.awq_group > 0 ? std::vector<float>{} : codebook_for(cfg, k),
          seed_of(cfg.check.seed, s.name, k));
      if (hw.q.saturated_blocks > 0)
        std::cerr << "warning: " << hw.q.saturated_blocks << " blocks of " << s.name
                  << " saturated E4M4\n";
      for (DType t : cfg.dtypes) {
        std::vector<GemmDims> problems;
        for (std::int64_t m : cfg.m) {
          if (!c.take(s.name, w, t, m)) continue;
          GemmDims d;
          d.M = m, d.N = s.n, d.K_dim = s.k_dim, d.k_bits = k, d.awq_group = w.awq_group;
          d.dtype = t;
          problems.push_back(d);
        }
        run_layer(c, L, t, hw, problems);
      }
    }
  }
  for (const auto& m : cfg.moe) {
    const Layer L{m.name, m.n, m.k_dim, m.experts, m.top_k, true};
    for (const WeightsOf& w : weights_of(cfg, true)) {
      if (c.aborted) break;
      if (!c.any_of_next(cfg.dtypes.size() * cfg.tokens.size())) {  // another shard's weights
        c.next_problem += cfg.dtypes.size() * cfg.tokens.size();
        continue;
      }
      const int k = w.k_bits;
      const HostWeights hw = make_host_weights(m.n, m.k_dim, k, codebook_for(cfg, k), m.experts,
                                               seed_of(cfg.check.seed, m.name, k));
      for (DType t : cfg.dtypes) {
        std::vector<GemmDims> problems;
        for (std::int64_t tokens : cfg.tokens) {
          if (!c.take(m.name, w, t, tokens)) continue;
          GemmDims d;
          d.N = m.n, d.K_dim = m.k_dim, d.k_bits = k, d.dtype = t, d.num_experts = m.experts;
          d.expert_offsets = route_tokens(m.experts, int(tokens), m.top_k,
                                          m.routing.empty() ? cfg.routing : m.routing, cfg.zipf_s,
                                          seed_of(cfg.routing_seed, m.name, tokens));
          d.M = d.expert_offsets.back();
          problems.push_back(d);
        }
        run_layer(c, L, t, hw, problems);
      }
    }
  }
  progress.done();
  if (!peer_rows.empty() && !c.aborted) {
    // The peers' rows go into the same CSV, from a child of this process on this GPU.
    c.csv.reset();
    PeerRequest pr;
    pr.experiment = cfg.name;
    pr.run_dir = dir;
    pr.csv = dir + "/results.csv";
    pr.codebook = cfg.codebook;
    pr.peers = peer_rows;
    pr.problems = c.peer_problems;
    pr.timing = run["timing"];
    pr.timing["cold"] = cfg.timing.cold;
    pr.check = {
        {"enabled", cfg.check.enabled}, {"seed", cfg.check.seed}, {"max_rows", cfg.check.max_rows}};
    pr.l2_bytes = c.dev.l2_bytes;
    pr.device = c.device_label;
    pr.rotation_budget_bytes = c.budget;
    std::cout << "\npeers: running " << peer_rows.size() << " peer(s) on " << c.peer_problems.size()
              << " problems with " << configured_python() << std::endl;
    run["peers_status"] = run_peers(pr, configured_python(), source_dir());
    read_peer_rows(pr.csv, c);
  }
  run["status"] = c.aborted ? "aborted" : "complete";
  if (c.aborted) run["abort_reason"] = c.abort_reason;
  run["finished_utc"] = utc_timestamp();
  run["summary"] = {{"rows", c.summary.size()},
                    {"check_passed", c.passed},
                    {"check_failed", c.failures},
                    {"errors", c.errors},
                    {"skipped_unsupported", c.skipped_unsupported}};
  write_json_file(dir + "/run.json", run);
  print_summary(c);
  std::printf(
      "\n%zu rows, %d checks passed, %d failed, %d errors; %d (problem, variant) pairs "
      "unsupported\n%s\n",
      c.summary.size(), c.passed, c.failures, c.errors, c.skipped_unsupported, dir.c_str());
  if (c.aborted) std::cerr << "run aborted: " << c.abort_reason << "\n";
  if (!peer_rows.empty()) std::printf("%s\n", peers_summary(run["peers_status"]).c_str());
  print_low_clock_rows(c.summary);
  if (opts.plot) plot_run(dir);
  return (c.failures || c.errors || c.aborted) ? kExitCheckFailed : kExitOk;
}

}  // namespace kbit
