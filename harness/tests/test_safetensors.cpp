// The safetensors reader (harness/safetensors.hpp) on files the tests write: known bit patterns
// of each dtype read back exactly; each refusal names the file, the tensor and the value; random
// bytes and every truncation of a valid file open or are refused with kbit::Error, nothing else.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "harness/input_file.hpp"
#include "harness/safetensors.hpp"
#include "harness/tests/safetensors_writer.hpp"
#include "harness/tests/temp_dir.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"

using namespace kbit;
using Catch::Contains;
using kbit::test::le16;
using kbit::test::le32;
using kbit::test::safetensors_bytes;
using kbit::test::safetensors_file;
using kbit::test::StTensor;
using kbit::test::TempDir;

namespace {

// A small valid file of every dtype read, one other dtype and metadata.
std::string small_file() {
  return safetensors_file(
      {{"a.weight", "BF16", {2, 3}, le16({0x3F80, 0xC2F7, 0x0001, 0x7F7F, 0x8000, 0x4049})},
       {"b", "F16", {4}, le16({0x3C00, 0xC000, 0x0001, 0x7BFF})},
       {"c", "F32", {2, 2}, le32({0x00000001, 0x7F7FFFFF, 0xC0490FDB, 0x3F800000})},
       {"d", "I32", {3}, le32({0xFFFFFFFF, 0x80000000, 123456789})},
       {"e", "I64", {1}, std::string(8, '\x01')}},
      R"({"format":"pt"})");
}

// 0: the file opens and each tensor of a read dtype reads (or is refused for a nan or inf);
// 1: refused with kbit::Error. Any other exception fails the caller's CHECK_NOTHROW. Every
// refusal gives its reason beside the file's name.
int outcome(const std::string& path) {
  const auto names_file = [&](const Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("safetensors file '" + path + "'"));
  };
  try {
    SafetensorsFile f(path);
    for (const auto& e : f.tensors()) {
      try {
        if (e.dtype == StDtype::i32)
          read_int32_tensor(f, e.name, e.shape);
        else if (e.dtype != StDtype::other)
          read_float_tensor(f, e.name, e.shape);
      } catch (const Error& err) {
        names_file(err);
      }
    }
    return 0;
  } catch (const Error& err) {
    names_file(err);
    return 1;
  }
}

// A file of `header` and `data` in d is refused, the refusal naming the file and `expect`.
struct Refusal {
  const TempDir& d;
  void operator()(const std::string& header, const std::string& data,
                  const std::string& expect) const {
    INFO("header " << header);
    const std::string p = d.file("h.safetensors", safetensors_bytes(header, data));
    CHECK_THROWS_WITH(SafetensorsFile(p),
                      Contains("safetensors file '" + p + "'") && Contains(expect));
  }
};

}  // namespace

TEST_CASE("safetensors: each dtype reads back its bit patterns exactly", "[safetensors]") {
  TempDir d("safetensors");
  const SafetensorsFile f(d.file("s.safetensors", small_file()));
  CHECK(f.metadata().at("format") == "pt");
  REQUIRE(f.tensors().size() == 5);

  // BF16: 1, -123.5, the smallest subnormal 2^-133, the largest finite, -0, 3.140625.
  const auto a = read_float_tensor(f, "a.weight", {2, 3});
  CHECK(a == std::vector<float>{1.0f, -123.5f, std::ldexp(1.0f, -133), 3.3895313892515355e38f,
                                -0.0f, 3.140625f});
  CHECK(float_bits(a[4]) == 0x80000000u);
  // F16: 1, -2, the smallest subnormal 2^-24, the largest finite 65504.
  CHECK(read_float_tensor(f, "b", {4}) ==
        std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f});
  // F32: the smallest subnormal, the largest finite, -pi as float, 1.
  CHECK(read_float_tensor(f, "c", {-1, 2}) ==
        std::vector<float>{std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::max(), -3.14159274101257324f, 1.0f});
  CHECK(read_int32_tensor(f, "d", {3}) ==
        std::vector<std::int32_t>{-1, std::numeric_limits<std::int32_t>::min(), 123456789});
  // The entries in the order of their data, their offsets as written.
  CHECK(f.tensors()[0].name == "a.weight");
  CHECK(f.tensors()[2].begin == 20);
  CHECK(f.tensors()[2].end == 36);

  // A header of odd length: every tensor's data is unaligned.
  const std::string h = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}   )";
  const SafetensorsFile g(d.file("odd.safetensors", safetensors_bytes(h, le32({0xC0490FDB}))));
  CHECK(read_float_tensor(g, "x", {1}) == std::vector<float>{-3.14159274101257324f});
  // An empty file of tensors, and an empty tensor.
  CHECK(SafetensorsFile(d.file("none.safetensors", safetensors_bytes("{}", ""))).tensors().empty());
  const SafetensorsFile z(d.file("z.safetensors", safetensors_file({{"z", "F16", {0, 64}, ""}})));
  CHECK(read_float_tensor(z, "z", {0, 64}).empty());
}

