// Reading a dispatch table (results/dispatch/<gpu>.toml) as strictly as a config: every key known,
// every field in its range, no entry twice; a refusal names the table, the line, the entry and
// the key (the lookup trusts what it reads here).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "harness/config.hpp"
#include "harness/dispatch.hpp"
#include "harness/input_file.hpp"
#include "harness/toml_input.hpp"
#include "harness/weight_format.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"

namespace kbit {
namespace {

// Errors name the table's file, the line, the entry and the key.
class TableReader {
 public:
  explicit TableReader(std::string path) : path_(std::move(path)) {}
  void set_entry(std::size_t i) { entry_ = "entry " + std::to_string(i + 1) + ": "; }
  [[noreturn]] void fail(const toml::node& n, const std::string& what) const {
    throw Error(path_ + ":" + std::to_string(n.source().begin.line) + ": " + entry_ + what);
  }
  const toml::node& need(const toml::table& t, const char* key) const {
    const toml::node* n = t.get(key);
    if (!n)
      throw Error(path_ + ":" + std::to_string(t.source().begin.line) + ": " + entry_ + "key '" +
                  key + "' is missing");
    return *n;
  }
  void known(const toml::table& t, const std::set<std::string>& keys) const {
    for (auto&& [k, v] : t)
      if (!keys.count(std::string(k.str())))
        fail(v, "key '" + std::string(k.str()) + "' is not a key of a dispatch table here");
  }
  std::string str(const toml::table& t, const char* key, bool allow_empty = false) const {
    const toml::node& n = need(t, key);
    if (!n.is_string()) fail(n, std::string("key '") + key + "' is not a string");
    std::string v = n.as_string()->get();
    if (v.empty() && !allow_empty) fail(n, std::string("key '") + key + "' is empty");
    return v;
  }
  // An integer in lo..hi, checked before it is narrowed (4294967300 is refused, never read as 4).
  std::int64_t integer(const toml::table& t, const char* key, std::int64_t lo,
                       std::int64_t hi) const {
    const toml::node& n = need(t, key);
    if (!n.is_integer()) fail(n, std::string("key '") + key + "' is not an integer");
    const std::int64_t v = n.as_integer()->get();
    if (v < lo || v > hi)
      fail(n, std::string("key '") + key + "' = " + std::to_string(v) + " is outside " +
                  std::to_string(lo) + ".." + std::to_string(hi));
    return v;
  }
  // A finite number above 0.
  double positive(const toml::table& t, const char* key) const {
    const toml::node& n = need(t, key);
    double v = 0;
    if (n.is_floating_point())
      v = n.as_floating_point()->get();
    else if (n.is_integer())
      v = double(n.as_integer()->get());
    else
      fail(n, std::string("key '") + key + "' is not a number");
    if (!std::isfinite(v) || v <= 0) {
      std::ostringstream s;
      s << v;
      fail(n, std::string("key '") + key + "' = " + s.str() + " is not a finite number above 0");
    }
    return v;
  }
  const toml::array& array(const toml::table& t, const char* key) const {
    const toml::node& n = need(t, key);
    if (!n.is_array()) fail(n, std::string("key '") + key + "' is not an array");
    return *n.as_array();
  }

