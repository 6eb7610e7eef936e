// Small .safetensors files written by the tests themselves (no checkpoint is downloaded): the
// bytes of a file from a header text and data, or from a list of tensors laid end to end; and
// files of large all-zero tensors whose data is never written.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace kbit::test {

// 8 bytes of little-endian length, the header, the data.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

// Little-endian bytes of 16- and 32-bit patterns.
inline std::string le16(const std::vector<std::uint16_t>& v) {
  std::string s;
  for (std::uint16_t x : v) s += {char(x & 0xFF), char(x >> 8)};
  return s;
}
inline std::string le32(const std::vector<std::uint32_t>& v) {
  std::string s;
  for (std::uint32_t x : v)
    s += {char(x & 0xFF), char((x >> 8) & 0xFF), char((x >> 16) & 0xFF), char(x >> 24)};
  return s;
}

struct StTensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;  // as stored: little-endian, row-major
};

// The header of tensors of `sizes` bytes each laid end to end in the given order (their offsets
// in it); `metadata` (a JSON object's text) as __metadata__ when not empty.
inline std::string safetensors_header(const std::vector<StTensor>& tensors,
                                      const std::vector<std::int64_t>& sizes,
                                      const std::string& metadata = "") {
  std::string header = "{";
  std::int64_t at = 0;
  if (!metadata.empty()) header += "\"__metadata__\":" + metadata;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const StTensor& t = tensors[i];
    if (header.size() > 1) header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(t.shape[d]);
    header +=
        "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + sizes[i]) + "]}";
    at += sizes[i];
  }
  return header + "}";
}

// The tensors laid end to end in the given order, their offsets in the header; `metadata` (a
// JSON object's text) as __metadata__ when not empty.
inline std::string safetensors_file(const std::vector<StTensor>& tensors,
                                    const std::string& metadata = "") {
  std::vector<std::int64_t> sizes;
  std::string data;
  for (const StTensor& t : tensors) {
    sizes.push_back(std::int64_t(t.bytes.size()));
    data += t.bytes;
  }
  return safetensors_bytes(safetensors_header(tensors, sizes, metadata), data);
}

// Writes PATH: tensors of `dtype_bytes` bytes an element (their `bytes` unused) whose data is all
// zeros and never written (the file is extended past its header: a sparse file), for shapes too
// large to hold in memory.
inline void write_zero_safetensors(const std::string& path, const std::vector<StTensor>& tensors,
                                   const std::vector<int>& dtype_bytes) {
  std::vector<std::int64_t> sizes;
  std::int64_t data = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    std::int64_t n = dtype_bytes[i];
    for (std::int64_t d : tensors[i].shape) n *= d;
    sizes.push_back(n);
    data += n;
  }
  const std::string head = safetensors_bytes(safetensors_header(tensors, sizes), "");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << head;
  std::filesystem::resize_file(path, std::uintmax_t(std::int64_t(head.size()) + data));
}

}  // namespace kbit::test