TEST_CASE("safetensors: a weight matrix as float32, its shape and values checked",
          "[safetensors]") {
  TempDir d("safetensors");
  std::vector<std::uint16_t> w(2 * 64);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float_to_half(float(i) - 64.0f);
  const std::string good = d.file(
      "w.safetensors",
      safetensors_file({{"w", "F16", {2, 64}, le16(w)},
                        {"bias", "F32", {64}, le32(std::vector<std::uint32_t>(64, 0x3F800000))},
                        {"odd", "BF16", {2, 48}, le16(std::vector<std::uint16_t>(96, 0x3F80))},
                        {"ids", "I32", {2, 32}, le32(std::vector<std::uint32_t>(64, 7))}}));
  const SafetensorsFile f(good);
  const WeightMatrix m = read_weight_matrix(f, "w", 1 << 20);
  CHECK(m.rows == 2);
  CHECK(m.k_dim == 64);
  CHECK(m.dtype_name == "F16");
  CHECK(m.values[0] == -64.0f);
  CHECK(m.values[127] == 63.0f);
  CHECK_THROWS_WITH(read_weight_matrix(f, "bias", 1 << 20),
                    Contains("tensor 'bias' in safetensors file '" + good +
                             "' is 1-D [64]: a weight is 2-D [N, K_dim]"));
  CHECK_THROWS_WITH(read_weight_matrix(f, "odd", 1 << 20),
                    Contains("tensor 'odd'") && Contains("[2, 48]: K_dim = 48 must be a positive "
                                                         "multiple of 32"));
  CHECK_THROWS_WITH(read_weight_matrix(f, "ids", 1 << 20),
                    Contains("tensor 'ids'") && Contains("is I32, not F16, BF16 or F32"));
  CHECK_THROWS_WITH(read_weight_matrix(f, "w", 100),
                    Contains("[2, 64] holds 128 elements, above the limit 100"));
  // The limit is the most elements a weight may hold: 128 of 128 read, 128 of 127 refused.
  CHECK(read_weight_matrix(f, "w", 128).values.size() == 128);
  CHECK_THROWS_WITH(expect_weight_matrix(f, "w", 127),
                    Contains("[2, 64] holds 128 elements, above the limit 127"));

  // A nan or an inf is refused with its index.
  // Element [1, 5] of w made inf, element [0, 3] of h a nan.
  std::string bytes =
      safetensors_file({{"w", "F32", {2, 32}, le32(std::vector<std::uint32_t>(64, 0))},
                        {"h", "BF16", {2, 32}, le16(std::vector<std::uint16_t>(64, 0))}});
  const std::size_t data = bytes.size() - 64 * 4 - 64 * 2;
  bytes.replace(data + (32 + 5) * 4, 4, le32({0x7F800000}));
  bytes.replace(data + 64 * 4 + 3 * 2, 2, le16({0x7FC0}));
  const std::string inf = d.file("inf.safetensors", bytes);
  const SafetensorsFile g(inf);
  CHECK_THROWS_WITH(read_weight_matrix(g, "w", 1 << 20), Contains("holds inf at [1, 5]"));
  CHECK_THROWS_WITH(read_weight_matrix(g, "h", 1 << 20),
                    Contains("tensor 'h' in safetensors file '" + inf + "' holds nan at [0, 3]"));
  // The header alone (what a config checks before reading values): the same refusals but the
  // values', then check_finite_tensor refuses those from the bit patterns, as the read does.
  CHECK(expect_weight_matrix(g, "w", 1 << 20).shape == std::vector<std::int64_t>{2, 32});
  CHECK_THROWS_WITH(expect_weight_matrix(f, "ids", 1 << 20), Contains("is I32, not F16"));
  CHECK_THROWS_WITH(expect_weight_matrix(f, "odd", 1 << 20), Contains("K_dim = 48"));
  CHECK_NOTHROW(check_finite_tensor(f, f.tensor("w")));
  CHECK_THROWS_WITH(check_finite_tensor(g, g.tensor("w")),
                    Contains("tensor 'w' in safetensors file '" + inf + "' holds inf at [1, 5]"));
  CHECK_THROWS_WITH(check_finite_tensor(g, g.tensor("h")), Contains("holds nan at [0, 3]"));
  CHECK_THROWS_WITH(check_finite_tensor(f, f.tensor("ids")), Contains("is I32, not F16"));
}