 private:
  std::string path_, entry_;
};

const std::set<std::string> kEntryKeys = {"format",    "k_bits", "dtype",   "problem", "shape",
                                          "N",         "K_dim",  "experts", "M",       "variant",
                                          "median_us", "run",    "line",    "config"};

// The key `format`: absent (tables written before it) is kbit; else one of weight_format_names().
// An AWQ entry is a dense K = 4 problem of AWQ's shape rules (docs/awq_format.md).
void read_format(const TableReader& r, const toml::table& x, DispatchEntry& e) {
  if (!x.contains("format")) return;  // kbit
  e.format = r.str(x, "format");
  const std::vector<std::string>& names = weight_format_names();
  if (std::find(names.begin(), names.end(), e.format) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    r.fail(*x.get("format"), "key 'format' = '" + e.format + "' is not one of " + list);
  }
  const int group = parse_weight_format(e.format);
  if (group == 0) return;
  const std::string of = " (format '" + e.format + "')";
  if (e.k_bits != 4)
    r.fail(*x.get("k_bits"), "key 'k_bits' = " + std::to_string(e.k_bits) + " is not 4" + of);
  if (e.grouped) r.fail(*x.get("problem"), "key 'problem' = 'grouped' is not dense" + of);
  if (e.N % 8 != 0)
    r.fail(*x.get("N"), "key 'N' = " + std::to_string(e.N) + " is not a multiple of 8" + of);
  if (e.K_dim % group != 0)
    r.fail(*x.get("K_dim"), "key 'K_dim' = " + std::to_string(e.K_dim) +
                                " is not a multiple of the group " + std::to_string(group) + of);
}

DispatchEntry read_entry(const TableReader& r, const toml::node& n,
                         const std::set<std::string>& runs) {
  if (!n.is_table()) r.fail(n, "an element of 'entries' is not a table");
  const toml::table& x = *n.as_table();
  r.known(x, kEntryKeys);
  DispatchEntry e;
  e.k_bits = int(r.integer(x, "k_bits", kMinKBits, kMaxKBits));
  e.dtype = r.str(x, "dtype");
  if (e.dtype != "fp16" && e.dtype != "bf16")
    r.fail(*x.get("dtype"), "key 'dtype' = '" + e.dtype + "' is not fp16 or bf16");
  const std::string problem = r.str(x, "problem");
  if (problem != "dense" && problem != "grouped")
    r.fail(*x.get("problem"), "key 'problem' = '" + problem + "' is not dense or grouped");
  e.grouped = problem == "grouped";
  e.shape = r.str(x, "shape");
  if (e.shape.size() > kMaxNameChars)
    r.fail(*x.get("shape"),
           "key 'shape' is longer than " + std::to_string(kMaxNameChars) + " characters");
  e.N = r.integer(x, "N", 1, kMaxDim);
  e.K_dim = r.integer(x, "K_dim", 1, kMaxDim);
  if (e.K_dim % 32 != 0)
    r.fail(*x.get("K_dim"),
           "key 'K_dim' = " + std::to_string(e.K_dim) + " is not a multiple of 32");
  e.experts =
      e.grouped ? int(r.integer(x, "experts", 1, kMaxExperts)) : int(r.integer(x, "experts", 0, 0));
  e.M = r.integer(x, "M", 1, kMaxRows);
  e.variant = r.str(x, "variant");
  const VariantRow* row = nullptr;
  for (const VariantRow& v : registry())
    if (v.name == e.variant) row = &v;
  if (!row) r.fail(*x.get("variant"), "key 'variant' = '" + e.variant + "' is not a registry row");
  if (row->family != Family::gemm && row->family != Family::gemv && row->family != Family::grouped)
    r.fail(*x.get("variant"), "key 'variant' = '" + e.variant + "' is a " +
                                  family_name(row->family) +
                                  " row (entries name gemm, gemv or grouped rows)");
  if (is_auto_row(e.variant))
    r.fail(*x.get("variant"), "key 'variant' = '" + e.variant +
                                  "' is an auto row (an entry names the row it dispatches to)");
  e.median_us = r.positive(x, "median_us");
  e.run = r.str(x, "run");
  if (!runs.count(e.run))
    r.fail(*x.get("run"), "key 'run' = '" + e.run + "' is not one of the table's runs");
  e.line = r.integer(x, "line", 2, std::numeric_limits<std::int64_t>::max());
  e.config = r.str(x, "config", true);
  read_format(r, x, e);
  return e;
}

}  // namespace

DispatchTable read_dispatch_table(const std::string& path) {
  return parse_dispatch_table(read_input_file(path, "dispatch table", kMaxTableBytes), path);
}

DispatchTable parse_dispatch_table(const std::string& text, const std::string& path) {
  const toml::table root = parse_toml(text, path);
  TableReader r(path);
  r.known(root, {"gpu", "fallback", "runs", "entries"});
  DispatchTable t;
  t.gpu = r.str(root, "gpu");
  if (root.contains("fallback")) r.str(root, "fallback");  // the rule in words, for readers
  std::set<std::string> runs;
  for (const toml::node& n : r.array(root, "runs")) {
    if (!n.is_string()) r.fail(n, "an element of 'runs' is not a string");
    const std::string run = n.as_string()->get();
    const auto slash = run.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == run.size() ||
        run.find('/', slash + 1) != std::string::npos)
      r.fail(n, "'runs' entry '" + run + "' is not <experiment>/<run folder>");
    if (!runs.insert(run).second) r.fail(n, "'runs' names '" + run + "' twice");
    t.runs.push_back(run);
  }
  // One entry per point: (format, K, dtype, class, shape, N, K_dim, experts, M).
  std::map<std::tuple<std::string, int, std::string, bool, std::string, std::int64_t, std::int64_t,
                      int, std::int64_t>,
           std::uint32_t>
      lines;
  const toml::array& entries = r.array(root, "entries");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const toml::node& n = *entries.get(i);
    r.set_entry(i);
    DispatchEntry e = read_entry(r, n, runs);
    const auto [it, fresh] = lines.emplace(std::make_tuple(e.format, e.k_bits, e.dtype, e.grouped,
                                                           e.shape, e.N, e.K_dim, e.experts, e.M),
                                           n.source().begin.line);
    if (!fresh)
      r.fail(n, "the problem (" + e.format + ", K = " + std::to_string(e.k_bits) + ", " + e.dtype +
                    ", " + e.shape + ", M = " + std::to_string(e.M) +
                    ") has an entry already, on line " + std::to_string(it->second));
    t.entries.push_back(std::move(e));
  }
  return t;
}

}  // namespace kbit
