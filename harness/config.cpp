#include "harness/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "harness/config_weights.hpp"
#include "harness/input_file.hpp"
#include "harness/peers.hpp"
#include "harness/registry.hpp"
#include "harness/toml_input.hpp"
#include "harness/weight_format.hpp"
#include "reference/awq.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"

namespace kbit {
namespace {

std::string dir_of(const std::string& path) {
  const auto p = path.find_last_of('/');
  return p == std::string::npos ? "." : path.substr(0, p);
}

// Error messages name the file, the line and the key.
class Ctx {
 public:
  explicit Ctx(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const toml::node& n, const std::string& key,
                         const std::string& msg) const {
    throw Error(path_ + ":" + std::to_string(n.source().begin.line) + ": key '" + key + "' " + msg);
  }
  [[noreturn]] void fail_line(std::uint32_t line, const std::string& msg) const {
    throw Error(path_ + ":" + std::to_string(line) + ": " + msg);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void check_keys(const Ctx& c, const toml::table& t, const std::set<std::string>& known,
                const std::string& where) {
  for (auto&& [k, v] : t) {
    if (known.count(std::string(k.str()))) continue;
    std::string list;
    for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
    c.fail(v, std::string(k.str()), "is not known" + where + " (known keys: " + list + ")");
  }
}

std::int64_t get_int(const Ctx& c, const toml::node& n, const std::string& key) {
  if (auto v = n.value_exact<std::int64_t>()) return *v;
  c.fail(n, key, "must be an integer");
}

double get_number(const Ctx& c, const toml::node& n, const std::string& key) {
  if (n.is_integer()) return double(*n.value_exact<std::int64_t>());
  if (auto v = n.value_exact<double>()) return *v;
  c.fail(n, key, "must be a number");
}

std::string get_string(const Ctx& c, const toml::node& n, const std::string& key) {
  if (auto v = n.value_exact<std::string>()) return *v;
  c.fail(n, key, "must be a string");
}

bool get_bool(const Ctx& c, const toml::node& n, const std::string& key) {
  if (auto v = n.value_exact<bool>()) return *v;
  c.fail(n, key, "must be true or false");
}

// A number as the file wrote it (nan, inf, 1e40), for messages.
std::string toml_text(const toml::node& n) {
  std::ostringstream s;
  if (const auto* f = n.as_floating_point())
    s << f->get();
  else if (const auto* i = n.as_integer())
    s << i->get();
  else
    s << "(" << n.type() << ")";
  return s.str();
}

// An integer in lo..hi (checked before it is narrowed to an int, so that 2^32 + 1 is refused
// rather than read as 1).
std::int64_t get_int_in(const Ctx& c, const toml::node& n, const std::string& key, std::int64_t lo,
                        std::int64_t hi) {
  const std::int64_t v = get_int(c, n, key);
  if (v < lo || v > hi)
    c.fail(
        n, key,
        "= " + std::to_string(v) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

// A size above its limit (config.hpp says why each limit is where it is).
void check_limit(const Ctx& c, const toml::node& n, const std::string& key, std::int64_t v,
                 std::int64_t limit, const std::string& why) {
  if (v > limit)
    c.fail(n, key,
           "= " + std::to_string(v) + " is above the limit " + std::to_string(limit) + " (" + why +
               ")");
}

constexpr const char* kDimWhy =
    "N and K_dim of LLM layers, a 256k-token vocabulary projection included, stay far below it";
constexpr const char* kRowsWhy = "rows of A; a 1Mi-token problem is beyond any layer benchmark";

// N x K_dim of one weight (of one expert) within kMaxWeightElems.
void check_weight_elems(const Ctx& c, const toml::node& where, std::int64_t n, std::int64_t k_dim,
                        const std::string& what) {
  if (n * k_dim > kMaxWeightElems)
    c.fail(where, "n",
           "x k_dim = " + std::to_string(n) + " x " + std::to_string(k_dim) + " = " +
               std::to_string(n * k_dim) + " elements" + what + " is above the limit " +
               std::to_string(kMaxWeightElems) +
               " (the kernels index a weight's elements with int)");
}

// An integer or a list of integers, each in min..max (`why`: the reason for max), none twice.
// `check(entry, value)`, when given, sees each value first and fails with the entry's line.
std::vector<std::int64_t> get_int_list(
    const Ctx& c, const toml::node& n, const std::string& key, std::int64_t min,
    std::int64_t max = std::numeric_limits<std::int64_t>::max(), const std::string& why = "",
    const std::function<void(const toml::node&, std::int64_t)>& check = {}) {
  std::vector<std::int64_t> out;
  auto add = [&](const toml::node& e) {
    const std::int64_t v = get_int(c, e, key);
    if (check) check(e, v);
    if (v < min)
      c.fail(e, key, "value " + std::to_string(v) + " is below the minimum " + std::to_string(min));
    check_limit(c, e, key, v, max, why);
    if (std::find(out.begin(), out.end(), v) != out.end())
      c.fail(e, key, "names " + std::to_string(v) + " twice");
    out.push_back(v);
  };
  if (const auto* a = n.as_array()) {
    for (const auto& e : *a) add(e);
  } else {
    add(n);
  }
  if (out.empty()) c.fail(n, key, "must not be empty");
  return out;
}

// A string or a list of strings, none empty, none twice. `check(entry, value)`, when given, sees
// each value after those rules and fails with the entry's line.
std::vector<std::string> get_string_list(
    const Ctx& c, const toml::node& n, const std::string& key,
    const std::function<void(const toml::node&, const std::string&)>& check = {}) {
  std::vector<std::string> out;
  auto add = [&](const toml::node& e) {
    std::string v = get_string(c, e, key);
    if (v.empty()) c.fail(e, key, "holds an empty string");
    if (std::find(out.begin(), out.end(), v) != out.end())
      c.fail(e, key, "names \"" + v + "\" twice");
    if (check) check(e, v);
    out.push_back(std::move(v));
  };
  if (const auto* a = n.as_array()) {
    for (const auto& e : *a) add(e);
  } else {
    add(n);
  }
  if (out.empty()) c.fail(n, key, "must not be empty");
  return out;
}

// A name that labels a CSV row or a plot (a shape's, an MoE layer's): 1..kMaxNameChars printable
// characters.
std::string get_name(const Ctx& c, const toml::node& n, const std::string& key) {
  const std::string v = get_string(c, n, key);
  if (v.empty()) c.fail(n, key, "must not be empty");
  if (v.size() > kMaxNameChars)
    c.fail(n, key,
           "is " + std::to_string(v.size()) + " characters long, above the limit " +
               std::to_string(kMaxNameChars));
  for (char ch : v)
    if (!std::isprint(static_cast<unsigned char>(ch)))
      c.fail(n, key, "= '" + v + "' holds a character that is not printable ASCII");
  return v;
}

// A shape's or an MoE layer's name must differ from every one before it (the CSV's shape column,
// --shapes, the plots tell them apart by it).
void check_new_name(const Ctx& c, const toml::node& n, const std::string& name,
                    const std::vector<ShapeConfig>& shapes, const std::vector<MoeConfig>& moe) {
  const bool seen =
      std::any_of(shapes.begin(), shapes.end(), [&](auto& s) { return s.name == name; }) ||
      std::any_of(moe.begin(), moe.end(), [&](auto& m) { return m.name == name; });
  if (seen)
    c.fail(n, "name",
           "= '" + name + "' is the name of an earlier shape or moe layer; names must be unique");
}

// A shape {name, k_dim, n} or {name, weights[, k_dim, n]}: file weights give n and k_dim when the
// shape leaves them out, and must match them when it gives them (harness/config_weights.hpp).
void parse_shape(const Ctx& c, const toml::table& t, const toml::node& where,
                 const std::string& base_dir, std::vector<ShapeConfig>& out) {
  check_keys(c, t, {"name", "k_dim", "n", "weights"}, " in a shape");
  ShapeConfig s;
  const toml::node* wn = t.get("weights");
  for (const char* req : {"name", "k_dim", "n"})
    if (!t.contains(req) && (!wn || std::string(req) == "name"))
      c.fail(where, req,
             "is missing from a shape (each needs name, k_dim, n; or name and weights, whose "
             "tensors give k_dim and n)");
  s.name = get_name(c, *t.get("name"), "name");
  const toml::node* kn = t.get("k_dim");
  const toml::node* nn = t.get("n");
  if (kn) {
    s.k_dim = get_int(c, *kn, "k_dim");
    if (s.k_dim < 32 || s.k_dim % 32 != 0)
      c.fail(*kn, "k_dim", "= " + std::to_string(s.k_dim) + " must be a positive multiple of 32");
  }
  if (nn) {
    s.n = get_int(c, *nn, "n");
    if (s.n < 1) c.fail(*nn, "n", "= " + std::to_string(s.n) + " must be at least 1");
  }
  if (kn) check_limit(c, *kn, "k_dim", s.k_dim, kMaxDim, kDimWhy);
  if (nn) check_limit(c, *nn, "n", s.n, kMaxDim, kDimWhy);
  check_new_name(c, *t.get("name"), s.name, out, {});
  if (wn) {
    s.weights = parse_file_weights(*wn, c.path(), base_dir, s.name);
    auto match = [&](const toml::node* given, const char* key, std::int64_t v,
                     std::int64_t theirs) {
      if (given && v != theirs)
        c.fail(*given, key,
               "= " + std::to_string(v) + " of shape '" + s.name + "' is not its weights' (" +
                   file_weights_text(s.weights) + "); give " + key + " = " +
                   std::to_string(theirs) + " or leave it out");
    };
    match(nn, "n", s.n, s.weights.n);
    match(kn, "k_dim", s.k_dim, s.weights.k_dim);
    s.n = s.weights.n;
    s.k_dim = s.weights.k_dim;
  }
  check_weight_elems(c, where, s.n, s.k_dim, "");
  out.push_back(std::move(s));
}

void parse_shape_file(const std::string& text, const std::string& path,
                      std::vector<ShapeConfig>& out);

void parse_shapes(const Ctx& c, const toml::node& n, const std::string& base_dir,
                  std::vector<ShapeConfig>& out) {
  const auto* a = n.as_array();
  if (!a) c.fail(n, "shapes", "must be a list of {name, k_dim, n} or {include = \"file\"} tables");
  for (const auto& e : *a) {
    const auto* t = e.as_table();
    if (!t) c.fail(e, "shapes", "entries must be inline tables");
    if (t->contains("include")) {
      check_keys(c, *t, {"include"}, " in an include entry");
      const toml::node& inc = *t->get("include");
      const std::string rel = get_string(c, inc, "include");
      const std::string file = !rel.empty() && rel[0] == '/' ? rel : base_dir + "/" + rel;
      std::string text;
      try {
        text = read_input_file(file, "shape file", kMaxConfigBytes);
      } catch (const Error& err) {
        c.fail(inc, "include",
               "= \"" + rel + "\": " + err.what() +
                   " (a relative include is read from the config's folder)");
      }
      parse_shape_file(text, file, out);
    } else {
      parse_shape(c, *t, e, base_dir, out);
    }
  }
}

// A shape file: model = "...", then [[shape]] tables.
void parse_shape_file(const std::string& text, const std::string& path,
                      std::vector<ShapeConfig>& out) {
  const Ctx c(path);
  const toml::table t = parse_toml(text, path);
  check_keys(c, t, {"model", "source", "shape"}, " in a shape file");
  for (const char* key : {"model", "source"})
    if (const auto* n = t.get(key)) get_string(c, *n, key);
  const auto* shapes = t.get_as<toml::array>("shape");
  if (!shapes || shapes->empty())
    throw Error(path + ": a shape file needs one or more [[shape]] tables");
  for (const auto& e : *shapes) {
    if (!e.is_table()) c.fail(e, "shape", "entries must be [[shape]] tables {name, k_dim, n}");
    parse_shape(c, *e.as_table(), e, dir_of(path), out);
  }
}

MoeConfig parse_moe(const Ctx& c, const toml::node& n) {
  const auto* t = n.as_table();
  if (!t) c.fail(n, "moe", "entries must be tables {name, experts, k_dim, n, top_k}");
  if (const toml::node* w = t->get("weights"))
    c.fail(*w, "weights",
           "is for dense shapes: an moe layer draws N(0,1) weights for each of its experts (a "
           "file's tensor is one weight; give it as a shape)");
  check_keys(c, *t, {"name", "experts", "k_dim", "n", "top_k", "routing"}, " in an moe entry");
  for (const char* req : {"name", "experts", "k_dim", "n", "top_k"})
    if (!t->contains(req)) c.fail(n, req, "is missing from an moe entry");
  MoeConfig m;
  m.name = get_name(c, *t->get("name"), "name");
  // experts: the largest MoE models route over a few hundred experts.
  m.experts = int(get_int_in(c, *t->get("experts"), "experts", 1, kMaxExperts));
  m.k_dim = get_int(c, *t->get("k_dim"), "k_dim");
  m.n = get_int(c, *t->get("n"), "n");
  const std::int64_t top_k = get_int(c, *t->get("top_k"), "top_k");
  if (top_k < 1 || top_k > m.experts)
    c.fail(*t->get("top_k"), "top_k",
           "= " + std::to_string(top_k) + " must be in 1..experts (" + std::to_string(m.experts) +
               ")");
  m.top_k = int(top_k);
  if (auto* r = t->get("routing")) {  // one layer routed unlike the experiment's default
    m.routing = get_string(c, *r, "routing");
    if (m.routing != "uniform" && m.routing != "zipf")
      c.fail(*r, "routing", "= '" + m.routing + "' must be \"uniform\" or \"zipf\"");
  }
  if (m.k_dim < 32 || m.k_dim % 32 != 0)
    c.fail(*t->get("k_dim"), "k_dim",
           "= " + std::to_string(m.k_dim) + " must be a positive multiple of 32");
  if (m.n < 1) c.fail(*t->get("n"), "n", "= " + std::to_string(m.n) + " must be at least 1");
  check_limit(c, *t->get("k_dim"), "k_dim", m.k_dim, kMaxDim, kDimWhy);
  check_limit(c, *t->get("n"), "n", m.n, kMaxDim, kDimWhy);
  check_weight_elems(c, n, m.n, m.k_dim, " per expert");
  return m;
}

void parse_timing(const Ctx& c, const toml::table& t, TimingConfig& tc) {
  check_keys(c, t,
             {"mode", "warmup", "min_samples", "max_samples", "max_rel_noise", "timeout_s", "pdl"},
             " in [timing]");
  if (auto* n = t.get("pdl")) tc.pdl = get_bool(c, *n, "pdl");
  if (auto* n = t.get("mode")) {
    const std::string m = get_string(c, *n, "mode");
    if (m != "cold" && m != "hot") c.fail(*n, "mode", "= '" + m + "' must be \"cold\" or \"hot\"");
    tc.cold = m == "cold";
  }
  if (auto* n = t.get("warmup")) tc.warmup = int(get_int_in(c, *n, "warmup", 0, kMaxWarmup));
  if (auto* n = t.get("min_samples"))
    tc.min_samples = int(get_int_in(c, *n, "min_samples", 1, kMaxMinSamples));
  if (auto* n = t.get("max_samples"))
    tc.max_samples = int(get_int_in(c, *n, "max_samples", 1, kMaxMaxSamples));
  if (tc.max_samples < tc.min_samples) {
    const toml::node* at = t.get("max_samples") ? t.get("max_samples") : t.get("min_samples");
    c.fail(*at, at == t.get("max_samples") ? "max_samples" : "min_samples",
           "gives min_samples = " + std::to_string(tc.min_samples) + " above max_samples = " +
               std::to_string(tc.max_samples) + (t.get("max_samples") ? "" : " (the default)") +
               "; give max_samples >= min_samples");
  }
  if (auto* n = t.get("max_rel_noise")) {
    tc.max_rel_noise = get_number(c, *n, "max_rel_noise");
    if (!(tc.max_rel_noise > 0 && tc.max_rel_noise <= 1))
      c.fail(*n, "max_rel_noise", "= " + toml_text(*n) + " must be in (0, 1]");
  }
  if (auto* n = t.get("timeout_s")) {
    tc.timeout_s = get_number(c, *n, "timeout_s");
    if (!(tc.timeout_s > 0 && tc.timeout_s <= kMaxTimeoutS))
      c.fail(*n, "timeout_s", "= " + toml_text(*n) + " must be in (0, 3600]");
  }
}

void parse_check(const Ctx& c, const toml::table& t, CheckConfig& cc) {
  check_keys(c, t, {"enabled", "seed", "max_rows"}, " in [check]");
  if (auto* n = t.get("enabled")) cc.enabled = get_bool(c, *n, "enabled");
  if (auto* n = t.get("seed"))
    cc.seed = std::uint64_t(get_int_in(c, *n, "seed", 0, std::numeric_limits<std::int64_t>::max()));
  if (auto* n = t.get("max_rows")) {
    if (!cc.enabled) c.fail(*n, "max_rows", "sets the check's rows; [check] enabled = false");
    const std::int64_t r = get_int(c, *n, "max_rows");
    if (r < 2)
      c.fail(*n, "max_rows",
             "= " + std::to_string(r) + " must be at least 2 (the first and the last row)");
    check_limit(c, *n, "max_rows", r, kMaxRows, kRowsWhy);  // more than M checks every row
    cc.max_rows = int(r);
  }
}

// `variants`: each name or glob matches a registry row; `baseline`: a registry row.
void parse_rows(const Ctx& c, const toml::table& t, ExperimentConfig& e) {
  const toml::node& vn = *t.get("variants");
  const toml::array* list = vn.as_array();
  for (std::size_t i = 0; i < e.variants.size(); ++i) {
    try {
      match_variants({e.variants[i]});
    } catch (const Error& err) {
      c.fail(list ? *list->get(i) : vn, "variants", err.what());
    }
  }
  if (auto* n = t.get("baseline")) {
    e.baseline = get_string(c, *n, "baseline");
    try {
      find_variant(e.baseline);
    } catch (const Error& err) {
      c.fail(*n, "baseline", err.what());
    }
  }
}

// [options.ROW] tables: ROW a registry row the config runs (one of its variants or its
// baseline), each key one of its options (an integer or a boolean), checked against the row's
// range and rules here, with the file and line.
void parse_options(const Ctx& c, const toml::node& n, ExperimentConfig& e) {
  const auto* t = n.as_table();
  if (!t) c.fail(n, "options", "must be a table of [options.ROW] tables");
  for (auto&& [row_key, rows_node] : *t) {
    const std::string row_name(row_key.str());
    const VariantRow* row = nullptr;
    try {
      row = &find_variant(row_name);
    } catch (const Error& err) {
      c.fail(rows_node, "options." + row_name, err.what());
    }
    const auto runs = match_variants(e.variants);
    if (row->name != e.baseline && std::find(runs.begin(), runs.end(), row) == runs.end())
      c.fail(rows_node, "options." + row_name,
             "sets options of " + row_name +
                 ", which this config does not run (not among its variants or its baseline)");
    const auto* opts = rows_node.as_table();
    if (!opts) c.fail(rows_node, "options." + row_name, "must be a table of NAME = VALUE");
    std::vector<GivenOption> given;
    for (auto&& [k, v] : *opts) {
      const std::string key = "options." + row_name + "." + std::string(k.str());
      GivenOption g;
      g.name = std::string(k.str());
      g.where = c.path() + ":" + std::to_string(v.source().begin.line);
      if (auto b = v.value_exact<bool>()) {
        g.value = *b ? 1 : 0;
        g.boolean = true;
      } else if (auto i = v.value_exact<std::int64_t>())
        g.value = *i;
      else
        c.fail(v, key, "must be an integer or true/false");
      given.push_back(g);
    }
    resolve_options(*row, given);  // throws with the file, line, value and limit
    e.options.emplace_back(row_name, std::move(given));
  }
}

// `formats`: known names, none twice; AWQ formats only for dense shapes AWQ can hold (N % 8,
// K_dim % G), never beside MoE layers (AWQ problems are dense).
void parse_formats(const Ctx& c, const toml::node& n, ExperimentConfig& e) {
  e.formats = get_string_list(c, n, "formats");
  for (std::size_t i = 0; i < e.formats.size(); ++i) {
    const std::string& f = e.formats[i];
    int group = 0;
    try {
      group = parse_weight_format(f);
    } catch (const Error& err) {
      c.fail(n, "formats", std::string("= \"") + f + "\": " + err.what());
    }
    if (std::find(e.formats.begin(), e.formats.begin() + std::ptrdiff_t(i), f) !=
        e.formats.begin() + std::ptrdiff_t(i))
      c.fail(n, "formats", "names \"" + f + "\" twice");
    if (group == 0) continue;
    if (!e.moe.empty())
      c.fail(n, "formats",
             "= \"" + f + "\": AWQ problems are dense only, and this file has moe layers ('" +
                 e.moe.front().name + "'); run them from a config of their own");
    for (const ShapeConfig& s : e.shapes) {
      try {
        awq_check_shape(s.k_dim, s.n, group);
      } catch (const Error& err) {
        c.fail(n, "formats",
               "= \"" + f + "\": shape '" + s.name + "' (n = " + std::to_string(s.n) +
                   ", k_dim = " + std::to_string(s.k_dim) +
                   ") cannot hold AWQ weights: " + err.what());
      }
    }
  }
}

}  // namespace

bool ExperimentConfig::has_kbit() const {
  return std::find(formats.begin(), formats.end(), "kbit") != formats.end();
}

std::vector<int> ExperimentConfig::awq_groups() const {
  std::vector<int> g;
  for (const std::string& f : formats)
    if (const int group = parse_weight_format(f); group > 0) g.push_back(group);
  return g;
}

VariantOptions options_for(const ExperimentConfig& cfg, const VariantRow& row, SplitMode split) {
  for (const auto& [name, given] : cfg.options)
    if (name == row.name) return resolve_options(row, given, split);
  return resolve_options(row, {}, split);
}

ExperimentConfig parse_experiment(const std::string& text, const std::string& path) {
  const Ctx c(path);
  const toml::table t = parse_toml(text, path);
  check_keys(c, t,
             {"name", "description", "shapes", "moe", "m", "tokens", "routing", "zipf_s",
              "routing_seed", "formats", "k_bits", "dtype", "codebook", "variants", "baseline",
              "timing", "check", "options", "peers"},
             "");
  ExperimentConfig e;
  e.path = path;
  e.text = text;
  const std::string base_dir = dir_of(path);
  if (!t.contains("name")) throw Error(path + ": key 'name' is missing");
  e.name = get_name(c, *t.get("name"), "name");
  for (char ch : e.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-'))
      c.fail(*t.get("name"), "name",
             "= '" + e.name + "' may hold only letters, digits, '_' and '-' (it names a folder)");
  if (auto* n = t.get("description")) {
    e.description = get_string(c, *n, "description");
    if (e.description.size() > kMaxDescriptionChars)
      c.fail(*n, "description",
             "is " + std::to_string(e.description.size()) + " characters long, above the limit " +
                 std::to_string(kMaxDescriptionChars));
  }
  if (auto* n = t.get("shapes")) parse_shapes(c, *n, base_dir, e.shapes);
  if (auto* n = t.get("moe")) {
    const auto* a = n->as_array();
    if (!a) c.fail(*n, "moe", "must be a list of tables");
    for (const auto& m : *a) {
      MoeConfig layer = parse_moe(c, m);
      check_new_name(c, *m.as_table()->get("name"), layer.name, e.shapes, e.moe);
      e.moe.push_back(std::move(layer));
    }
  }
  if (e.shapes.empty() && e.moe.empty()) throw Error(path + ": give 'shapes' or 'moe' (or both)");
  if (!e.shapes.empty()) {
    if (!t.contains("m"))
      throw Error(path + ": key 'm' (rows of A) is missing; dense shapes need it");
    e.m = get_int_list(c, *t.get("m"), "m", 1, kMaxRows, kRowsWhy);
  } else if (t.contains("m")) {
    c.fail(*t.get("m"), "m", "is for dense shapes; this file has only moe layers (use 'tokens')");
  }
  if (!e.moe.empty()) {
    if (!t.contains("tokens")) throw Error(path + ": key 'tokens' is missing; moe layers need it");
    e.tokens = get_int_list(c, *t.get("tokens"), "tokens", 1, kMaxRows, kRowsWhy);
    // Each token is a row of A for each of its top_k experts.
    const std::int64_t most = *std::max_element(e.tokens.begin(), e.tokens.end());
    for (const MoeConfig& m : e.moe)
      if (most * m.top_k > kMaxRows)
        c.fail(*t.get("tokens"), "tokens",
               "= " + std::to_string(most) + " with top_k " + std::to_string(m.top_k) + " of '" +
                   m.name + "' makes " + std::to_string(most * m.top_k) +
                   " rows of A, above the limit " + std::to_string(kMaxRows) + " (" + kRowsWhy +
                   ")");
  } else if (t.contains("tokens")) {
    c.fail(*t.get("tokens"), "tokens",
           "is for moe layers; this file has none (dense shapes use 'm')");
  }
  // The routing keys route MoE layers' tokens: in a file without them they would do nothing.
  for (const char* key : {"routing", "zipf_s", "routing_seed"})
    if (e.moe.empty() && t.contains(key))
      c.fail(*t.get(key), key, "routes the tokens of moe layers; this file has none");
  if (auto* n = t.get("routing")) {
    e.routing = get_string(c, *n, "routing");
    if (e.routing != "uniform" && e.routing != "zipf")
      c.fail(*n, "routing", "= '" + e.routing + "' must be \"uniform\" or \"zipf\"");
  }
  if (auto* n = t.get("zipf_s")) {
    e.zipf_s = get_number(c, *n, "zipf_s");
    if (!(e.zipf_s > 0 && e.zipf_s < kMaxZipfS))
      c.fail(*n, "zipf_s", "= " + toml_text(*n) + " must be in (0, 10)");
    const bool zipf = e.routing == "zipf" || std::any_of(e.moe.begin(), e.moe.end(), [](auto& m) {
                        return m.routing == "zipf";
                      });
    if (!zipf) c.fail(*n, "zipf_s", "shapes zipf routing; no layer of this file is routed by zipf");
  }
  if (auto* n = t.get("routing_seed"))
    e.routing_seed = std::uint64_t(
        get_int_in(c, *n, "routing_seed", 0, std::numeric_limits<std::int64_t>::max()));
  if (auto* n = t.get("formats")) parse_formats(c, *n, e);
  check_weights_formats(e);
  if (e.has_kbit()) {
    if (!t.contains("k_bits"))
      throw Error(path + ": key 'k_bits' is missing (the \"kbit\" format runs its bit widths)");
    auto k_range = [&](const toml::node& entry, std::int64_t k) {
      if (k < kMinKBits || k > kMaxKBits)
        c.fail(entry, "k_bits",
               "value " + std::to_string(k) + " is outside the supported range " +
                   std::to_string(kMinKBits) + ".." + std::to_string(kMaxKBits));
    };
    for (std::int64_t k :
         get_int_list(c, *t.get("k_bits"), "k_bits", kMinKBits, kMaxKBits, "", k_range))
      e.k_bits.push_back(int(k));
  } else if (t.contains("k_bits")) {
    c.fail(*t.get("k_bits"), "k_bits",
           "is for kbit weights; 'formats' has no \"kbit\" (AWQ weights are 4-bit)");
  }
  if (!t.contains("dtype")) throw Error(path + ": key 'dtype' is missing");
  // Each entry a GEMM input type, none twice under another spelling ("half" is fp16).
  std::vector<std::string> spelled;
  get_string_list(c, *t.get("dtype"), "dtype", [&](const toml::node& entry, const std::string& s) {
    // parse_dtype knows fp32 too, which is no GEMM input type here: list only what is allowed.
    DType d = DType::f32;
    try {
      d = parse_dtype(s);
    } catch (const Error&) {
    }
    if (d == DType::f32)
      c.fail(entry, "dtype", "= '" + s + "' is not one of the GEMM input types fp16, bf16");
    const auto seen = std::find(e.dtypes.begin(), e.dtypes.end(), d);
    if (seen != e.dtypes.end())
      c.fail(entry, "dtype",
             "= '" + s + "' is " + dtype_name(d) + ", which '" +
                 spelled[std::size_t(seen - e.dtypes.begin())] + "' names already");
    e.dtypes.push_back(d);
    spelled.push_back(s);
  });
  if (auto* n = t.get("codebook")) {
    if (!e.has_kbit()) c.fail(*n, "codebook", "is for kbit weights; 'formats' has no \"kbit\"");
    if (const auto* a = n->as_array()) {
      e.codebook = "custom";
      for (const auto& v : *a) {
        // Each entry a finite float32: nan, inf and 1e40 (inf once rounded) are refused here.
        const double x = get_number(c, v, "codebook");
        if (!std::isfinite(x) || std::fabs(x) > double(FLT_MAX))
          c.fail(v, "codebook",
                 "entry " + std::to_string(e.codebook_values.size()) + " = " + toml_text(v) +
                     " is not a finite float32 (|value| <= 3.4e38)");
        e.codebook_values.push_back(float(x));
      }
      for (int k : e.k_bits) {
        if (e.codebook_values.size() != (std::size_t(1) << k))
          c.fail(*n, "codebook",
                 "has " + std::to_string(e.codebook_values.size()) +
                     " values; K = " + std::to_string(k) + " needs " + std::to_string(1 << k));
      }
    } else {
      e.codebook = get_string(c, *n, "codebook");
      try {
        make_codebook(e.codebook, 2);
      } catch (const Error& err) {
        c.fail(*n, "codebook", err.what());
      }
    }
  }
  if (auto* n = t.get("timing")) {
    if (!n->is_table()) c.fail(*n, "timing", "must be a table [timing]");
    parse_timing(c, *n->as_table(), e.timing);
  }
  if (auto* n = t.get("check")) {
    if (!n->is_table()) c.fail(*n, "check", "must be a table [check]");
    parse_check(c, *n->as_table(), e.check);
  }
  if (!t.contains("variants")) throw Error(path + ": key 'variants' is missing");
  e.variants = get_string_list(c, *t.get("variants"), "variants");
  parse_rows(c, t, e);
  if (auto* n = t.get("options")) parse_options(c, *n, e);
  if (auto* n = t.get("peers")) {
    e.peers = get_string_list(c, *n, "peers");
    try {
      match_peers(e.peers);
    } catch (const Error& err) {
      c.fail(*n, "peers", err.what());
    }
  }
  return e;
}

ExperimentConfig load_experiment(const std::string& path) {
  return parse_experiment(read_input_file(path, "experiment file", kMaxConfigBytes), path);
}

std::string config_hash(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;  // the FNV offset basis, 0xcbf29ce484222325
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

}  // namespace kbit
