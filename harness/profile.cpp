// kbit-harness profile CONFIG: every selected (problem, row) once under Nsight Compute, ours
// through `kbit-harness profile-target`, the peers through `runner.py profile`; the counters of
// each kernel into results/<experiment>/<run>/profile.csv, a table, and a figure
// (docs/harness.md, "Profiling").
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/config_weights.hpp"
#include "harness/device_info.hpp"
#include "harness/ncu_csv.hpp"
#include "harness/peers.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "harness/weight_format.hpp"
#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void make_dirs(const std::string& path) {
  std::string cur;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/')
      if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
        throw Error("cannot create directory '" + cur + "'");
    if (i < path.size()) cur += path[i];
  }
}

bool executable(const std::string& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0;
}

std::string read_or_empty(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, std::size_t(n)) : "kbit-harness";
}

// One (problem, row) to profile.
struct Job {
  std::string shape, format, dtype, row;
  std::int64_t M = 0, N = 0, K_dim = 0;
  int k_bits = 4;
  std::size_t problem = 0;  // the problem's index in the config's order
  bool peer = false, baseline = false;
  std::string tag() const {
    std::string t = shape + "_M" + std::to_string(M) + "_" +
                    (format == "kbit" ? "k" + std::to_string(k_bits) : format) + "_" + dtype + "_" +
                    row;
    for (char& c : t)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
    return t;
  }
};

std::string config_label(const Job& j) {
  return j.shape + " M=" + std::to_string(j.M) + " " +
         (j.format == "kbit" ? "K=" + std::to_string(j.k_bits) : j.format) + " " + j.dtype;
}

std::vector<std::string> csv_header() {
  std::vector<std::string> h = {"experiment",
                                "shape",
                                "M",
                                "N",
                                "K_dim",
                                "k_bits",
                                "format",
                                "dtype",
                                "row",
                                "family",
                                "kernel",
                                "kernels",
                                "time_us",
                                "inst_executed",
                                "inst_per_weight",
                                "issue_active_pct",
                                "dram_pct",
                                "dram_read_bytes",
                                "dram_write_bytes",
                                "l2_pct",
                                "l2_bytes",
                                "smem_pct",
                                "smem_wavefronts",
                                "tensor_pct",
                                "tensor_hmma_pct",
                                "tensor_gmma_pct",
                                "hmma_inst",
                                "gmma_inst",
                                "occupancy_pct",
                                "registers",
                                "smem_static",
                                "smem_dynamic",
                                "block",
                                "grid",
                                "stall1",
                                "stall1_share",
                                "stall2",
                                "stall2_share",
                                "stall3",
                                "stall3_share"};
  for (const auto& c : opcode_classes()) h.push_back("inst_w_" + c.key);
  for (const char* x : {"loop_instructions", "loop_mix", "error"}) h.push_back(x);
  return h;
}

std::string num(double v, int digits = 6) {
  std::ostringstream o;
  o.precision(digits);
  o << v;
  return o.str();
}

