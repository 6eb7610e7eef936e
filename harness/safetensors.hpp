// A reader of .safetensors files (the format of Hugging Face checkpoints): 8 bytes, the
// little-endian length n of a JSON header; n bytes of that header, an object of tensor entries
// {"dtype", "shape", "data_offsets": [begin, end]} and an optional "__metadata__" object of
// strings; then the data, every tensor's bytes at [begin, end) of it, row-major, little-endian.
//
// The file is opened as every input file is (harness/input_file.hpp: a regular file) and
// memory-mapped read-only; only the header is held to a size limit (the data of a checkpoint
// is gigabytes). Everything is checked when the file is opened, before any tensor is read:
// the header's length against the file and the limit, the JSON (an object, no key twice, each
// entry's keys and types), each dtype's name, each entry's byte count against its shape and
// dtype, and that the entries tile the data exactly (no overlap, no gap, nothing past the end).
// Each refusal is a kbit::Error naming the file, the tensor and the value (exit 2).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kbit {

// The longest header read: a checkpoint's header is a few hundred KB (one entry per tensor).
constexpr std::int64_t kMaxSafetensorsHeaderBytes = std::int64_t(100) << 20;

// The dtypes read into values. Other dtypes of the format (F64, I64, U8, BOOL, F8_E4M3, ...) are
// accepted in the file (their sizes are known) but refused by name when such a tensor is read.
enum class StDtype { f16, bf16, f32, i32, other };

struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;  // as the header spells it: "BF16"
  StDtype dtype = StDtype::other;
  std::vector<std::int64_t> shape;
  std::int64_t begin = 0, end = 0;  // byte offsets in the data section
  std::int64_t elements() const;
  std::string shape_text() const;  // "[4096, 11008]"
};

class SafetensorsFile {
 public:
  // Opens, maps and checks PATH (see above); throws kbit::Error naming what is wrong.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // The entries in the order of their data.
  const std::vector<SafetensorsEntry>& tensors() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The entry of that name, or kbit::Error naming the file, the tensor and a few names present.
  const SafetensorsEntry& tensor(const std::string& name) const;
  // The entry, checked against what the caller asks: its dtype one of `dtypes` and its shape
  // `shape` (a -1 matches any size of that dimension), else kbit::Error naming both.
  const SafetensorsEntry& expect(const std::string& name, const std::vector<StDtype>& dtypes,
                                 const std::vector<std::int64_t>& shape) const;
  // The entry's bytes (end - begin of them) in the mapping; not aligned in general.
  const unsigned char* bytes(const SafetensorsEntry& e) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  std::int64_t map_bytes_ = 0;
  std::int64_t data_start_ = 0;  // 8 + the header's length
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

const char* st_dtype_name(StDtype t);  // "F16", "BF16", "F32", "I32"

// A tensor of F16, BF16 or F32 as float32 values (each converted exactly), checked against
// `shape` as expect() checks it; a nan or inf is refused with its index.
std::vector<float> read_float_tensor(const SafetensorsFile& f, const std::string& name,
                                     const std::vector<std::int64_t>& shape);
// Refuses the first nan or inf of an F16, BF16 or F32 tensor (with its index), as
// read_float_tensor does, reading the bit patterns only (nothing is allocated).
void check_finite_tensor(const SafetensorsFile& f, const SafetensorsEntry& e);
// 64-bit FNV-1a of the tensor's bytes as stored: its identity in a run's record.
std::uint64_t tensor_fnv1a(const SafetensorsFile& f, const SafetensorsEntry& e);
// A tensor of I32, checked against `shape` as expect() checks it.
std::vector<std::int32_t> read_int32_tensor(const SafetensorsFile& f, const std::string& name,
                                            const std::vector<std::int64_t>& shape);

// A 2-D weight W[N, K_dim] (row n, column k at n * K_dim + k) as float32.
struct WeightMatrix {
  std::int64_t rows = 0, k_dim = 0;
  std::string dtype_name;
  std::vector<float> values;
};
// The tensor's entry, checked as a weight the kbit format quantizes: 2-D, K_dim a positive
// multiple of 32, N x K_dim at most max_elems, F16 / BF16 / F32; else kbit::Error naming the
// value. Reads the header only.
const SafetensorsEntry& expect_weight_matrix(const SafetensorsFile& f, const std::string& name,
                                             std::int64_t max_elems);
// The same checks, then the values: every one finite, else kbit::Error naming its index.
WeightMatrix read_weight_matrix(const SafetensorsFile& f, const std::string& name,
                                std::int64_t max_elems);

}  // namespace kbit
