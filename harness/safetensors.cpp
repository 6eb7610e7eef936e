#include "harness/safetensors.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/input_file.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/tiled.hpp"

namespace kbit {
namespace {

// The dtypes of the format and their sizes in bytes (sub-byte dtypes are not read).
struct DtypeInfo {
  const char* name;
  int bytes;
  StDtype dtype;
};
constexpr DtypeInfo kDtypes[] = {
    {"F16", 2, StDtype::f16},       {"BF16", 2, StDtype::bf16},     {"F32", 4, StDtype::f32},
    {"I32", 4, StDtype::i32},       {"F64", 8, StDtype::other},     {"I64", 8, StDtype::other},
    {"U64", 8, StDtype::other},     {"U32", 4, StDtype::other},     {"I16", 2, StDtype::other},
    {"U16", 2, StDtype::other},     {"I8", 1, StDtype::other},      {"U8", 1, StDtype::other},
    {"BOOL", 1, StDtype::other},    {"F8_E4M3", 1, StDtype::other}, {"F8_E5M2", 1, StDtype::other},
    {"F8_E8M0", 1, StDtype::other},
};
constexpr const char* kReadDtypes = "F16, BF16, F32, I32";

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

// Thrown by the JSON callback.
struct TooDeep {};
struct KeyTwice {
  std::string key;
};

std::string range_text(std::int64_t a, std::int64_t b) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

// A non-negative integer of the header, or kbit::Error naming where it is and what it is.
std::int64_t header_count(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      throw Error(where + " = " + std::to_string(u) + " is above 2^63 - 1");
    return std::int64_t(u);
  }
  throw Error(where + " = " + v.dump() + " is not a non-negative integer");
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("any") : std::to_string(shape[i]));
  return s + "]";
}

}  // namespace

const char* st_dtype_name(StDtype t) {
  switch (t) {
    case StDtype::f16:
      return "F16";
    case StDtype::bf16:
      return "BF16";
    case StDtype::f32:
      return "F32";
    case StDtype::i32:
      return "I32";
    case StDtype::other:
      break;
  }
  return "other";
}

std::int64_t SafetensorsEntry::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;  // bounded by the data's size when the file was opened
  return n;
}