std::vector<std::string> csv_fields(const std::string& experiment, const Job& j,
                                    const KernelProfile& p, int kernels, const std::string& error) {
  std::vector<std::string> f = {experiment,
                                j.shape,
                                std::to_string(j.M),
                                std::to_string(j.N),
                                std::to_string(j.K_dim),
                                std::to_string(j.k_bits),
                                j.format,
                                j.dtype,
                                j.row,
                                j.peer ? "peer" : "ours",
                                p.kernel,
                                std::to_string(kernels)};
  // Counts and bytes in full; times, ratios and percentages to 6 digits.
  const std::vector<std::pair<double, int>> nums = {
      {p.time_us, 6},           {p.inst_executed, 15},   {p.inst_per_weight, 6},
      {p.issue_active_pct, 6},  {p.dram_pct, 6},         {p.dram_read_bytes, 15},
      {p.dram_write_bytes, 15}, {p.l2_pct, 6},           {p.l2_bytes, 15},
      {p.smem_pct, 6},          {p.smem_wavefronts, 15}, {p.tensor_pct(), 6},
      {p.tensor_hmma_pct, 6},   {p.tensor_gmma_pct, 6},  {p.hmma_inst, 15},
      {p.gmma_inst, 15},        {p.occupancy_pct, 6}};
  for (const auto& [v, digits] : nums) f.push_back(profile_field(v, digits));  // "" unmeasured
  f.push_back(std::to_string(p.registers));
  for (double v : {p.smem_static, p.smem_dynamic, double(p.block), p.grid}) f.push_back(num(v));
  auto top = p.top_stalls(3);
  for (std::size_t i = 0; i < 3; ++i) {
    f.push_back(i < top.size() ? top[i].first : "");
    f.push_back(i < top.size() ? num(top[i].second, 3) : "");
  }
  for (const auto& c : opcode_classes()) {
    const auto it = p.mix.executed.find(c.key);
    f.push_back(p.has_mix
                    ? num(per_weight(it == p.mix.executed.end() ? 0 : it->second, j.N, j.K_dim), 4)
                    : "");
  }
  f.push_back(p.has_mix ? std::to_string(p.mix.loop_instructions) : "");
  f.push_back(p.has_mix ? loop_mix_text(p.mix) : "");
  f.push_back(error);
  return f;
}

// The config narrowed by the command line; dense shapes only (MoE layers are named and left).
ExperimentConfig narrowed(ExperimentConfig cfg, const ProfileOptions& o) {
  auto keep = [&](const std::string& name) {
    return o.shapes.empty() || std::any_of(o.shapes.begin(), o.shapes.end(), [&](const auto& g) {
             return fnmatch(g.c_str(), name.c_str(), 0) == 0;
           });
  };
  cfg.shapes.erase(std::remove_if(cfg.shapes.begin(), cfg.shapes.end(),
                                  [&](const ShapeConfig& s) { return !keep(s.name); }),
                   cfg.shapes.end());
  for (const auto& m : cfg.moe)
    if (keep(m.name))
      std::cerr << "profile: MoE layer '" << m.name << "' is not profiled (dense shapes only)\n";
  if (cfg.shapes.empty()) throw Error("--shapes matches no dense shape of " + cfg.path);
  for (std::int64_t m : o.m) {
    if (m < 1) throw Error("--m " + std::to_string(m) + " must be at least 1");
    if (m > kMaxRows)
      throw Error("--m " + std::to_string(m) + " is above the limit " + std::to_string(kMaxRows));
  }
  if (!o.m.empty()) cfg.m = o.m;
  for (int k : o.k_bits)
    if (k < 2 || k > 5)
      throw Error("--k-bits " + std::to_string(k) + " is outside the supported range 2..5");
  if (!o.k_bits.empty()) cfg.k_bits = o.k_bits;
  return cfg;
}

// Nsight Compute: --ncu, else ncu on the PATH, else /usr/local/cuda/bin/ncu.
std::string find_ncu(const std::string& given) {
  if (!given.empty()) return executable(given) ? given : "";
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    std::string dir;
    while (std::getline(in, dir, ':'))
      if (!dir.empty() && executable(dir + "/ncu")) return dir + "/ncu";
  }
  return executable("/usr/local/cuda/bin/ncu") ? "/usr/local/cuda/bin/ncu" : "";
}

struct Tally {
  int profiled = 0, failed = 0;
};

}  // namespace

