// kbit-harness dispatch build / show: the tables of the fastest checked variant per problem, read
// from the CURRENT runs under results/ (the lookup and the auto rows: dispatch_lookup.cpp).
#include "harness/dispatch.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "harness/commands.hpp"
#include "harness/current.hpp"
#include "harness/device_info.hpp"
#include "harness/input_file.hpp"
#include "harness/options.hpp"
#include "harness/results.hpp"
#include "harness/weight_format.hpp"
#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {

const char* const kDispatchFallbackRule =
    "a problem without an entry takes the same shape's (N, K_dim, experts) nearest measured M at "
    "or above its M, else the largest below; else the nearest shape of the same class, K and "
    "dtype by |log(N*K_dim) difference|, by the same M rule; else the fixed rule: dense M <= 4 "
    "scalar_gemv, dense M >= 5 warp_specialized on compute capability 9.0 else fetch_dequant; AWQ "
    "problems (awq_auto) look among the entries of their format and fall to awq_gemv at M <= 4, "
    "awq_fragment_mma at M = 5..128 and awq_gemm above on compute capability 9.0. An entry whose "
    "variant does not cover the problem (format, K, dtype, M range, compute capability) is passed "
    "over for the next. Grouped (MoE) problems do not read the table: grouped_auto takes "
    "grouped_mma from its crossover in rows per expert (M / experts) on, grouped_scalar_gemv "
    "below; their entries record the fastest grouped row measured.";

namespace {

namespace fs = std::filesystem;

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A row timed with options other than its defaults is not what an auto row runs (it sets the
// chosen row up at its defaults). Rows from runs before options were recorded carry no
// "[...]" prefix and are taken as they are; an option the row gained after the run (absent
// from the record) counts as its default.
bool timed_at_defaults(const VariantRow& row, const std::string& config) {
  if (config.empty() || config[0] != '[') return true;
  const auto end = config.find(']');
  if (end == std::string::npos) return false;
  const VariantOptions defaults = resolve_options(row, {});
  std::istringstream recorded(config.substr(1, end - 1));
  std::string item;
  while (recorded >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return false;
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    bool known = false;
    for (const auto& [n, v] : defaults.values) {
      if (n != name) continue;
      known = true;
      if (std::to_string(v) != value) return false;
    }
    if (!known) return false;  // an option the row no longer has
  }
  return true;
}

// The columns of one results.csv by name: runs before a column existed lack it (pdl).
class Columns {
 public:
  Columns(const std::string& header, std::string path) : path_(std::move(path)) {
    const std::vector<std::string> names = csv_split(header);
    for (std::size_t i = 0; i < names.size(); ++i) index_[trimmed(names[i])] = i;
    count_ = names.size();
  }
  std::size_t need(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end())
      throw Error(path_ + ": the header has no column '" + name + "' (a results.csv of `run`)");
    return it->second;
  }
  std::optional<std::size_t> find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  }
  std::size_t count() const { return count_; }

 private:
  std::string path_;
  std::map<std::string, std::size_t> index_;
  std::size_t count_ = 0;
};

std::int64_t to_int(const std::string& v, const std::string& where, const char* column) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0')
    throw Error(where + ": column " + column + " = '" + v + "' is not an integer");
  return x;
}

// One point of a table: what must agree for two rows to measure the same problem. The AWQ group
// first (0: kbit), so that a table lists its kbit entries first.
using PointKey = std::tuple<int, int, std::string, bool, std::string, std::int64_t, std::int64_t,
                            int, std::int64_t>;

PointKey key_of(const DispatchEntry& e) {
  return {parse_weight_format(e.format),
          e.k_bits,
          e.dtype,
          e.grouped,
          e.shape,
          e.N,
          e.K_dim,
          e.experts,
          e.M};
}

// The variants a GPU's runs timed at each point (candidates only).
using Measured = std::map<PointKey, std::set<std::string>>;