std::string SafetensorsEntry::shape_text() const {
  return kbit::shape_text(shape);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const std::string file = "safetensors file '" + path + "'";
  const InputFd fd = open_input_file(path, "safetensors file");
  if (fd.size < 8)
    throw Error(file + " is " + std::to_string(fd.size) +
                " bytes, shorter than the 8-byte length of its header");
  map_ = ::mmap(nullptr, std::size_t(fd.size), PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error("cannot map " + file + ": " + std::strerror(errno));
  }
  map_bytes_ = fd.size;
  try {
    const auto* p = static_cast<const unsigned char*>(map_);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | p[i];
    if (n > std::uint64_t(kMaxSafetensorsHeaderBytes))
      throw Error(file + ": the header length " + std::to_string(n) + " is above the limit " +
                  std::to_string(kMaxSafetensorsHeaderBytes) + " bytes (" +
                  std::to_string(kMaxSafetensorsHeaderBytes >> 20) + " MiB)");
    if (std::int64_t(n) > fd.size - 8)
      throw Error(file + ": the header length " + std::to_string(n) + " is longer than the " +
                  std::to_string(fd.size - 8) + " bytes after the length (the file is " +
                  std::to_string(fd.size) + " bytes)");
    data_start_ = 8 + std::int64_t(n);
    const std::int64_t data_bytes = fd.size - data_start_;

    nlohmann::json h;
    std::vector<std::set<std::string>> keys;  // the keys of each object being parsed
    try {
      h = nlohmann::json::parse(
          reinterpret_cast<const char*>(p + 8), reinterpret_cast<const char*>(p + 8 + n),
          [&keys](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& v) {
            if (depth > kMaxJsonDepth) throw TooDeep{};
            using E = nlohmann::json::parse_event_t;
            if (ev == E::object_start) keys.emplace_back();
            if (ev == E::object_end && !keys.empty()) keys.pop_back();
            if (ev == E::key && !keys.empty() && v.is_string() &&
                !keys.back().insert(v.get<std::string>()).second)
              throw KeyTwice{v.get<std::string>()};
            return true;
          });
    } catch (const TooDeep&) {
      throw Error(file + ": the JSON header is nested deeper than the limit " +
                  std::to_string(kMaxJsonDepth));
    } catch (const KeyTwice& k) {
      throw Error(file + ": the JSON header has the key '" + k.key + "' twice");
    } catch (const nlohmann::json::exception& e) {
      throw Error(file + ": the header (" + std::to_string(n) +
                  " bytes) is not valid JSON: " + e.what());
    }
    if (!h.is_object())
      throw Error(file + ": the header is a JSON " + std::string(h.type_name()) +
                  ", not an object of tensors");

    for (const auto& [name, v] : h.items()) {
      if (name == "__metadata__") {
        if (!v.is_object())
          throw Error(file + ": __metadata__ is a JSON " + std::string(v.type_name()) +
                      ", not an object of strings");
        for (const auto& [k, s] : v.items()) {
          if (!s.is_string())
            throw Error(file + ": __metadata__ '" + k + "' is " + s.dump() + ", not a string");
          metadata_[k] = s.get<std::string>();
        }
        continue;
      }
      const std::string t = "tensor '" + name + "' in " + file;
      if (name.empty()) throw Error(file + ": a tensor has an empty name");
      if (!v.is_object())
        throw Error(t + " is a JSON " + std::string(v.type_name()) +
                    ", not an object {dtype, shape, data_offsets}");
      for (const auto& [k, unused] : v.items()) {
        (void)unused;
        if (k != "dtype" && k != "shape" && k != "data_offsets")
          throw Error(t + ": unknown key '" + k + "' (the keys are dtype, shape, data_offsets)");
      }
      for (const char* k : {"dtype", "shape", "data_offsets"})
        if (!v.contains(k)) throw Error(t + " has no '" + k + "'");
      SafetensorsEntry e;
      e.name = name;
      const auto& dt = v["dtype"];
      if (!dt.is_string()) throw Error(t + ": dtype " + dt.dump() + " is not a string");
      e.dtype_name = dt.get<std::string>();
      const DtypeInfo* info = find_dtype(e.dtype_name);
      if (!info) {
        std::string known;
        for (const auto& d : kDtypes) known += (known.empty() ? "" : ", ") + std::string(d.name);
        throw Error(t + ": dtype '" + e.dtype_name + "' is not one of " + known);
      }
      e.dtype = info->dtype;
      const auto& sh = v["shape"];
      if (!sh.is_array()) throw Error(t + ": shape " + sh.dump() + " is not an array");
      std::int64_t elems = 1;
      for (std::size_t i = 0; i < sh.size(); ++i) {
        const std::int64_t d = header_count(sh[i], t + ": shape[" + std::to_string(i) + "]");
        e.shape.push_back(d);
        if (__builtin_mul_overflow(elems, d, &elems))
          throw Error(t + ": shape " + sh.dump() + " holds more than 2^63 - 1 elements");
      }
      const auto& off = v["data_offsets"];
      if (!off.is_array() || off.size() != 2)
        throw Error(t + ": data_offsets " + off.dump() + " is not [begin, end]");
      e.begin = header_count(off[0], t + ": data_offsets[0]");
      e.end = header_count(off[1], t + ": data_offsets[1]");
      if (e.begin > e.end)
        throw Error(t + ": data_offsets [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "] ends before it begins");
      if (e.end > data_bytes)
        throw Error(t + ": data_offsets [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "] end past the data's " + std::to_string(data_bytes) +
                    " bytes (the file is " + std::to_string(fd.size) + " bytes)");
      std::int64_t want = 0;
      if (__builtin_mul_overflow(elems, std::int64_t(info->bytes), &want) ||
          e.end - e.begin != want)
        throw Error(t + ": data_offsets [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "] hold " + std::to_string(e.end - e.begin) +
                    " bytes, but shape " + e.shape_text() + " of " + e.dtype_name + " is " +
                    std::to_string(elems) + " x " + std::to_string(info->bytes) + " bytes");
      entries_.push_back(std::move(e));
    }
    // The entries tile the data: each begins where the one before ends, the last ends at the end.
    std::sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::int64_t at = 0;
    const SafetensorsEntry* prev = nullptr;
    for (const auto& e : entries_) {
      if (e.begin < at)
        throw Error("tensor '" + e.name + "' in " + file + ": its bytes " +
                    range_text(e.begin, e.end) + " overlap tensor '" + prev->name + "' at " +
                    range_text(prev->begin, prev->end));
      if (e.begin > at)
        throw Error(file + ": the data's bytes " + range_text(at, e.begin) +
                    " belong to no tensor (before tensor '" + e.name + "')");
      at = e.end;
      prev = &e;
    }
    if (at != data_bytes)
      throw Error(file + ": the data's bytes " + range_text(at, data_bytes) +
                  " belong to no tensor (the tensors end at " + std::to_string(at) + ")");
  } catch (...) {
    ::munmap(map_, std::size_t(map_bytes_));
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, std::size_t(map_bytes_));
}

