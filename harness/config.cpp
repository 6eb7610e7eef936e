#include "harness/config.hpp"

#include <toml++/toml.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/peers.hpp"
#include "harness/registry.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"

namespace kbit {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open experiment file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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

// An integer or a list of integers, each at least `min`.
std::vector<std::int64_t> get_int_list(const Ctx& c, const toml::node& n, const std::string& key,
                                       std::int64_t min) {
  std::vector<std::int64_t> out;
  auto add = [&](const toml::node& e) {
    const std::int64_t v = get_int(c, e, key);
    if (v < min)
      c.fail(e, key, "value " + std::to_string(v) + " is below the minimum " + std::to_string(min));
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

std::vector<std::string> get_string_list(const Ctx& c, const toml::node& n,
                                         const std::string& key) {
  std::vector<std::string> out;
  if (const auto* a = n.as_array()) {
    for (const auto& e : *a) out.push_back(get_string(c, e, key));
  } else {
    out.push_back(get_string(c, n, key));
  }
  if (out.empty()) c.fail(n, key, "must not be empty");
  return out;
}

ShapeConfig parse_shape(const Ctx& c, const toml::table& t, const toml::node& where) {
  check_keys(c, t, {"name", "k_dim", "n"}, " in a shape");
  ShapeConfig s;
  for (const char* req : {"name", "k_dim", "n"})
    if (!t.contains(req)) c.fail(where, req, "is missing from a shape (each needs name, k_dim, n)");
  s.name = get_string(c, *t.get("name"), "name");
  s.k_dim = get_int(c, *t.get("k_dim"), "k_dim");
  s.n = get_int(c, *t.get("n"), "n");
  if (s.k_dim < 32 || s.k_dim % 32 != 0)
    c.fail(*t.get("k_dim"), "k_dim",
           "= " + std::to_string(s.k_dim) + " must be a positive multiple of 32");
  if (s.n < 1) c.fail(*t.get("n"), "n", "= " + std::to_string(s.n) + " must be at least 1");
  return s;
}

void parse_shape_file(const std::string& path, std::vector<ShapeConfig>& out);

void parse_shapes(const Ctx& c, const toml::node& n, const std::string& base_dir,
                  std::vector<ShapeConfig>& out) {
  const auto* a = n.as_array();
  if (!a) c.fail(n, "shapes", "must be a list of {name, k_dim, n} or {include = \"file\"} tables");
  for (const auto& e : *a) {
    const auto* t = e.as_table();
    if (!t) c.fail(e, "shapes", "entries must be inline tables");
    if (t->contains("include")) {
      check_keys(c, *t, {"include"}, " in an include entry");
      parse_shape_file(base_dir + "/" + get_string(c, *t->get("include"), "include"), out);
    } else {
      out.push_back(parse_shape(c, *t, e));
    }
  }
}

// A shape file: model = "...", then [[shape]] tables.
void parse_shape_file(const std::string& path, std::vector<ShapeConfig>& out) {
  const Ctx c(path);
  toml::table t;
  try {
    t = toml::parse(read_file(path), path);
  } catch (const toml::parse_error& e) {
    c.fail_line(e.source().begin.line, std::string(e.description()));
  }
  check_keys(c, t, {"model", "source", "shape"}, " in a shape file");
  const auto* shapes = t.get_as<toml::array>("shape");
  if (!shapes || shapes->empty())
    throw Error(path + ": a shape file needs one or more [[shape]] tables");
  for (const auto& e : *shapes) out.push_back(parse_shape(c, *e.as_table(), e));
}

MoeConfig parse_moe(const Ctx& c, const toml::node& n) {
  const auto* t = n.as_table();
  if (!t) c.fail(n, "moe", "entries must be tables {name, experts, k_dim, n, top_k}");
  check_keys(c, *t, {"name", "experts", "k_dim", "n", "top_k"}, " in an moe entry");
  for (const char* req : {"name", "experts", "k_dim", "n", "top_k"})
    if (!t->contains(req)) c.fail(n, req, "is missing from an moe entry");
  MoeConfig m;
  m.name = get_string(c, *t->get("name"), "name");
  m.experts = int(get_int(c, *t->get("experts"), "experts"));
  m.k_dim = get_int(c, *t->get("k_dim"), "k_dim");
  m.n = get_int(c, *t->get("n"), "n");
  m.top_k = int(get_int(c, *t->get("top_k"), "top_k"));
  if (m.experts < 1 || m.experts > 4096)
    c.fail(*t->get("experts"), "experts", "must be in 1..4096");
  if (m.top_k < 1 || m.top_k > m.experts)
    c.fail(*t->get("top_k"), "top_k",
           "= " + std::to_string(m.top_k) + " must be in 1..experts (" + std::to_string(m.experts) +
               ")");
  if (m.k_dim < 32 || m.k_dim % 32 != 0)
    c.fail(*t->get("k_dim"), "k_dim", "must be a positive multiple of 32");
  if (m.n < 1) c.fail(*t->get("n"), "n", "must be at least 1");
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
  if (auto* n = t.get("warmup")) {
    tc.warmup = int(get_int(c, *n, "warmup"));
    if (tc.warmup < 0 || tc.warmup > 1000) c.fail(*n, "warmup", "must be in 0..1000");
  }
  if (auto* n = t.get("min_samples")) {
    tc.min_samples = int(get_int(c, *n, "min_samples"));
    if (tc.min_samples < 1 || tc.min_samples > 100000)
      c.fail(*n, "min_samples", "must be in 1..100000");
  }
  if (auto* n = t.get("max_samples")) {
    tc.max_samples = int(get_int(c, *n, "max_samples"));
    if (tc.max_samples < 1) c.fail(*n, "max_samples", "must be at least 1");
  }
  if (tc.max_samples < tc.min_samples) tc.max_samples = tc.min_samples;
  if (auto* n = t.get("max_rel_noise")) {
    tc.max_rel_noise = get_number(c, *n, "max_rel_noise");
    if (!(tc.max_rel_noise > 0 && tc.max_rel_noise <= 1))
      c.fail(*n, "max_rel_noise", "must be in (0, 1]");
  }
  if (auto* n = t.get("timeout_s")) {
    tc.timeout_s = get_number(c, *n, "timeout_s");
    if (!(tc.timeout_s > 0 && tc.timeout_s <= 3600))
      c.fail(*n, "timeout_s", "must be in (0, 3600]");
  }
}

void parse_check(const Ctx& c, const toml::table& t, CheckConfig& cc) {
  check_keys(c, t, {"enabled", "seed", "max_rows"}, " in [check]");
  if (auto* n = t.get("enabled")) cc.enabled = get_bool(c, *n, "enabled");
  if (auto* n = t.get("seed")) {
    const std::int64_t s = get_int(c, *n, "seed");
    if (s < 0) c.fail(*n, "seed", "must not be negative");
    cc.seed = std::uint64_t(s);
  }
  if (auto* n = t.get("max_rows")) {
    cc.max_rows = int(get_int(c, *n, "max_rows"));
    if (cc.max_rows < 2) c.fail(*n, "max_rows", "must be at least 2 (first and last row)");
  }
}

// [options.ROW] tables: ROW a registry row, each key one of its options (an integer or a
// boolean), checked against the row's ranges here, with the file and line.
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
    const auto* opts = rows_node.as_table();
    if (!opts) c.fail(rows_node, "options." + row_name, "must be a table of NAME = VALUE");
    std::vector<GivenOption> given;
    for (auto&& [k, v] : *opts) {
      const std::string key = "options." + row_name + "." + std::string(k.str());
      GivenOption g;
      g.name = std::string(k.str());
      g.where = c.path() + ":" + std::to_string(v.source().begin.line);
      if (auto b = v.value_exact<bool>())
        g.value = *b ? 1 : 0;
      else if (auto i = v.value_exact<std::int64_t>())
        g.value = *i;
      else
        c.fail(v, key, "must be an integer or true/false");
      given.push_back(g);
    }
    resolve_options(*row, given);  // throws with the file, line, value and limit
    e.options.emplace_back(row_name, std::move(given));
  }
}

}  // namespace