TEST_CASE("safetensors: tensor_fnv1a is 64-bit FNV-1a of the tensor's bytes as stored",
          "[safetensors]") {
  TempDir d("safetensors");
  const SafetensorsFile f(
      d.file("h.safetensors", safetensors_file({{"e", "F16", {0}, ""},
                                                {"a", "I32", {1}, le32({0x64636261})},
                                                {"b", "I32", {1}, le32({0x64636262})}})));
  CHECK(tensor_fnv1a(f, f.tensor("e")) == 0xcbf29ce484222325ull);  // the offset basis
  CHECK(tensor_fnv1a(f, f.tensor("a")) == 0xfc179f83ee0724ddull);  // FNV-1a("abcd")
  CHECK(tensor_fnv1a(f, f.tensor("b")) != tensor_fnv1a(f, f.tensor("a")));
}

TEST_CASE("safetensors: a missing tensor, a wrong dtype or shape is refused, naming it",
          "[safetensors]") {
  TempDir d("safetensors");
  const std::string p = d.file("s.safetensors", small_file());
  const SafetensorsFile f(p);
  CHECK_THROWS_WITH(f.tensor("nope"), Contains("tensor 'nope' is not in safetensors file '" + p +
                                               "' (it holds a.weight, b, c, d, e)"));
  CHECK_THROWS_WITH(read_float_tensor(f, "d", {3}), Contains("tensor 'd' in safetensors file '" +
                                                             p + "' is I32, not F16, BF16 or F32"));
  CHECK_THROWS_WITH(read_int32_tensor(f, "c", {2, 2}), Contains("is F32, not I32"));
  CHECK_THROWS_WITH(read_float_tensor(f, "e", {1}),
                    Contains("is I64, not F16, BF16 or F32 (the dtypes read are F16, BF16, "
                             "F32, I32)"));
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {3, 2}),
                    Contains("tensor 'a.weight'") && Contains("has shape [2, 3], not [3, 2]"));
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {6}), Contains("not [6]"));
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {-1, 4}), Contains("not [any, 4]"));
  // A size 0 asked is a size (only -1 matches any); a rank other than the tensor's is refused,
  // whether the sizes asked are a prefix of its shape or run past it.
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {0, 3}),
                    Contains("has shape [2, 3], not [0, 3]"));
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {2}), Contains("has shape [2, 3], not [2]"));
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {-1}), Contains("not [any]"));
  CHECK_THROWS_WITH(read_float_tensor(f, "a.weight", {2, 3, 1}), Contains("not [2, 3, 1]"));
  CHECK_THROWS_WITH(read_int32_tensor(f, "d", {}), Contains("has shape [3], not []"));
}

