// Small .safetensors files written by the tests themselves (no checkpoint is downloaded): the
// bytes of a file from a header text and data, or from a list of tensors laid end to end.
#pragma once
#include <cstdint>
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

// The tensors laid end to end in the given order, their offsets in the header; `metadata` (a
// JSON object's text) as __metadata__ when not empty.
inline std::string safetensors_file(const std::vector<StTensor>& tensors,
                                    const std::string& metadata = "") {
  std::string header = "{", data;
  if (!metadata.empty()) header += "\"__metadata__\":" + metadata;
  for (const StTensor& t : tensors) {
    if (header.size() > 1) header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  return safetensors_bytes(header + "}", data);
}

}  // namespace kbit::test