int profile_experiment(const std::string& path, const ProfileOptions& o) {
  const ExperimentConfig cfg = narrowed(load_experiment(path), o);
  const std::vector<const VariantRow*> rows =
      o.variants.empty() && cfg.variants.empty()
          ? std::vector<const VariantRow*>{}
          : match_variants(o.variants.empty() ? cfg.variants : o.variants);
  const std::vector<const PeerRow*> peer_rows =
      o.no_peers ? std::vector<const PeerRow*>{}
                 : match_peers(o.peers.empty() ? cfg.peers : o.peers);
  const std::string ncu = find_ncu(o.ncu);
  if (ncu.empty()) {
    std::cerr << "kbit-harness profile: Nsight Compute (ncu) not found"
              << (o.ncu.empty() ? " on the PATH or at /usr/local/cuda/bin/ncu"
                                : " at '" + o.ncu + "'")
              << "; nothing was profiled (exit " << kExitNoDevice << ")\n";
    return kExitNoDevice;
  }
  if (!cuda_device_available()) {
    std::cerr << "kbit-harness profile: no CUDA device; nothing was profiled (exit "
              << kExitNoDevice << ")\n";
    return kExitNoDevice;
  }
  // The problems, and which of our rows run each.
  std::vector<Job> jobs;
  std::vector<PeerProblem> peer_problems;
  for (const auto& s : cfg.shapes)
    for (const std::string& f : cfg.formats) {
      const int group = parse_weight_format(f);
      for (int k : group > 0 ? std::vector<int>{4} : cfg.k_bits)
        for (DType t : cfg.dtypes)
          for (std::int64_t m : cfg.m) {
            GemmDims d;
            d.M = m, d.N = s.n, d.K_dim = s.k_dim, d.k_bits = k, d.awq_group = group, d.dtype = t;
            Job base{s.name, f, dtype_name(t), "", m, s.n, s.k_dim, k, peer_problems.size()};
            for (const VariantRow* r : rows) {
              if (!unsupported_reason(*r, d).empty()) continue;
              Job j = base;
              j.row = std::string(r->name);
              j.baseline = r->family == Family::baseline;
              jobs.push_back(j);
            }
            PeerProblem pp;
            pp.shape = s.name, pp.M = m, pp.N = s.n, pp.K_dim = s.k_dim, pp.k_bits = k;
            pp.dtype = t, pp.format = f;
            peer_problems.push_back(pp);
          }
    }
  const DeviceInfo dev = query_device();
  const BuildInfo build = query_build();
  const std::string root = o.out_root.empty() ? source_dir() + "/results" : o.out_root;
  const std::string dir = root + "/" + cfg.name + "/" + utc_timestamp() + "_" +
                          sanitize_name(dev.name) + "_" + build.git_sha.substr(0, 12);
  const std::string ncu_dir = dir + "/ncu";
  make_dirs(ncu_dir);
  // The peers' (problem, peer) pairs that the runner takes (its `plan`: nothing launches; a
  // peer's availability may import torch and its package).
  const std::string py = configured_python();
  const std::string runner = source_dir() + "/harness/peers/runner.py";
  if (!peer_rows.empty()) {
    PeerRequest pr;
    pr.experiment = cfg.name, pr.run_dir = ncu_dir, pr.csv = ncu_dir + "/peers_unused.csv";
    pr.codebook = cfg.codebook, pr.peers = peer_rows, pr.problems = peer_problems;
    pr.check = {{"enabled", false}, {"seed", cfg.check.seed}, {"max_rows", cfg.check.max_rows}};
    pr.l2_bytes = std::max<std::int64_t>(dev.l2_bytes, 1);
    pr.timing = nlohmann::json::object();
    const std::string req = ncu_dir + "/peers_plan_request.json";
    write_json_file(req, peer_request_json(pr));
    const std::string plan_out = ncu_dir + "/peers_plan.json";
    const int rc = std::system(
        (quote(py) + " " + quote(runner) + " plan " + quote(req) + " > " + quote(plan_out))
            .c_str());
    nlohmann::json plan;
    try {
      plan = nlohmann::json::parse(read_or_empty(plan_out));
    } catch (const std::exception&) {
      throw Error("the peers' runner gave no plan (exit " + std::to_string(rc) + "): " + plan_out);
    }
    for (const auto& e : plan["runs"]) {
      const PeerProblem& p = peer_problems.at(e["problem"].get<std::size_t>());
      Job j{p.shape,
            p.format,
            dtype_name(p.dtype),
            e["peer"].get<std::string>(),
            p.M,
            p.N,
            p.K_dim,
            p.k_bits,
            e["problem"].get<std::size_t>()};
      j.peer = true;
      jobs.push_back(j);
    }
    for (const auto& [peer, why] : plan["skipped"].items())
      std::cout << "peer " << peer << ": " << why.dump() << "\n";
  }
  // Ours and the peers of a problem next to each other.
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.problem < b.problem; });
  if (jobs.empty()) throw Error("no (problem, row) of " + cfg.path + " to profile");

  // A metric the device's ncu does not know fails the whole command: it is dropped (named in
  // run.json) and the command runs again.
  std::vector<std::string> metrics = profile_metrics(), dropped;
  std::system(
      (quote(ncu) + " --version > " + quote(ncu_dir + "/ncu_version.txt") + " 2>&1").c_str());

  nlohmann::json run;
  run["experiment"] = cfg.name;
  run["kind"] = "profile";
  run["description"] = cfg.description;
  run["started_utc"] = utc_timestamp();
  run["status"] = "running";
  run["device"] = to_json(dev);
  run["build"] = to_json(build);
  run["config"] = {{"path", cfg.path}, {"hash", config_hash(cfg.text)}, {"text", cfg.text}};
  run["argv"] = o.argv;
  run["weights"] = weights_json(cfg);  // each layer's source: N(0,1) or a checkpoint's tensors
  run["ncu"] = {{"path", ncu},
                {"version", last_line(read_or_empty(ncu_dir + "/ncu_version.txt"))},
                {"metrics", metrics},
                {"dropped_metrics", dropped}};
  for (const auto& h : helper_kernel_patterns())
    run["helper_kernels"].push_back({{"regex", h.regex}, {"what", h.what}});
  write_json_file(dir + "/run.json", run);

  std::ofstream csv(dir + "/profile.csv");
  {
    const auto h = csv_header();
    for (std::size_t i = 0; i < h.size(); ++i) csv << (i ? "," : "") << h[i];
    csv << "\n" << std::flush;
  }
  auto write_row = [&](const Job& j, const KernelProfile& p, int kernels, const std::string& err) {
    const auto f = csv_fields(cfg.name, j, p, kernels, err);
    for (std::size_t i = 0; i < f.size(); ++i) csv << (i ? "," : "") << csv_escape(f[i]);
    csv << "\n" << std::flush;
  };
  std::cout << "profiling " << jobs.size() << " (problem, row) pairs with " << ncu << "\nwriting "
            << dir << std::endl;
  auto ncu_command = [&](const std::string& base, const std::string& target) {
    std::string list;
    for (const auto& m : metrics) list += (list.empty() ? "" : ",") + m;
    return quote(ncu) +
           " --clock-control none --profile-from-start off --target-processes application-only"
           " --section SourceCounters --metrics " +
           list + " -f -o " + quote(base) + " " + target + " > " + quote(base + ".log") + " 2>&1";
  };
  Tally tally;
  struct Line {
    Job job;
    KernelProfile p;
    std::string error;
  };
  std::vector<Line> table;
  for (std::size_t n = 0; n < jobs.size(); ++n) {
    const Job& j = jobs[n];
    const std::string base = ncu_dir + "/" + j.tag();
    std::string target;
    if (j.peer) {
      PeerRequest pr;
      pr.experiment = cfg.name, pr.run_dir = ncu_dir, pr.csv = base + ".peer.csv";
      pr.codebook = cfg.codebook;
      pr.peers = match_peers({j.row});
      PeerProblem pp;
      pp.shape = j.shape, pp.M = j.M, pp.N = j.N, pp.K_dim = j.K_dim, pp.k_bits = j.k_bits;
      pp.dtype = parse_dtype(j.dtype), pp.format = j.format;
      pr.problems = {pp};
      pr.check = {{"enabled", true}, {"seed", cfg.check.seed}, {"max_rows", cfg.check.max_rows}};
      pr.l2_bytes = std::max<std::int64_t>(dev.l2_bytes, 1);
      pr.timing = nlohmann::json::object();
      nlohmann::json req = peer_request_json(pr);
      req["status_path"] = base + ".peer_status.json";
      write_json_file(base + ".request.json", req);
      target = quote(py) + " -u " + quote(runner) + " profile " + quote(base + ".request.json");
    } else {
      target = quote(self_exe()) + " profile-target " + quote(cfg.path) + " --shape " +
               quote(j.shape) + " --m " + std::to_string(j.M) + " --format " + quote(j.format) +
               " --k-bits " + std::to_string(j.k_bits) + " --dtype " + j.dtype + " --variant " +
               quote(j.row);
    }
    std::printf("[%zu/%zu] %s %s ...\n", n + 1, jobs.size(), j.row.c_str(),
                config_label(j).c_str());
    std::fflush(stdout);
    std::string cmd, log;
    int rc = 0;
    for (int attempt = 0;; ++attempt) {
      cmd = ncu_command(base, target);
      rc = std::system(cmd.c_str());
      log = read_or_empty(base + ".log");
      const std::string refused = ncu_refusal(log);
      if (!refused.empty()) {
        std::cerr << "kbit-harness profile: ncu cannot read the GPU's counters here: " << refused
                  << " (exit " << kExitNoDevice << "; " << base << ".log)\n";
        run["status"] = "refused";
        run["refusal"] = refused;
        write_json_file(dir + "/run.json", run);
        return kExitNoDevice;
      }
      const std::vector<std::string> bad = rejected_metrics(log, metrics);
      if (bad.empty() || attempt == 3) break;
      for (const auto& m : bad) {
        std::cerr << "  ncu does not know " << m << " here: dropped\n";
        dropped.push_back(m);
        metrics.erase(std::find(metrics.begin(), metrics.end(), m));
      }
      run["ncu"]["metrics"] = metrics;
      run["ncu"]["dropped_metrics"] = dropped;
    }
    run["jobs"].push_back({{"tag", j.tag()}, {"command", cmd}, {"exit", rc}});
    std::string error;
    if (rc != 0)
      error =
          "the profiled command exited " + std::to_string(WEXITSTATUS(rc)) + ": " + last_line(log);
    std::vector<NcuKernel> kernels;
    if (::access((base + ".ncu-rep").c_str(), R_OK) == 0) {
      // Base units (bytes, seconds); an ncu without --print-units prints its own, which the
      // parser scales too.
      for (const char* units : {" --print-units base", ""}) {
        std::system((quote(ncu) + " -i " + quote(base + ".ncu-rep") + " --csv --page raw" + units +
                     " > " + quote(base + ".raw.csv") + " 2>&1")
                        .c_str());
        try {
          kernels = parse_ncu_raw_csv(read_or_empty(base + ".raw.csv"));
          break;
        } catch (const std::exception& e) {
          if (*units == '\0') error += (error.empty() ? "" : "; ") + std::string(e.what());
        }
      }
      std::system((quote(ncu) + " -i " + quote(base + ".ncu-rep") +
                   " --csv --page source --print-source sass > " + quote(base + ".sass.csv") +
                   " 2>&1")
                      .c_str());
    } else if (error.empty()) {
      error = "ncu wrote no report: " + last_line(log);
    }
    std::vector<SassKernel> sass;
    try {
      sass = parse_ncu_source_csv(read_or_empty(base + ".sass.csv"));
    } catch (const std::exception&) {
    }
    std::vector<KernelProfile> kept;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const std::string helper = helper_kernel(kernels[i].name, j.baseline);
      if (!helper.empty()) {
        run["excluded"].push_back(
            {{"tag", j.tag()}, {"kernel", kernels[i].name}, {"what", helper}});
        continue;
      }
      KernelProfile p = kernel_profile(kernels[i], j.N, j.K_dim);
      const SassKernel* sk = sass.size() == kernels.size() ? &sass[i] : nullptr;
      for (const auto& s : sass)
        if (!sk && s.name == kernels[i].name) sk = &s;
      SassKernel own;  // not in the one export: this kernel's source page on its own
      if (!sk && ::access((base + ".ncu-rep").c_str(), R_OK) == 0) {
        const std::string out = base + ".sass" + std::to_string(i) + ".csv";
        std::system((quote(ncu) + " -i " + quote(base + ".ncu-rep") +
                     " --csv --page source --print-source sass --kernel-name-base demangled"
                     " --kernel-name " +
                     quote("regex:" + regex_escape(kernels[i].name)) + " > " + quote(out) + " 2>&1")
                        .c_str());
        try {
          for (auto& s : parse_ncu_source_csv(read_or_empty(out)))
            if (!sk && !s.lines.empty()) own = std::move(s), sk = &own;
        } catch (const std::exception&) {
        }
      }
      if (sk && !sk->lines.empty()) {
        p.mix = opcode_mix(*sk);
        p.has_mix = true;
      }
      kept.push_back(p);
    }
    if (kept.empty() && error.empty())
      error = "no kernel of the row was profiled: " + last_line(log);
    for (const auto& p : kept) write_row(j, p, int(kept.size()), error);
    KernelProfile total = kept.size() == 1 ? kept.front() : sum_profile(kept, j.N, j.K_dim);
    if (kept.size() != 1) write_row(j, total, int(kept.size()), error);
    if (kept.empty() || !error.empty()) ++tally.failed;
    if (!kept.empty()) ++tally.profiled;
    if (!error.empty()) std::cerr << "  " << j.row << ": " << error << "\n";
    table.push_back({j, total, error});
  }
  run["status"] = "complete";
  run["finished_utc"] = utc_timestamp();
  run["summary"] = {{"pairs", jobs.size()}, {"profiled", tally.profiled}, {"failed", tally.failed}};
  write_json_file(dir + "/run.json", run);

  auto pct = [](double v) {  // "-" where the counter was not measured
    if (!measured(v)) return std::string("    -");
    char b[16];
    std::snprintf(b, sizeof b, "%4.0f%%", v);
    return std::string(b);
  };
  std::string last;
  for (const auto& l : table) {
    const std::string problem = config_label(l.job);
    if (problem != last) {
      std::printf(
          "\n%s (N=%lld, K_dim=%lld)\n%-22s | %7s | %9s | %6s | %5s | %5s | %5s | %6s | %s\n",
          problem.c_str(), (long long)l.job.N, (long long)l.job.K_dim, "row", "time_us", "inst/w",
          "issue", "dram", "l2", "smem", "tensor", "top stall");
      last = problem;
    }
    const auto top = l.p.top_stalls(1);
    const std::string stall =
        top.empty()
            ? ""
            : top[0].first + " " + std::to_string(int(std::lround(100 * top[0].second))) + "%";
    std::printf("%-22s | %7.1f | %9.2f | %5.0f%% | %4.0f%% | %s | %s | %5.0f%% | %s%s\n",
                l.job.row.c_str(), l.p.time_us, l.p.inst_per_weight, l.p.issue_active_pct,
                l.p.dram_pct, pct(l.p.l2_pct).c_str(), pct(l.p.smem_pct).c_str(), l.p.tensor_pct(),
                stall.c_str(), l.error.empty() ? "" : "  (error)");
  }
  std::printf("\n%d of %zu (problem, row) pairs profiled, %d with errors\n%s/profile.csv\n",
              tally.profiled, jobs.size(), tally.failed, dir.c_str());
  std::fflush(stdout);
  if (o.plot) {
    const std::string script = source_dir() + "/harness/tools/profile_plot.py";
    const std::string cmd = quote(py) + " " + quote(script) + " " + quote(dir);
    if (std::system(cmd.c_str()) != 0)
      std::cerr << "no figure drawn (profile.csv is complete): " << cmd << "\n";
  }
  return tally.failed ? kExitCheckFailed : kExitOk;
}

}  // namespace kbit