TEST_CASE("safetensors: a missing tensor's refusal names at most 8 of the tensors present",
          "[safetensors]") {
  TempDir d("safetensors");
  const auto names = [&](int count) {
    std::vector<StTensor> t;
    for (int i = 0; i < count; ++i) t.push_back({"t" + std::to_string(i), "I32", {1}, le32({0})});
    const SafetensorsFile f(d.file("n.safetensors", safetensors_file(t)));
    try {
      f.tensor("nope");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(found)");
  };
  CHECK_THAT(names(0), Contains("tensor 'nope' is not in safetensors file '" + d.path +
                                "/n.safetensors' (it holds no tensor)"));
  CHECK_THAT(names(1), Contains("' (it holds t0)"));
  CHECK_THAT(names(8), Contains("' (it holds t0, t1, t2, t3, t4, t5, t6, t7)"));
  CHECK_THAT(names(9), Contains("' (it holds t0, t1, t2, t3, t4, t5, t6, t7, ... (9 in all))"));
}

TEST_CASE("safetensors: every dtype of the format opens at its size, those not read refused",
          "[safetensors]") {
  TempDir d("safetensors");
  const std::vector<std::pair<std::string, int>> sizes = {
      {"F16", 2},  {"BF16", 2},    {"F32", 4},     {"I32", 4},    {"F64", 8}, {"I64", 8},
      {"U64", 8},  {"U32", 4},     {"I16", 2},     {"U16", 2},    {"I8", 1},  {"U8", 1},
      {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}};
  std::vector<StTensor> all;
  for (const auto& [dtype, size] : sizes)
    all.push_back({dtype, dtype, {3}, std::string(std::size_t(3 * size), '\0')});
  const std::string p = d.file("all.safetensors", safetensors_file(all));
  const SafetensorsFile f(p);
  REQUIRE(f.tensors().size() == sizes.size());
  for (const auto& [dtype, size] : sizes) {
    INFO("dtype " << dtype);
    const SafetensorsEntry& e = f.tensor(dtype);
    CHECK(e.dtype_name == dtype);
    CHECK(e.end - e.begin == 3 * size);
    CHECK(e.dtype == (dtype == "F16"    ? StDtype::f16
                      : dtype == "BF16" ? StDtype::bf16
                      : dtype == "F32"  ? StDtype::f32
                      : dtype == "I32"  ? StDtype::i32
                                        : StDtype::other));
    if (e.dtype == StDtype::other) {
      CHECK_THROWS_WITH(
          read_float_tensor(f, dtype, {3}),
          Contains("tensor '" + dtype + "' in safetensors file '" + p + "' is " + dtype +
                   ", not F16, BF16 or F32 (the dtypes read are F16, BF16, F32, I32)"));
      CHECK_THROWS_WITH(read_int32_tensor(f, dtype, {3}), Contains("is " + dtype + ", not I32"));
    }
    // One element's bytes short or over is refused, naming the dtype's size.
    for (const int bytes : {2 * size, 4 * size}) {
      const std::string q =
          d.file("one.safetensors",
                 safetensors_file({{"x", dtype, {3}, std::string(std::size_t(bytes), '\0')}}));
      CHECK_THROWS_WITH(SafetensorsFile(q),
                        Contains("hold " + std::to_string(bytes) + " bytes, but shape [3] of " +
                                 dtype + " is 3 x " + std::to_string(size) + " bytes"));
    }
  }
}

TEST_CASE("safetensors: the largest finite value of each float dtype reads, inf and nan do not",
          "[safetensors]") {
  TempDir d("safetensors");
  // Per dtype: the largest finite value, its negative, then -inf (at [2]) or the nan of the
  // smallest payload (at [2]); the first two are finite in every dtype, the third in none.
  const std::string p =
      d.file("f.safetensors",
             safetensors_file({{"f16_inf", "F16", {3}, le16({0x7BFF, 0xFBFF, 0xFC00})},
                               {"f16_nan", "F16", {3}, le16({0x7BFF, 0xFBFF, 0x7C01})},
                               {"bf16_inf", "BF16", {3}, le16({0x7F7F, 0xFF7F, 0xFF80})},
                               {"bf16_nan", "BF16", {3}, le16({0x7F7F, 0xFF7F, 0x7F81})},
                               {"f32_inf", "F32", {3}, le32({0x7F7FFFFF, 0xFF7FFFFF, 0xFF800000})},
                               {"f32_nan", "F32", {3}, le32({0x7F7FFFFF, 0xFF7FFFFF, 0x7F800001})},
                               {"f16_ok", "F16", {2}, le16({0x7BFF, 0xFBFF})},
                               {"bf16_ok", "BF16", {2}, le16({0x7F7F, 0xFF7F})},
                               {"f32_ok", "F32", {2}, le32({0x7F7FFFFF, 0xFF7FFFFF})}}));
  const SafetensorsFile f(p);
  for (const std::string dt : {"f16", "bf16", "f32"}) {
    INFO("dtype " << dt);
    CHECK_NOTHROW(check_finite_tensor(f, f.tensor(dt + "_ok")));
    const std::vector<float> ok = read_float_tensor(f, dt + "_ok", {2});
    CHECK(ok[0] == -ok[1]);
    CHECK(std::isfinite(ok[0]));
    for (const std::string bad : {"inf", "nan"}) {
      const std::string name = dt + "_" + bad;
      const std::string msg =
          "tensor '" + name + "' in safetensors file '" + p + "' holds " + bad + " at [2]";
      CHECK_THROWS_WITH(check_finite_tensor(f, f.tensor(name)), Contains(msg));
      CHECK_THROWS_WITH(read_float_tensor(f, name, {3}), Contains(msg));
    }
  }
}

TEST_CASE("safetensors: a missing or special file, a short file, a bad header length",
          "[safetensors]") {
  TempDir d("safetensors");
  CHECK_THROWS_WITH(SafetensorsFile(d.path + "/none.safetensors"),
                    Contains("cannot open safetensors file '" + d.path + "/none.safetensors'"));
  CHECK_THROWS_WITH(SafetensorsFile(d.path),
                    Contains("safetensors file '" + d.path + "' is a folder, not a regular file"));
  CHECK_THROWS_WITH(SafetensorsFile("/dev/zero"), Contains("is a character device"));
  const std::string s = d.file("short.safetensors", std::string(5, '\0'));
  CHECK_THROWS_WITH(SafetensorsFile(s),
                    Contains("safetensors file '" + s +
                             "' is 5 bytes, shorter than the 8-byte length of its header"));
  // A header length longer than the file ...
  std::string b = safetensors_bytes("{}", "");
  b[0] = char(200);
  const std::string l = d.file("long.safetensors", b);
  CHECK_THROWS_WITH(SafetensorsFile(l),
                    Contains("safetensors file '" + l +
                             "': the header length 200 is longer than the 2 bytes after the "
                             "length (the file is 10 bytes)"));
  // ... and one above the limit, whatever the file's size.
  b[5] = 1;  // 2^40 + 200
  CHECK_THROWS_WITH(SafetensorsFile(d.file("huge.safetensors", b)),
                    Contains("the header length 1099511627976 is above the limit 104857600 "
                             "bytes (100 MiB)"));
}

TEST_CASE("safetensors: the header length, the offsets and the nesting at their bounds",
          "[safetensors]") {
  TempDir d("safetensors");
  // 7 bytes cannot hold the length; 8 bytes hold it (0) and an empty header, which is no JSON.
  const std::string s7 = d.file("s7.safetensors", std::string(7, '\0'));
  CHECK_THROWS_WITH(SafetensorsFile(s7),
                    Contains("safetensors file '" + s7 +
                             "' is 7 bytes, shorter than the 8-byte length of its header"));
  CHECK_THROWS_WITH(SafetensorsFile(d.file("s8.safetensors", std::string(8, '\0'))),
                    Contains("the header (0 bytes) is not valid JSON"));
  // A header length one byte past the file's end is refused by its length (the bytes after the
  // end are never read), as is one a whole length (8 bytes) past it.
  std::string b = safetensors_bytes("{}", "");
  for (const int n : {3, 10}) {
    b[0] = char(n);
    const std::string l = d.file("long.safetensors", b);
    CHECK_THROWS_WITH(
        SafetensorsFile(l),
        Contains("safetensors file '" + l + "': the header length " + std::to_string(n) +
                 " is longer than the 2 bytes after the length (the file is 10 bytes)"));
  }
  // A header of exactly the limit's length is read (here: zero bytes, not JSON); one byte more is
  // refused by its length. The files are sparse: their bytes past the length are never written.
  for (const std::int64_t n : {kMaxSafetensorsHeaderBytes, kMaxSafetensorsHeaderBytes + 1}) {
    std::string len(8, '\0');
    for (int i = 0; i < 8; ++i) len[std::size_t(i)] = char((n >> (8 * i)) & 0xFF);
    const std::string big = d.file("big.safetensors", len);
    std::filesystem::resize_file(big, std::uintmax_t(8 + n));
    if (n == kMaxSafetensorsHeaderBytes)
      CHECK_THROWS_WITH(SafetensorsFile(big),
                        Contains("the header (104857600 bytes) is not valid JSON"));
    else
      CHECK_THROWS_WITH(SafetensorsFile(big),
                        Contains("the header length 104857601 is above the limit 104857600"));
  }
  const Refusal refusal{d};
  const std::string e = R"("dtype":"F32","shape":[2])";
  // An offset of 2^63 - 1 is a number the reader holds (and past the data); 2^63 is not.
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,9223372036854775807]}})", std::string(8, '\0'),
          "data_offsets [0, 9223372036854775807] end past the data's 8 bytes");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,9223372036854775808]}})", std::string(8, '\0'),
          "tensor 'a' in safetensors file");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,9223372036854775808]}})", std::string(8, '\0'),
          "data_offsets[1] = 9223372036854775808 is above 2^63 - 1");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[9223372036854775808,8]}})", std::string(8, '\0'),
          "data_offsets[0] = 9223372036854775808 is above 2^63 - 1");
  refusal(R"({"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}})",
          std::string(8, '\0'), "shape[0] = 9223372036854775808 is above 2^63 - 1");
  // data_offsets of three numbers, or of none.
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8,16]}})", std::string(16, '\0'),
          "data_offsets [0,8,16] is not [begin, end]");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[]}})", "", "data_offsets [] is not [begin, end]");
  // Nesting to the limit is parsed (and refused for what it holds); one level more is not.
  for (const int levels : {kMaxJsonDepth, kMaxJsonDepth + 1}) {
    const std::string h = "{\"__metadata__\":" + std::string(std::size_t(levels), '[') +
                          std::string(std::size_t(levels), ']') + "}";
    refusal(h, "",
            levels == kMaxJsonDepth ? "__metadata__ is a JSON array, not an object of strings"
                                    : "the JSON header is nested deeper than the limit 64");
  }
}