VariantOptions options_for(const ExperimentConfig& cfg, const VariantRow& row, SplitMode split) {
  for (const auto& [name, given] : cfg.options)
    if (name == row.name) return resolve_options(row, given, split);
  return resolve_options(row, {}, split);
}

ExperimentConfig parse_experiment(const std::string& text, const std::string& path) {
  const Ctx c(path);
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    c.fail_line(e.source().begin.line, std::string(e.description()));
  }
  check_keys(
      c, t,
      {"name", "description", "shapes", "moe", "m", "tokens", "routing", "zipf_s", "routing_seed",
       "k_bits", "dtype", "codebook", "variants", "baseline", "timing", "check", "options",
       "peers"},
      "");
  ExperimentConfig e;
  e.path = path;
  e.text = text;
  const std::string base_dir = dir_of(path);
  if (!t.contains("name")) throw Error(path + ": key 'name' is missing");
  e.name = get_string(c, *t.get("name"), "name");
  for (char ch : e.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-'))
      c.fail(*t.get("name"), "name",
             "= '" + e.name + "' may hold only letters, digits, '_' and '-' (it names a folder)");
  if (auto* n = t.get("description")) e.description = get_string(c, *n, "description");
  if (auto* n = t.get("shapes")) parse_shapes(c, *n, base_dir, e.shapes);
  if (auto* n = t.get("moe")) {
    const auto* a = n->as_array();
    if (!a) c.fail(*n, "moe", "must be a list of tables");
    for (const auto& m : *a) e.moe.push_back(parse_moe(c, m));
  }
  if (e.shapes.empty() && e.moe.empty()) throw Error(path + ": give 'shapes' or 'moe' (or both)");
  if (!e.shapes.empty()) {
    if (!t.contains("m"))
      throw Error(path + ": key 'm' (rows of A) is missing; dense shapes need it");
    e.m = get_int_list(c, *t.get("m"), "m", 1);
  } else if (t.contains("m")) {
    c.fail(*t.get("m"), "m", "is for dense shapes; this file has only moe layers (use 'tokens')");
  }
  if (!e.moe.empty()) {
    if (!t.contains("tokens")) throw Error(path + ": key 'tokens' is missing; moe layers need it");
    e.tokens = get_int_list(c, *t.get("tokens"), "tokens", 1);
  }
  if (auto* n = t.get("routing")) {
    e.routing = get_string(c, *n, "routing");
    if (e.routing != "uniform" && e.routing != "zipf")
      c.fail(*n, "routing", "= '" + e.routing + "' must be \"uniform\" or \"zipf\"");
  }
  if (auto* n = t.get("zipf_s")) {
    e.zipf_s = get_number(c, *n, "zipf_s");
    if (!(e.zipf_s > 0 && e.zipf_s < 10)) c.fail(*n, "zipf_s", "must be in (0, 10)");
  }
  if (auto* n = t.get("routing_seed"))
    e.routing_seed = std::uint64_t(get_int(c, *n, "routing_seed"));
  if (!t.contains("k_bits")) throw Error(path + ": key 'k_bits' is missing");
  for (std::int64_t k : get_int_list(c, *t.get("k_bits"), "k_bits", 0)) {
    if (k < kMinKBits || k > kMaxKBits)
      c.fail(*t.get("k_bits"), "k_bits",
             "value " + std::to_string(k) + " is outside the supported range 2..5");
    e.k_bits.push_back(int(k));
  }
  if (!t.contains("dtype")) throw Error(path + ": key 'dtype' is missing");
  for (const auto& s : get_string_list(c, *t.get("dtype"), "dtype")) {
    DType d = DType::f16;
    try {
      d = parse_dtype(s);
    } catch (const Error& err) {
      c.fail(*t.get("dtype"), "dtype", err.what());
    }
    if (d == DType::f32)
      c.fail(*t.get("dtype"), "dtype", "fp32 is not a GEMM input type here (fp16, bf16)");
    e.dtypes.push_back(d);
  }
  if (auto* n = t.get("codebook")) {
    if (const auto* a = n->as_array()) {
      e.codebook = "custom";
      for (const auto& v : *a) e.codebook_values.push_back(float(get_number(c, v, "codebook")));
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
  if (!t.contains("variants")) throw Error(path + ": key 'variants' is missing");
  e.variants = get_string_list(c, *t.get("variants"), "variants");
  if (auto* n = t.get("baseline")) e.baseline = get_string(c, *n, "baseline");
  if (auto* n = t.get("options")) parse_options(c, *n, e);
  if (auto* n = t.get("peers")) {
    e.peers = get_string_list(c, *n, "peers");
    try {
      match_peers(e.peers);
    } catch (const Error& err) {
      c.fail(*n, "peers", err.what());
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
  return e;
}

ExperimentConfig load_experiment(const std::string& path) {
  return parse_experiment(read_file(path), path);
}

std::string config_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

}  // namespace kbit
