#include "harness/config_weights.hpp"

#include <algorithm>
#include <cstdio>

#include "harness/safetensors.hpp"
#include "harness/weight_format.hpp"
#include "reference/awq.hpp"
#include "reference/error.hpp"

namespace kbit {
namespace {

std::string hex16(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

// Errors name the config, the line, the key and the shape.
class WeightsCtx {
 public:
  WeightsCtx(const std::string& config, const std::string& shape)
      : config_(config), shape_(shape) {}
  [[noreturn]] void fail(const toml::node& n, const std::string& key,
                         const std::string& msg) const {
    throw Error(at(n) + ": key '" + key + "' of shape '" + shape_ + "' " + msg);
  }
  // A refusal of the safetensors reader (it names the file, the tensor and the value).
  [[noreturn]] void fail(const toml::node& n, const std::string& key, const Error& err) const {
    throw Error(at(n) + ": key '" + key + "' of shape '" + shape_ + "': " + err.what());
  }
  std::string at(const toml::node& n) const {
    return config_ + ":" + std::to_string(n.source().begin.line);
  }

 private:
  std::string config_, shape_;
};

constexpr const char* kKeys = "file, tensor, qweight, qzeros, scales";

std::string shape2(std::int64_t a, std::int64_t b) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
}

// N and K_dim of a weight within the config's limits (config.hpp), naming the tensor.
void check_dims(const std::string& what, std::int64_t n, std::int64_t k_dim) {
  if (n > kMaxDim || k_dim > kMaxDim)
    throw Error(what + ": N = " + std::to_string(n) + ", K_dim = " + std::to_string(k_dim) +
                "; each is at most " + std::to_string(kMaxDim) + " (the limit of n and k_dim)");
  if (n * k_dim > kMaxWeightElems)
    throw Error(what + ": N x K_dim = " + std::to_string(n * k_dim) +
                " elements is above the limit " + std::to_string(kMaxWeightElems) +
                " (the kernels index a weight's elements with int)");
}

// The float weight `tensor`: its N and K_dim, dtype and hash into w.
void check_tensor(const SafetensorsFile& f, FileWeights& w) {
  const SafetensorsEntry& e = expect_weight_matrix(f, w.tensor, kMaxWeightElems);
  check_dims("tensor '" + w.tensor + "' in safetensors file '" + f.path() + "' " + e.shape_text(),
             e.shape[0], e.shape[1]);
  check_finite_tensor(f, e);
  w.n = e.shape[0];
  w.k_dim = e.shape[1];
  w.tensor_dtype = e.dtype_name;
  w.tensor_hash = tensor_fnv1a(f, e);
}

// The AWQ tensors: N and K_dim from qweight's rows and scales' columns, the group from scales'
// rows; each shape and dtype checked; their hashes into w.
void check_awq(const SafetensorsFile& f, FileWeights& w) {
  const std::string in = "' in safetensors file '" + f.path() + "'";
  const SafetensorsEntry& qw = f.expect(w.qweight, {StDtype::i32}, {-1, -1});
  const SafetensorsEntry& sc = f.expect(w.scales, {StDtype::f16}, {-1, -1});
  const std::int64_t k_dim = qw.shape[0], n = sc.shape[1], groups = sc.shape[0];
  const std::string what = "qweight '" + w.qweight + in + " " + qw.shape_text() + ", scales '" +
                           w.scales + "' " + sc.shape_text();
  if (groups < 1 || k_dim % groups != 0)
    throw Error(what + ": scales has " + std::to_string(groups) + " rows (groups) for K_dim = " +
                std::to_string(k_dim) + " (qweight's rows); the group K_dim / rows must be whole");
  const std::int64_t group = k_dim / groups;
  try {
    awq_check_shape(k_dim, n, int(std::min<std::int64_t>(group, 1 << 30)));
  } catch (const Error& err) {
    throw Error(what + " (N = " + std::to_string(n) + ", K_dim = " + std::to_string(k_dim) +
                ", group " + std::to_string(group) + "): " + err.what());
  }
  check_dims(what, n, k_dim);
  f.expect(w.qweight, {StDtype::i32}, {k_dim, n / 8});  // N / 8 words a row
  const SafetensorsEntry& qz = f.expect(w.qzeros, {StDtype::i32}, {groups, n / 8});
  check_finite_tensor(f, sc);
  w.n = n;
  w.k_dim = k_dim;
  w.awq_group = int(group);
  w.awq_hash[0] = tensor_fnv1a(f, qw);
  w.awq_hash[1] = tensor_fnv1a(f, qz);
  w.awq_hash[2] = tensor_fnv1a(f, sc);
}

}  // namespace

FileWeights parse_file_weights(const toml::node& n, const std::string& config_path,
                               const std::string& base_dir, const std::string& shape) {
  const WeightsCtx c(config_path, shape);
  const toml::table* t = n.as_table();
  if (!t)
    c.fail(n, "weights",
           "must be a table { file = \"FILE.safetensors\", tensor = \"NAME\" } (or qweight, qzeros "
           "and scales: AWQ tensors)");
  FileWeights w;
  w.at = c.at(n);
  const toml::node* file_node = nullptr;
  const toml::node* tensor_node = nullptr;
  const toml::node* awq_node = nullptr;
  for (auto&& [k, v] : *t) {
    const std::string key(k.str());
    std::string* dst = key == "file"      ? &w.file
                       : key == "tensor"  ? &w.tensor
                       : key == "qweight" ? &w.qweight
                       : key == "qzeros"  ? &w.qzeros
                       : key == "scales"  ? &w.scales
                                          : nullptr;
    if (!dst)
      c.fail(v, "weights." + key, std::string("is not known in weights (known: ") + kKeys + ")");
    const auto s = v.value_exact<std::string>();
    if (!s) c.fail(v, "weights." + key, "must be a string");
    if (s->empty()) c.fail(v, "weights." + key, "must not be empty");
    *dst = *s;
    if (key == "file") file_node = &v;
    if (key == "tensor") tensor_node = &v;
    if (key == "qweight" || key == "qzeros" || key == "scales") awq_node = &v;
  }
  if (!file_node) c.fail(n, "weights", "has no file (the .safetensors file holding the tensors)");
  if (w.tensor.empty() && w.qweight.empty() && w.qzeros.empty() && w.scales.empty())
    c.fail(n, "weights",
           "names no tensor: give tensor = \"NAME\" (a float weight [N, K_dim]) and/or qweight, "
           "qzeros and scales (AutoAWQ tensors)");
  if (awq_node) {  // all three or none
    std::string missing;
    for (const char* key : {"qweight", "qzeros", "scales"})
      if (!t->contains(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
    if (!missing.empty())
      c.fail(*awq_node, "weights", "lacks " + missing + ": AWQ tensors are all three");
  }
  const bool relative = w.file[0] != '/';
  w.path = relative ? base_dir + "/" + w.file : w.file;
  std::shared_ptr<SafetensorsFile> f;
  try {
    f = std::make_shared<SafetensorsFile>(w.path);
  } catch (const Error& err) {
    c.fail(*file_node, "weights.file",
           "= \"" + w.file + "\": " + err.what() +
               (relative ? " (a relative file is read from the folder of " + config_path + ")"
                         : std::string()));
  }
  if (w.has_tensor()) {
    try {
      check_tensor(*f, w);
    } catch (const Error& err) {
      c.fail(*tensor_node, "weights.tensor", err);
    }
  }
  if (w.has_awq()) {
    const std::int64_t tn = w.n, tk = w.k_dim;
    try {
      check_awq(*f, w);
    } catch (const Error& err) {
      c.fail(*awq_node, "weights", err);
    }
    if (w.has_tensor() && (tn != w.n || tk != w.k_dim))
      c.fail(n, "weights",
             "holds two weights: tensor '" + w.tensor + "' is " + shape2(tn, tk) +
                 " (N, K_dim) but the AWQ tensors hold N = " + std::to_string(w.n) + ", K_dim = " +
                 std::to_string(w.k_dim) + " (qweight '" + w.qweight + "', scales '" + w.scales +
                 "' in safetensors file '" + w.path + "'); they must be one weight's");
  }
  w.st = std::move(f);
  return w;
}

std::string file_weights_text(const FileWeights& w) {
  std::string s;
  if (w.has_tensor())
    s = "tensor '" + w.tensor + "' in safetensors file '" + w.path + "' is " + shape2(w.n, w.k_dim);
  if (w.has_awq())
    s += std::string(s.empty() ? "" : "; ") + "AWQ tensors qweight '" + w.qweight +
         "' in safetensors file '" + w.path + "' " + shape2(w.k_dim, w.n / 8) + ", scales '" +
         w.scales + "' " + shape2(w.k_dim / w.awq_group, w.n) + " hold N = " + std::to_string(w.n) +
         ", K_dim = " + std::to_string(w.k_dim);
  return s;
}

void check_weights_formats(const ExperimentConfig& e) {
  for (const ShapeConfig& s : e.shapes) {
    const FileWeights& w = s.weights;
    if (!w.given()) continue;
    const std::string head = w.at + ": key 'weights' of shape '" + s.name + "' ";
    if (e.has_kbit() && !w.has_tensor())
      throw Error(head + "names AWQ tensors only (qweight '" + w.qweight +
                  "' in safetensors file '" + w.path +
                  "'); the config's formats hold \"kbit\" (the default), whose problems quantize "
                  "a float weight: add tensor = \"NAME\", or give formats without \"kbit\"");
    for (int g : e.awq_groups())
      if (w.has_awq() && g != w.awq_group)
        throw Error(head + "holds AWQ tensors of group " + std::to_string(w.awq_group) +
                    " (qweight '" + w.qweight + "' in safetensors file '" + w.path +
                    "'), and formats names \"" + weight_format_name(g) +
                    "\": AWQ tensors are read as they are, in their group only (run \"" +
                    weight_format_name(w.awq_group) + "\")");
  }
}

HostWeights shape_host_weights(const ShapeConfig& s, int k_bits, int awq_group,
                               const std::vector<float>& codebook, std::uint64_t seed) {
  const FileWeights& w = s.weights;
  if (!w.given())
    return awq_group > 0 ? make_host_weights_awq(s.n, s.k_dim, awq_group, 1, seed)
                         : make_host_weights(s.n, s.k_dim, k_bits, codebook, 1, seed);
  const SafetensorsFile& f = *w.st;
  if (awq_group > 0 && w.has_awq()) {
    if (awq_group != w.awq_group)  // check_weights_formats refuses such a config
      throw Error("shape '" + s.name + "': AWQ tensors of group " + std::to_string(w.awq_group) +
                  " for an awq_g" + std::to_string(awq_group) + " problem");
    AwqTensor t;
    t.k_in = s.k_dim;
    t.n_out = s.n;
    t.group = awq_group;
    const std::int64_t groups = s.k_dim / awq_group;
    t.qweight = read_int32_tensor(f, w.qweight, {s.k_dim, s.n / 8});
    t.qzeros = read_int32_tensor(f, w.qzeros, {groups, s.n / 8});
    const SafetensorsEntry& sc = f.expect(w.scales, {StDtype::f16}, {groups, s.n});
    const unsigned char* p = f.bytes(sc);
    t.scales.resize(std::size_t(groups * s.n));
    for (std::size_t i = 0; i < t.scales.size(); ++i)
      t.scales[i] = std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8));
    return host_weights_awq(std::move(t));
  }
  if (!w.has_tensor())  // check_weights_formats refuses such a config
    throw Error("shape '" + s.name + "': no tensor for a " +
                (awq_group > 0 ? weight_format_name(awq_group) : std::string("kbit")) + " problem");
  std::vector<float> x = read_float_tensor(f, w.tensor, {s.n, s.k_dim});
  return awq_group > 0 ? host_weights_awq(std::move(x), s.n, s.k_dim, awq_group)
                       : host_weights_kbit(std::move(x), s.n, s.k_dim, k_bits, codebook);
}

std::string weights_source(const FileWeights* w, int awq_group) {
  if (!w || !w->given()) return kDrawnWeights;
  return w->file + ":" + (awq_group > 0 && w->has_awq() ? w->qweight : w->tensor);
}

nlohmann::json weights_json(const ExperimentConfig& cfg) {
  nlohmann::json out = nlohmann::json::array();
  for (const ShapeConfig& s : cfg.shapes) {
    const FileWeights& w = s.weights;
    if (!w.given()) {
      out.push_back({{"shape", s.name}, {"source", kDrawnWeights}});
      continue;
    }
    nlohmann::json j = {{"shape", s.name}, {"source", "file"}, {"file", w.file},
                        {"path", w.path},  {"N", w.n},         {"K_dim", w.k_dim}};
    if (w.has_tensor())
      j["tensor"] = {
          {"name", w.tensor}, {"dtype", w.tensor_dtype}, {"fnv1a", hex16(w.tensor_hash)}};
    if (w.has_awq())
      j["awq"] = {{"group", w.awq_group},
                  {"qweight", {{"name", w.qweight}, {"fnv1a", hex16(w.awq_hash[0])}}},
                  {"qzeros", {{"name", w.qzeros}, {"fnv1a", hex16(w.awq_hash[1])}}},
                  {"scales", {{"name", w.scales}, {"fnv1a", hex16(w.awq_hash[2])}}}};
    out.push_back(j);
  }
  for (const MoeConfig& m : cfg.moe) out.push_back({{"shape", m.name}, {"source", kDrawnWeights}});
  return out;
}

}  // namespace kbit