TEST_CASE("safetensors: a header that is not a JSON object of well-formed entries",
          "[safetensors]") {
  TempDir d("safetensors");
  const Refusal refusal{d};
  const std::string e = R"("dtype":"F32","shape":[2])";
  refusal("{\"a\": ", "", "the header (6 bytes) is not valid JSON");
  refusal("[1, 2]", "", "the header is a JSON array, not an object of tensors");
  refusal("\"x\"", "", "the header is a JSON string, not an object");
  refusal(R"({"a":3})", "", "tensor 'a' in safetensors file");
  refusal(R"({"a":3})", "", "is a JSON number, not an object {dtype, shape, data_offsets}");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8],"x":1}})", std::string(8, '\0'),
          "tensor 'a' in safetensors file");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8],"x":1}})", std::string(8, '\0'),
          "unknown key 'x' (the keys are dtype, shape, data_offsets)");
  refusal(R"({"a":{)" + e + "}}", "", "tensor 'a' in safetensors file");
  refusal(R"({"a":{)" + e + "}}", "", "has no 'data_offsets'");
  refusal(R"({"a":{"dtype":7,"shape":[],"data_offsets":[0,4]}})", std::string(4, '\0'),
          "dtype 7 is not a string");
  refusal(R"({"a":{"dtype":"F4X","shape":[],"data_offsets":[0,4]}})", std::string(4, '\0'),
          "dtype 'F4X' is not one of F16, BF16, F32, I32, F64");
  refusal(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,4]}})", std::string(4, '\0'),
          "shape[0] = -2 is not a non-negative integer");
  refusal(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", std::string(4, '\0'),
          "shape[0] = 1.5 is not a non-negative integer");
  refusal(R"({"a":{"dtype":"F32","shape":"2","data_offsets":[0,4]}})", std::string(4, '\0'),
          "shape \"2\" is not an array");
  refusal(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
          std::string(4, '\0'), "holds more than 2^63 - 1 elements");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0]}})", "", "data_offsets [0] is not [begin, end]");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[8,0]}})", std::string(8, '\0'),
          "data_offsets [8, 0] ends before it begins");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,18446744073709551615]}})", "",
          "data_offsets[1] = 18446744073709551615 is above 2^63 - 1");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]}})", std::string(6, '\0'),
          "tensor 'a' in safetensors file");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]}})", std::string(6, '\0'),
          "data_offsets [0, 8] end past the data's 6 bytes");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,12]}})", std::string(12, '\0'),
          "data_offsets [0, 12] hold 12 bytes, but shape [2] of F32 is 2 x 4 bytes");
  // Entries that overlap, leave a gap or leave bytes at the end.
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]},"b":{)" + e + R"(,"data_offsets":[4,12]}})",
          std::string(12, '\0'), "tensor 'b' in safetensors file");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]},"b":{)" + e + R"(,"data_offsets":[4,12]}})",
          std::string(12, '\0'), "its bytes [4, 12) overlap tensor 'a' at [0, 8)");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]},"b":{)" + e + R"(,"data_offsets":[0,8]}})",
          std::string(8, '\0'), "overlap tensor 'a' at [0, 8)");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[4,12]}})", std::string(12, '\0'),
          "the data's bytes [0, 4) belong to no tensor (before tensor 'a')");
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]}})", std::string(10, '\0'),
          "the data's bytes [8, 10) belong to no tensor (the tensors end at 8)");
  // A key twice, metadata not of strings, nesting past the limit.
  refusal(R"({"a":{)" + e + R"(,"data_offsets":[0,8]},"a":{)" + e + R"(,"data_offsets":[8,16]}})",
          std::string(16, '\0'), "the JSON header has the key 'a' twice");
  refusal(R"({"a":{"dtype":"F32","dtype":"F32","shape":[],"data_offsets":[0,4]}})",
          std::string(4, '\0'), "the key 'dtype' twice");
  refusal(R"({"__metadata__":{"n":1}})", "", "__metadata__ 'n' is 1, not a string");
  refusal(R"({"__metadata__":[]})", "", "__metadata__ is a JSON array, not an object of strings");
  refusal(R"({"":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})", std::string(4, '\0'),
          "a tensor has an empty name");
  std::string deep = "{\"__metadata__\":";
  for (int i = 0; i < 100; ++i) deep += "[";
  refusal(deep + std::string(100, ']') + "}", "",
          "the JSON header is nested deeper than the limit 64");
}