const SafetensorsEntry& SafetensorsFile::tensor(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e;
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  std::string some;
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) some += (i ? ", " : "") + names[i];
  if (names.size() > 8) some += ", ... (" + std::to_string(names.size()) + " in all)";
  throw Error("tensor '" + name + "' is not in safetensors file '" + path_ + "'" +
              (names.empty() ? std::string(" (it holds no tensor)") : " (it holds " + some + ")"));
}

const SafetensorsEntry& SafetensorsFile::expect(const std::string& name,
                                                const std::vector<StDtype>& dtypes,
                                                const std::vector<std::int64_t>& shape) const {
  const SafetensorsEntry& e = tensor(name);
  const std::string t = "tensor '" + name + "' in safetensors file '" + path_ + "'";
  if (std::find(dtypes.begin(), dtypes.end(), e.dtype) == dtypes.end() ||
      e.dtype == StDtype::other) {
    std::string asked;
    for (std::size_t i = 0; i < dtypes.size(); ++i)
      asked += (i == 0                   ? ""
                : i + 1 == dtypes.size() ? " or "
                                         : ", ") +
               std::string(st_dtype_name(dtypes[i]));
    throw Error(t + " is " + e.dtype_name + ", not " + asked +
                (e.dtype == StDtype::other
                     ? std::string(" (the dtypes read are ") + kReadDtypes + ")"
                     : std::string()));
  }
  bool same = e.shape.size() == shape.size();
  for (std::size_t i = 0; same && i < shape.size(); ++i)
    same = shape[i] < 0 || shape[i] == e.shape[i];
  if (!same) throw Error(t + " has shape " + e.shape_text() + ", not " + shape_text(shape));
  return e;
}

const unsigned char* SafetensorsFile::bytes(const SafetensorsEntry& e) const {
  return static_cast<const unsigned char*>(map_) + data_start_ + e.begin;
}

namespace {

// "tensor 'NAME' in safetensors file 'PATH' holds nan at [1, 2]": element i of e.
[[noreturn]] void refuse_nonfinite(const SafetensorsFile& f, const SafetensorsEntry& e,
                                   std::int64_t i, bool nan) {
  std::vector<std::int64_t> idx(e.shape.size());
  std::int64_t r = i;
  for (std::size_t d = e.shape.size(); d-- > 0;) {
    idx[d] = r % e.shape[d];
    r /= e.shape[d];
  }
  throw Error("tensor '" + e.name + "' in safetensors file '" + f.path() + "' holds " +
              (nan ? "nan" : "inf") + " at " + shape_text(idx));
}

// Element i of an F16 / BF16 / F32 tensor's bytes p as float32 (exact).
float element_float(const SafetensorsEntry& e, const unsigned char* p, std::int64_t i) {
  if (e.dtype == StDtype::f32) {
    std::uint32_t u;
    std::memcpy(&u, p + 4 * i, 4);
    return bits_float(u);
  }
  const std::uint16_t h = std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8));
  return e.dtype == StDtype::f16 ? half_to_float(h) : bf16_to_float(h);
}

}  // namespace