// Adds the candidate rows of one run's results.csv to `points` and their names to `measured`.
void read_run_rows(const std::string& csv_path, const std::string& run,
                   std::map<PointKey, DispatchEntry>& points, Measured& measured) {
  std::istringstream f(read_text_file(csv_path, "results.csv", kMaxResultsCsvBytes));
  std::string line;
  if (!std::getline(f, line)) throw Error(csv_path + " is empty (no header)");
  const Columns cols(line, csv_path);
  const std::size_t c_shape = cols.need("shape"), c_m = cols.need("M"), c_n = cols.need("N"),
                    c_kd = cols.need("K_dim"), c_k = cols.need("k_bits"),
                    c_dtype = cols.need("dtype"), c_var = cols.need("variant"),
                    c_med = cols.need("median_us"), c_check = cols.need("check"),
                    c_fam = cols.need("family"), c_l2 = cols.need("l2"),
                    c_exp = cols.need("experts"), c_cfg = cols.need("config");
  const std::optional<std::size_t> c_pdl = cols.find("pdl");
  const std::optional<std::size_t> c_cb = cols.find("codebook");
  std::int64_t number = 1;
  while (std::getline(f, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = csv_path + ":" + std::to_string(number);
    const std::vector<std::string> v = csv_split(line);
    if (v.size() != cols.count())
      throw Error(where + ": " + std::to_string(v.size()) + " fields, the header has " +
                  std::to_string(cols.count()));
    const std::string& family = v[c_fam];
    if (family != "gemm" && family != "gemv" && family != "grouped") continue;
    // The weights' format (runs before the codebook column held kbit problems only): an AWQ
    // problem is another point than the kbit one of the same shape, M, K and dtype.
    const std::string format = c_cb ? format_of_codebook(v[*c_cb]) : "kbit";
    if (v[c_l2] == "cold") {  // timed at this point, whatever its check said
      PointKey k{parse_weight_format(format),
                 int(to_int(v[c_k], where, "k_bits")),
                 v[c_dtype],
                 to_int(v[c_exp], where, "experts") > 0,
                 v[c_shape],
                 to_int(v[c_n], where, "N"),
                 to_int(v[c_kd], where, "K_dim"),
                 int(to_int(v[c_exp], where, "experts")),
                 to_int(v[c_m], where, "M")};
      measured[k].insert(v[c_var]);
    }
    if (v[c_check] != "pass" || v[c_l2] != "cold") continue;
    if (c_pdl && v[*c_pdl] != "0" && !v[*c_pdl].empty()) continue;
    // A registry row the auto row of the problem's format may run (not an auto row; for kbit
    // problems kbit weights in any layout the harness builds for them: tiled, fragment, ...; for
    // AWQ problems the awq or awq tiled layouts), timed at its defaults.
    const VariantRow* row = nullptr;
    for (const VariantRow& r : registry())
      if (r.name == v[c_var]) row = &r;
    if (!row || !timed_at_defaults(*row, v[c_cfg])) continue;
    if (!(format == "kbit" ? auto_may_pick(*row) : awq_auto_may_pick(*row))) continue;
    char* end = nullptr;
    const double median = std::strtod(v[c_med].c_str(), &end);
    if (v[c_med].empty() || *end != '\0' || !std::isfinite(median) || median <= 0) continue;
    DispatchEntry e;
    e.format = format;
    e.k_bits = int(to_int(v[c_k], where, "k_bits"));
    e.dtype = v[c_dtype];
    e.experts = int(to_int(v[c_exp], where, "experts"));
    e.grouped = e.experts > 0;
    e.shape = v[c_shape];
    e.N = to_int(v[c_n], where, "N");
    e.K_dim = to_int(v[c_kd], where, "K_dim");
    e.M = to_int(v[c_m], where, "M");
    e.variant = v[c_var];
    e.config = v[c_cfg];
    e.median_us = median;
    e.run = run;
    e.line = number;
    // The fastest over every run; on a tie the first read (experiments in name order) stays.
    auto [it, fresh] = points.emplace(key_of(e), e);
    if (!fresh && e.median_us < it->second.median_us) it->second = e;
  }
}

// A point counts only where its runs also timed the row the fixed rule would pick there (the
// lookup without a table; AWQ points awq_auto's), when some row covers the problem: a point timed
// before that row existed (an old run of variant 01, bf16 before warp_specialized was timed in
// it) would otherwise name a slower row as the fastest. Grouped points have one grouped row of
// ours to compare and always count.
bool reference_row_timed(const DispatchEntry& e, const std::set<std::string>& timed, int sm) {
  if (e.grouped) return true;
  DispatchProblem p;
  p.awq_group = parse_weight_format(e.format);
  p.k_bits = e.k_bits, p.dtype = parse_dtype(e.dtype), p.N = e.N, p.K_dim = e.K_dim, p.M = e.M;
  try {
    return timed.count(choose_variant(nullptr, p, sm).variant) > 0;
  } catch (const Error&) {
    return true;  // no row of ours covers it: nothing is missing
  }
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Always a TOML float (a bare "42" would read back as an integer).
std::string toml_float(double v) {
  std::ostringstream s;
  s << std::setprecision(9) << v;
  std::string r = s.str();
  if (r.find_first_of(".eE") == std::string::npos) r += ".0";
  return r;
}

}  // namespace

std::vector<DispatchTable> build_dispatch_tables(const std::string& results_root) {
  if (!fs::is_directory(results_root))
    throw Error("results root '" + results_root + "' is not a folder");
  std::vector<std::string> experiments;
  for (const auto& d : fs::directory_iterator(results_root))
    if (d.is_directory() && fs::exists(d.path() / "CURRENT"))
      experiments.push_back(d.path().filename().string());
  if (experiments.empty())
    throw Error("no results/<experiment>/CURRENT under '" + results_root + "': nothing to read");
  std::sort(experiments.begin(), experiments.end());
  std::map<std::string, DispatchTable> tables;  // by GPU name
  std::map<std::string, std::map<PointKey, DispatchEntry>> points;
  std::map<std::string, Measured> measured;
  std::map<std::string, int> sm_of;  // compute capability x 10 of each GPU name
  for (const std::string& exp : experiments) {
    for (const CurrentRun& cur : read_current(results_root, exp)) {
      const nlohmann::json j =
          parse_json(read_text_file(cur.dir + "/run.json", "run.json", kMaxRunJsonBytes),
                     cur.dir + "/run.json");
      if (j.value("kind", "") == "profile") continue;  // counters (profile.csv), not timings
      const std::string& gpu = cur.gpu_name;
      tables[gpu].gpu = gpu;
      tables[gpu].runs.push_back(exp + "/" + cur.run);
      if (j["device"].contains("compute_capability") &&
          j["device"]["compute_capability"].is_string()) {
        const std::string cc = j["device"]["compute_capability"].get<std::string>();
        if (cc.size() >= 3 && cc[1] == '.') sm_of[gpu] = (cc[0] - '0') * 10 + (cc[2] - '0');
      }
      read_run_rows(cur.dir + "/results.csv", exp + "/" + cur.run, points[gpu], measured[gpu]);
    }
  }
  std::vector<DispatchTable> out;
  for (auto& [gpu, t] : tables) {
    for (auto& [key, e] : points[gpu])
      if (reference_row_timed(e, measured[gpu][key], sm_of[gpu])) t.entries.push_back(std::move(e));
    out.push_back(std::move(t));
  }
  return out;
}

std::string dispatch_file_name(const std::string& gpu) {
  std::string r;
  for (char ch : gpu) r += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return r + ".toml";
}

void write_dispatch_table(const DispatchTable& t, const std::string& path) {
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ostringstream s;
  s << "# The fastest checked variant of ours per problem on one GPU, from the CURRENT runs below\n"
       "# (check = pass, l2 = cold, plain launches, default options). Written by `kbit-harness\n"
       "# dispatch build`; the auto, grouped_auto and awq_auto rows choose by it "
       "(docs/harness.md,\n"
       "# \"Dispatch\"). Edit the runs, not this file.\n";
  s << "gpu = " << toml_string(t.gpu) << "\n";
  s << "fallback = " << toml_string(kDispatchFallbackRule) << "\n";
  s << "runs = [\n";
  for (const std::string& r : t.runs) s << "  " << toml_string(r) << ",\n";
  s << "]\n";
  s << "# One entry per (format, k_bits, dtype, problem, shape, M); run and line name the\n"
       "# results.csv row it came from (the header is line 1).\n";
  s << "entries = [\n";
  for (const DispatchEntry& e : t.entries)
    s << "  { format = " << toml_string(e.format) << ", k_bits = " << e.k_bits
      << ", dtype = " << toml_string(e.dtype)
      << ", problem = " << (e.grouped ? "\"grouped\"" : "\"dense\"")
      << ", shape = " << toml_string(e.shape) << ", N = " << e.N << ", K_dim = " << e.K_dim
      << ", experts = " << e.experts << ", M = " << e.M << ", variant = " << toml_string(e.variant)
      << ", median_us = " << toml_float(e.median_us) << ", run = " << toml_string(e.run)
      << ", line = " << e.line << ", config = " << toml_string(e.config) << " },\n";
  s << "]\n";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write '" + tmp + "'");
    f << s.str();
    if (!f.flush()) throw Error("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error("cannot rename '" + tmp + "' to '" + path + "'");
}

void print_dispatch_table(const DispatchTable& t, const std::string& path, std::ostream& out) {
  out << "dispatch table " << path << "\n"
      << "gpu: " << t.gpu << "; " << count_of(t.entries.size(), "entry", "entries") << " from "
      << count_of(t.runs.size(), "run", "runs") << ":\n";
  for (const std::string& r : t.runs) out << "  " << r << "\n";
  out << "fallback: " << kDispatchFallbackRule << "\n\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-8s %2s %-5s %-7s %-28s %7s %7s %7s %6s  %-20s %10s  %s\n",
                "format", "K", "dtype", "problem", "shape", "N", "K_dim", "experts", "M", "variant",
                "median_us", "from (run: results.csv line)");
  out << buf;
  for (const DispatchEntry& e : t.entries) {
    std::snprintf(buf, sizeof buf, "%-8s %2d %-5s %-7s %-28s %7lld %7lld %7d %6lld  %-20s %10.2f  ",
                  e.format.c_str(), e.k_bits, e.dtype.c_str(), e.grouped ? "grouped" : "dense",
                  e.shape.c_str(), (long long)e.N, (long long)e.K_dim, e.experts, (long long)e.M,
                  e.variant.c_str(), e.median_us);
    out << buf << e.run << ":" << e.line << "\n";
  }
}

int dispatch_build(const DispatchOptions& o) {
  const std::string root = o.results_root.empty() ? source_dir() + "/results" : o.results_root;
  const std::string dir = o.out_dir.empty() ? root + "/dispatch" : o.out_dir;
  const std::vector<DispatchTable> tables = build_dispatch_tables(root);
  for (const DispatchTable& t : tables) {
    const std::string path = dir + "/" + dispatch_file_name(t.gpu);
    write_dispatch_table(t, path);
    std::cout << path << ": " << count_of(t.entries.size(), "entry", "entries") << " from "
              << count_of(t.runs.size(), "run", "runs") << " on " << t.gpu << "\n";
  }
  return kExitOk;
}

int dispatch_show(const DispatchOptions& o) {
  const std::string dir =
      o.out_dir.empty()
          ? (o.results_root.empty() ? source_dir() + "/results" : o.results_root) + "/dispatch"
          : o.out_dir;
  std::vector<std::string> present;
  if (fs::is_directory(dir))
    for (const auto& f : fs::directory_iterator(dir))
      if (f.is_regular_file() && f.path().extension() == ".toml")
        present.push_back(f.path().filename().string());
  std::sort(present.begin(), present.end());
  std::string list;
  for (const std::string& p : present) list += (list.empty() ? "" : ", ") + p;
  if (list.empty()) list = "none";
  // An explicit --gpu wins; then the device's own table; then the only one there is.
  std::string gpu = o.gpu;
  if (gpu.empty() && cuda_device_available()) gpu = query_device().name;
  std::string path;
  if (!gpu.empty()) {
    path = dir + "/" + dispatch_file_name(gpu);
    if (!fs::exists(path))
      throw Error("no dispatch table for GPU '" + gpu + "' in " + dir + " (tables there: " + list +
                  "; `kbit-harness dispatch build` writes them)");
  } else if (present.size() == 1) {
    path = dir + "/" + present.front();
  } else {
    throw Error(std::string(present.empty() ? "no dispatch table" : "several dispatch tables") +
                " in " + dir + " and no CUDA device: name one with --gpu (tables there: " + list +
                ")");
  }
  const DispatchTable t = read_dispatch_table(path);
  if (!gpu.empty() && t.gpu != gpu)
    throw Error(path + " holds the table of GPU '" + t.gpu + "', not of '" + gpu + "'");
  print_dispatch_table(t, path, std::cout);
  return kExitOk;
}

}  // namespace kbit