TEST_CASE("safetensors fuzz: every truncation of a valid file is refused, never a crash",
          "[safetensors][fuzz]") {
  TempDir d("safetensors");
  const std::string full = small_file();
  CHECK(outcome(d.file("full.safetensors", full)) == 0);
  for (std::size_t n = 0; n < full.size(); ++n) {
    INFO("truncated to " << n << " of " << full.size() << " bytes");
    int r = -1;
    CHECK_NOTHROW(r = outcome(d.file("t.safetensors", full.substr(0, n))));
    CHECK(r == 1);  // every tensor is needed to fill the data: no prefix is a valid file
  }
}

TEST_CASE("safetensors fuzz: random bytes and random byte changes open or are refused",
          "[safetensors][fuzz]") {
  TempDir d("safetensors");
  std::mt19937 rng(20261128);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::string valid = small_file();
  const std::string path = d.path + "/f.safetensors";
  int opened = 0;
  for (int i = 0; i < 600; ++i) {
    std::string s;
    if (i % 3 == 0) {
      // Random bytes behind a header length that fits the file (else the length refuses them).
      const std::size_t n = std::size_t(std::uniform_int_distribution<int>(0, 120)(rng));
      std::string body(n, '\0');
      for (char& c : body) c = char(byte(rng));
      s = safetensors_bytes(body.substr(0, n / 2), body.substr(n / 2));
      if (i % 6 == 0) s[0] = char(byte(rng));
    } else {
      // A valid file with 1..4 bytes changed (the header's length, its text or the data).
      s = valid;
      const int changes = 1 + i % 4;
      for (int c = 0; c < changes; ++c)
        s[std::size_t(std::uniform_int_distribution<int>(0, int(s.size()) - 1)(rng))] =
            char(byte(rng));
    }
    d.file("f.safetensors", s);
    INFO("case " << i);
    int r = -1;
    CHECK_NOTHROW(r = outcome(path));
    opened += r == 0;
  }
  CHECK(opened >= 1);  // changes to the data (not the header) still open
}