std::vector<float> read_float_tensor(const SafetensorsFile& f, const std::string& name,
                                     const std::vector<std::int64_t>& shape) {
  const SafetensorsEntry& e = f.expect(name, {StDtype::f16, StDtype::bf16, StDtype::f32}, shape);
  const unsigned char* p = f.bytes(e);
  const std::int64_t n = e.elements();
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    out[std::size_t(i)] = element_float(e, p, i);
    if (!std::isfinite(out[std::size_t(i)]))
      refuse_nonfinite(f, e, i, std::isnan(out[std::size_t(i)]));
  }
  return out;
}

void check_finite_tensor(const SafetensorsFile& f, const SafetensorsEntry& e) {
  f.expect(e.name, {StDtype::f16, StDtype::bf16, StDtype::f32}, e.shape);  // the dtype
  const unsigned char* p = f.bytes(e);
  const std::int64_t n = e.elements();
  // The exponent all ones is inf or nan in each of the three formats.
  const std::uint32_t mask = e.dtype == StDtype::f32   ? 0x7F800000u
                             : e.dtype == StDtype::f16 ? 0x7C00u
                                                       : 0x7F80u;
  const int size = e.dtype == StDtype::f32 ? 4 : 2;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t u = p[size * i] | (std::uint32_t(p[size * i + 1]) << 8);
    if (size == 4) u |= (std::uint32_t(p[4 * i + 2]) << 16) | (std::uint32_t(p[4 * i + 3]) << 24);
    if ((u & mask) == mask) refuse_nonfinite(f, e, i, std::isnan(element_float(e, p, i)));
  }
}

std::uint64_t tensor_fnv1a(const SafetensorsFile& f, const SafetensorsEntry& e) {
  std::uint64_t h = 14695981039346656037ull;  // the FNV offset basis (config_hash's)
  const unsigned char* p = f.bytes(e);
  for (std::int64_t i = 0, n = e.end - e.begin; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<std::int32_t> read_int32_tensor(const SafetensorsFile& f, const std::string& name,
                                            const std::vector<std::int64_t>& shape) {
  const SafetensorsEntry& e = f.expect(name, {StDtype::i32}, shape);
  std::vector<std::int32_t> out(static_cast<std::size_t>(e.elements()));
  const unsigned char* p = f.bytes(e);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t u = 0;
    for (int b = 3; b >= 0; --b) u = (u << 8) | p[4 * i + std::size_t(b)];
    out[i] = std::int32_t(u);
  }
  return out;
}

const SafetensorsEntry& expect_weight_matrix(const SafetensorsFile& f, const std::string& name,
                                             std::int64_t max_elems) {
  const SafetensorsEntry& e = f.tensor(name);
  const std::string t = "tensor '" + name + "' in safetensors file '" + f.path() + "'";
  if (e.shape.size() != 2)
    throw Error(t + " is " + std::to_string(e.shape.size()) + "-D " + e.shape_text() +
                ": a weight is 2-D [N, K_dim]");
  try {
    check_weight_shape(e.shape[0], e.shape[1]);
  } catch (const Error& err) {
    throw Error(t + " " + e.shape_text() + ": " + err.what());
  }
  if (e.elements() > max_elems)
    throw Error(t + " " + e.shape_text() + " holds " + std::to_string(e.elements()) +
                " elements, above the limit " + std::to_string(max_elems));
  return f.expect(name, {StDtype::f16, StDtype::bf16, StDtype::f32}, e.shape);
}

WeightMatrix read_weight_matrix(const SafetensorsFile& f, const std::string& name,
                                std::int64_t max_elems) {
  const SafetensorsEntry& e = expect_weight_matrix(f, name, max_elems);
  WeightMatrix w;
  w.rows = e.shape[0];
  w.k_dim = e.shape[1];
  w.dtype_name = e.dtype_name;
  w.values = read_float_tensor(f, name, e.shape);
  return w;
}

}  // namespace kbit
