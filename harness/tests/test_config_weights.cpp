// Real weights in experiment configs (harness/config_weights.hpp) on .safetensors files the tests
// write: a shape naming a tensor takes N and K_dim from it, its problems quantize exactly that
// tensor (kbit and AWQ) or read AWQ tensors as they are, the CSV and run.json say where the
// weights came from; each refusal names the config and its line, the key, the shape, the file,
// the tensor and the value. Everything here is CPU work (the problem's host weights, the check's
// reference input); no device is needed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/config.hpp"
#include "harness/config_weights.hpp"
#include "harness/results.hpp"
#include "harness/tests/safetensors_writer.hpp"
#include "harness/tests/temp_dir.hpp"
#include "reference/awq.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"

using namespace kbit;
using Catch::Contains;
using kbit::test::le16;
using kbit::test::le32;
using kbit::test::safetensors_file;
using kbit::test::StTensor;
using kbit::test::TempDir;

namespace {

constexpr std::int64_t kN = 64, kK = 256;
const std::string kW = "model.layers.0.mlp.up_proj.weight";
const std::string kQ = "model.layers.0.mlp.up_proj.";  // + qweight, qzeros, scales

// W[64, 256] ~ N(0, 0.02^2) as BF16, columns 3 and 100 thirty times larger (outlier channels).
std::vector<std::uint16_t> weight_bf16() {
  const std::vector<float> x = random_normal(kN * kK, 7, 0.02f);
  std::vector<std::uint16_t> w(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    w[i] = float_to_bf16(x[i] * (i % kK == 3 || i % kK == 100 ? 30.0f : 1.0f));
  return w;
}
std::vector<float> as_floats(const std::vector<std::uint16_t>& bf16) {
  std::vector<float> x;
  for (std::uint16_t h : bf16) x.push_back(bf16_to_float(h));
  return x;
}

std::vector<std::uint32_t> u32(const std::vector<std::int32_t>& v) {
  return std::vector<std::uint32_t>(v.begin(), v.end());
}

// The AWQ tensors (group 64) of the same weight, as a checkpoint stores them.
AwqTensor awq_of_weight() {
  return awq_quantize(as_floats(weight_bf16()), kN, kK, 64);
}

// w.safetensors in dir: the weight, its AWQ tensors, and tensors each refusal needs.
std::string write_file(const TempDir& dir, const std::string& name = "w.safetensors") {
  const AwqTensor a = awq_of_weight();
  std::vector<std::uint16_t> bad(2 * 32, float_to_half(0.5f));
  bad[33] = 0x7E00;  // nan at [1, 1]
  std::vector<std::uint16_t> scales_nan = a.scales;
  scales_nan[2 * kN + 5] = 0x7E00;  // nan at [2, 5]
  const std::string text = safetensors_file(
      {{kW, "BF16", {kN, kK}, le16(weight_bf16())},
       {kQ + "qweight", "I32", {kK, kN / 8}, le32(u32(a.qweight))},
       {kQ + "qzeros", "I32", {kK / 64, kN / 8}, le32(u32(a.qzeros))},
       {kQ + "scales", "F16", {kK / 64, kN}, le16(a.scales)},
       {"scales_f32", "F32", {kK / 64, kN}, le32(std::vector<std::uint32_t>(kK / 64 * kN, 0))},
       {"scales_3rows", "F16", {3, kN}, le16(std::vector<std::uint16_t>(3 * kN, 0x3C00))},
       {"qzeros_short", "I32", {kK / 64, 4}, le32(std::vector<std::uint32_t>(kK / 64 * 4, 0))},
       {"narrow.weight", "F16", {32, kK}, le16(std::vector<std::uint16_t>(32 * kK, 0x3C00))},
       {"bias", "F32", {kN}, le32(std::vector<std::uint32_t>(kN, 0x3F800000))},
       {"odd", "F16", {8, 48}, le16(std::vector<std::uint16_t>(8 * 48, 0x3C00))},
       {"ids", "I32", {4, 32}, le32(std::vector<std::uint32_t>(128, 5))},
       {"bad", "F16", {2, 32}, le16(bad)},
       {"short_k.weight", "F16", {kN, kK / 2}, le16(std::vector<std::uint16_t>(kN * kK / 2, 0))},
       {"qweight_short", "I32", {kK, 4}, le32(std::vector<std::uint32_t>(kK * 4, 0))},
       {"scales_0rows", "F16", {0, kN}, ""},
       {"scales_nan", "F16", {kK / 64, kN}, le16(scales_nan)}});
  std::filesystem::create_directories(std::filesystem::path(dir.path + "/" + name).parent_path());
  return dir.file(name, text);
}

// 64-bit FNV-1a of bytes as 16 lower-case hex digits (run.json's "fnv1a").
std::string fnv1a_hex(const std::string& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= std::uint8_t(c);
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

// A config of one dense shape (its inline table's text), K = 4, fp16, cuBLAS; `formats` text
// replaces the default (then k_bits only where it names "kbit").
std::string config(const std::string& shape, const std::string& formats = "",
                   const std::string& more = "") {
  const bool kbit = formats.empty() || formats.find("kbit") != std::string::npos;
  return "name = \"w\"\nshapes = [" + shape + "]\nm = [1, 16]\n" +
         (formats.empty() ? "" : "formats = " + formats + "\n") + (kbit ? "k_bits = [4]\n" : "") +
         "dtype = [\"fp16\"]\nvariants = [\"cublas_fp16\"]\n" + more;
}
std::string tensor_shape(const std::string& tensor, const std::string& dims = "") {
  return "{ name = \"up\"" + dims + ", weights = { file = \"w.safetensors\", tensor = \"" + tensor +
         "\" } }";
}
std::string awq_shape(const std::string& extra = "") {
  return "{ name = \"up\", weights = { file = \"w.safetensors\", qweight = \"" + kQ +
         "qweight\", qzeros = \"" + kQ + "qzeros\", scales = \"" + kQ + "scales\"" + extra + " } }";
}

// The refusal of config `text` at `path` (its message), or "(accepted)".
std::string refusal_of(const std::string& text, const std::string& path) {
  try {
    parse_experiment(text, path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("config weights: a tensor gives the shape its N and K_dim, its problems quantize it",
          "[config][weights]") {
  TempDir dir("config_weights");
  const std::string st = write_file(dir);
  const std::string path = dir.path + "/e.toml";
  // N and K_dim left out (taken from the tensor) or given as the tensor's: the same shape.
  for (const std::string dims : {"", ", n = 64, k_dim = 256"}) {
    INFO("dims '" << dims << "'");
    const ExperimentConfig c =
        parse_experiment(config(tensor_shape(kW, dims), "[\"kbit\", \"awq_g64\"]"), path);
    REQUIRE(c.shapes.size() == 1);
    const ShapeConfig& s = c.shapes[0];
    CHECK(s.n == kN);
    CHECK(s.k_dim == kK);
    CHECK(s.weights.given());
    CHECK(s.weights.file == "w.safetensors");
    CHECK(s.weights.path == st);
    CHECK(s.weights.tensor_dtype == "BF16");
    CHECK(s.weights.at == path + ":2");

    // kbit: exactly the reference quantizer on the tensor's values (BF16 widened exactly).
    const std::vector<float> x = as_floats(weight_bf16());
    const std::vector<float> cb = make_codebook("nf", 4);
    const HostWeights kb = shape_host_weights(s, 4, 0, cb, 99);
    const QuantizedTensor q = quantize(x, cb, 4);
    CHECK(kb.N == kN);
    CHECK(kb.K_dim == kK);
    CHECK(kb.awq_group == 0);
    CHECK(kb.q.packed == q.packed);
    CHECK(kb.q.absmax_e4m4 == q.absmax_e4m4);
    CHECK(kb.W == dequantize_f32(q, cb));
    // ... not the N(0,1) draw of the same seed, which a shape without weights gets.
    CHECK(kb.q.packed != make_host_weights(kN, kK, 4, cb, 1, 99).q.packed);
    // AWQ problems quantize the same tensor with awq_quantize, as they do the draw.
    const HostWeights aw = shape_host_weights(s, 4, 64, {}, 99);
    const AwqTensor a = awq_quantize(x, kN, kK, 64);
    CHECK(aw.awq_group == 64);
    CHECK(aw.awq.qweight == a.qweight);
    CHECK(aw.awq.scales == a.scales);
    CHECK(aw.W == awq_dequantize(a));

    CHECK(weights_source(&s.weights, 0) == "w.safetensors:" + kW);
    CHECK(weights_source(&s.weights, 64) == "w.safetensors:" + kW);
    const nlohmann::json j = weights_json(c);
    REQUIRE(j.size() == 1);
    CHECK(j[0]["shape"] == "up");
    CHECK(j[0]["source"] == "file");
    CHECK(j[0]["file"] == "w.safetensors");
    CHECK(j[0]["path"] == st);
    CHECK(j[0]["N"] == kN);
    CHECK(j[0]["K_dim"] == kK);
    CHECK(j[0]["tensor"]["name"] == kW);
    CHECK(j[0]["tensor"]["dtype"] == "BF16");
    CHECK(j[0]["tensor"]["fnv1a"].get<std::string>().size() == 16);
    CHECK_FALSE(j[0].contains("awq"));
  }
}

TEST_CASE("config weights: shapes without weights draw N(0,1), recorded as such",
          "[config][weights]") {
  TempDir dir("config_weights");
  const ExperimentConfig c =
      parse_experiment(config("{ name = \"a\", k_dim = 64, n = 100 }"), dir.path + "/e.toml");
  const ShapeConfig& s = c.shapes[0];
  CHECK_FALSE(s.weights.given());
  const std::vector<float> cb = make_codebook("nf", 4);
  CHECK(shape_host_weights(s, 4, 0, cb, 5).q.packed ==
        make_host_weights(100, 64, 4, cb, 1, 5).q.packed);
  CHECK(weights_source(&s.weights, 0) == "normal");
  CHECK(weights_source(nullptr, 0) == "normal");
  CHECK(weights_json(c) == nlohmann::json::parse(R"([{"shape":"a","source":"normal"}])"));
  // The CSV's last column; a row of a run before it existed reads as the draw.
  CHECK(result_columns().back() == "weights_source");
  CHECK(ResultRow{}.weights_source == "normal");
}

TEST_CASE("config weights: AWQ tensors are read as they are, their group the format's",
          "[config][weights][awq]") {
  TempDir dir("config_weights");
  const std::string st = write_file(dir);
  const std::string path = dir.path + "/e.toml";
  const AwqTensor a = awq_of_weight();
  const ExperimentConfig c = parse_experiment(config(awq_shape(), "\"awq_g64\""), path);
  const ShapeConfig& s = c.shapes[0];
  CHECK(s.n == kN);
  CHECK(s.k_dim == kK);
  CHECK(s.weights.awq_group == 64);
  const HostWeights hw = shape_host_weights(s, 4, 64, {}, 1);
  CHECK(hw.awq_group == 64);
  CHECK(hw.awq.qweight == a.qweight);
  CHECK(hw.awq.qzeros == a.qzeros);
  CHECK(hw.awq.scales == a.scales);
  CHECK(hw.W == awq_dequantize(a));
  CHECK(weights_source(&s.weights, 64) == "w.safetensors:" + kQ + "qweight");
  // Problems the config's formats exclude (check_weights_formats) are refused if asked for.
  CHECK_THROWS_WITH(shape_host_weights(s, 4, 128, {}, 1),
                    Contains("shape 'up': AWQ tensors of group 64 for an awq_g128 problem"));
  CHECK_THROWS_WITH(shape_host_weights(s, 4, 0, make_codebook("nf", 4), 1),
                    Contains("shape 'up': no tensor for a kbit problem"));
  const nlohmann::json j = weights_json(c)[0];
  CHECK(j["awq"]["group"] == 64);
  CHECK(j["awq"]["scales"]["name"] == kQ + "scales");
  CHECK_FALSE(j.contains("tensor"));

  // Beside a float tensor: kbit problems quantize the tensor, AWQ ones read the AWQ tensors.
  const ExperimentConfig both = parse_experiment(
      config(awq_shape(", tensor = \"" + kW + "\""), "[\"kbit\", \"awq_g64\"]"), path);
  const ShapeConfig& b = both.shapes[0];
  CHECK(shape_host_weights(b, 4, 0, make_codebook("nf", 4), 1).q.packed ==
        quantize(as_floats(weight_bf16()), make_codebook("nf", 4), 4).packed);
  CHECK(shape_host_weights(b, 4, 64, {}, 1).awq.qweight == a.qweight);
  CHECK(weights_source(&b.weights, 0) == "w.safetensors:" + kW);
  CHECK(weights_source(&b.weights, 64) == "w.safetensors:" + kQ + "qweight");
}

TEST_CASE("config weights: a relative file is read from the folder of the file naming it",
          "[config][weights]") {
  TempDir dir("config_weights");
  const std::string st = write_file(dir, "ckpt/w.safetensors");
  // From the config's folder.
  const std::string shape =
      "{ name = \"up\", weights = { file = \"ckpt/w.safetensors\", tensor = \"" + kW + "\" } }";
  const ExperimentConfig c = parse_experiment(config(shape), dir.path + "/e.toml");
  CHECK(c.shapes[0].weights.path == st);
  CHECK(c.shapes[0].n == kN);
  // From a shape file's folder (an include), whatever folder the config is in.
  std::filesystem::create_directories(dir.path + "/shapes");
  dir.file("shapes/m.toml",
           "model = \"m\"\n[[shape]]\nname = \"up\"\nweights = { file = "
           "\"../ckpt/w.safetensors\", tensor = \"" +
               kW + "\" }\n");
  const ExperimentConfig inc =
      parse_experiment(config("{ include = \"shapes/m.toml\" }"), dir.path + "/e.toml");
  CHECK(inc.shapes[0].weights.path == dir.path + "/shapes/../ckpt/w.safetensors");
  CHECK(inc.shapes[0].k_dim == kK);
  CHECK(inc.shapes[0].weights.at == dir.path + "/shapes/m.toml:4");
  // The same as a [shape.weights] table.
  dir.file("shapes/t.toml",
           "model = \"m\"\n[[shape]]\nname = \"up\"\n[shape.weights]\nfile = "
           "\"../ckpt/w.safetensors\"\ntensor = \"" +
               kW + "\"\n");
  const ExperimentConfig tab =
      parse_experiment(config("{ include = \"shapes/t.toml\" }"), dir.path + "/e.toml");
  CHECK(tab.shapes[0].weights.tensor == kW);
  CHECK(tab.shapes[0].n == kN);
  // An absolute path as it is.
  const ExperimentConfig abs = parse_experiment(
      config("{ name = \"up\", weights = { file = \"" + st + "\", tensor = \"" + kW + "\" } }"),
      "/nowhere/e.toml");
  CHECK(abs.shapes[0].weights.path == st);
}

TEST_CASE("config weights: each refusal names the config line, key, shape, file, tensor, value",
          "[config][weights]") {
  TempDir dir("config_weights");
  const std::string st = write_file(dir);
  const std::string path = dir.path + "/e.toml";
  auto refused = [&](const std::string& text) { return refusal_of(text, path); };
  const std::string in = "in safetensors file '" + st + "'";
  const std::string at = path + ":2: ";

  SECTION("the file") {
    const std::string msg = refused(config(
        "{ name = \"up\", weights = { file = \"none.safetensors\", tensor = \"" + kW + "\" } }"));
    CHECK_THAT(msg, Contains(at +
                             "key 'weights.file' of shape 'up' = \"none.safetensors\": "
                             "cannot open safetensors file '" +
                             dir.path + "/none.safetensors'") &&
                        Contains("(a relative file is read from the folder of " + path + ")"));
    CHECK_THAT(
        refused(config("{ name = \"up\", weights = { file = \"/dev/zero\", tensor = \"w\" } }")),
        Contains(at + "key 'weights.file' of shape 'up' = \"/dev/zero\": ") &&
            Contains("not a regular file"));
    std::filesystem::create_directories(dir.path + "/folder.safetensors");
    CHECK_THAT(refused(config("{ name = \"up\", weights = { file = \"folder.safetensors\", "
                              "tensor = \"w\" } }")),
               Contains("folder.safetensors") && Contains("not a regular file"));
  }
  SECTION("the tensor") {
    CHECK_THAT(refused(config(tensor_shape("nope"))),
               Contains(at + "key 'weights.tensor' of shape 'up': tensor 'nope' is not " + in +
                        " (it holds bad, bias, ids, model.layers.0.mlp.up_proj.qweight"));
    CHECK_THAT(refused(config(tensor_shape("ids"))),
               Contains(at + "key 'weights.tensor' of shape 'up': tensor 'ids' " + in +
                        " is I32, not F16, BF16 or F32"));
    CHECK_THAT(refused(config(tensor_shape("bias"))),
               Contains("tensor 'bias' " + in + " is 1-D [64]: a weight is 2-D [N, K_dim]"));
    CHECK_THAT(refused(config(tensor_shape("odd"))),
               Contains("tensor 'odd' " + in + " [8, 48]: K_dim = 48 must be a positive multiple"));
    CHECK_THAT(refused(config(tensor_shape("bad"))),
               Contains(at + "key 'weights.tensor' of shape 'up': tensor 'bad' " + in +
                        " holds nan at [1, 1]"));
  }
  SECTION("N and K_dim against the shape's") {
    CHECK_THAT(refused(config(tensor_shape(kW, ", n = 100"))),
               Contains(at + "key 'n' = 100 of shape 'up' is not its weights' (tensor '" + kW +
                        "' " + in + " is [64, 256]); give n = 64 or leave it out"));
    CHECK_THAT(refused(config(tensor_shape(kW, ", n = 64, k_dim = 512"))),
               Contains(at + "key 'k_dim' = 512 of shape 'up' is not its weights' (tensor '" + kW +
                        "' " + in + " is [64, 256]); give k_dim = 256"));
    CHECK_THAT(
        refused(config(awq_shape(", tensor = \"narrow.weight\""), "[\"kbit\", \"awq_g64\"]")),
        Contains(at + "key 'weights' of shape 'up' holds two weights: tensor "
                      "'narrow.weight' is [32, 256] (N, K_dim) but the AWQ tensors hold "
                      "N = 64, K_dim = 256"));
    CHECK_THAT(
        refused(config(awq_shape(", tensor = \"short_k.weight\""), "[\"kbit\", \"awq_g64\"]")),
        Contains(at + "key 'weights' of shape 'up' holds two weights: tensor "
                      "'short_k.weight' is [64, 128] (N, K_dim) but the AWQ tensors hold "
                      "N = 64, K_dim = 256"));
    // The AWQ tensors' shapes, and both weights' when both are given, as the message names them.
    const std::string awq_text = "AWQ tensors qweight '" + kQ + "qweight' " + in +
                                 " [256, 8], scales '" + kQ +
                                 "scales' [4, 64] hold N = 64, K_dim = 256";
    CHECK_THAT(refused(config("{ name = \"up\", n = 100, weights = { file = \"w.safetensors\", "
                              "qweight = \"" +
                                  kQ + "qweight\", qzeros = \"" + kQ + "qzeros\", scales = \"" +
                                  kQ + "scales\" } }",
                              "\"awq_g64\"")),
               Contains(at + "key 'n' = 100 of shape 'up' is not its weights' (" + awq_text +
                        "); give n = 64 or leave it out"));
    CHECK_THAT(refused(config("{ name = \"up\", k_dim = 512, weights = { file = "
                              "\"w.safetensors\", tensor = \"" +
                                  kW + "\", qweight = \"" + kQ + "qweight\", qzeros = \"" + kQ +
                                  "qzeros\", scales = \"" + kQ + "scales\" } }",
                              "[\"kbit\", \"awq_g64\"]")),
               Contains(at + "key 'k_dim' = 512 of shape 'up' is not its weights' (tensor '" + kW +
                        "' " + in + " is [64, 256]; " + awq_text + "); give k_dim = 256"));
    // A shape without weights still needs both.
    CHECK_THAT(refused(config("{ name = \"up\", n = 64 }")),
               Contains("key 'k_dim' is missing from a shape"));
  }
  SECTION("the AWQ tensors") {
    auto awq = [&](const std::string& qweight, const std::string& qzeros,
                   const std::string& scales) {
      return config("{ name = \"up\", weights = { file = \"w.safetensors\", qweight = \"" +
                        qweight + "\", qzeros = \"" + qzeros + "\", scales = \"" + scales +
                        "\" } }",
                    "\"awq_g64\"");
    };
    const std::string qw = kQ + "qweight", qz = kQ + "qzeros", sc = kQ + "scales";
    CHECK_THAT(refused(awq(qw, qz, "scales_f32")),
               Contains(at + "key 'weights' of shape 'up': tensor 'scales_f32' " + in +
                        " is F32, not F16"));
    CHECK_THAT(refused(awq(kW, qz, sc)),
               Contains("tensor '" + kW + "' " + in + " is BF16, not I32"));
    CHECK_THAT(refused(awq(qw, qz, "scales_3rows")),
               Contains("scales has 3 rows (groups) for K_dim = 256 (qweight's rows)"));
    CHECK_THAT(refused(awq(qw, "qzeros_short", sc)),
               Contains("tensor 'qzeros_short' " + in + " has shape [4, 4], not [4, 8]"));
    CHECK_THAT(refused(awq("qweight_short", qz, sc)),
               Contains(at + "key 'weights' of shape 'up': tensor 'qweight_short' " + in +
                        " has shape [256, 4], not [256, 8]"));
    CHECK_THAT(refused(awq(qw, qz, "scales_0rows")),
               Contains("scales has 0 rows (groups) for K_dim = 256 (qweight's rows)"));
    CHECK_THAT(refused(awq(qw, qz, "scales_nan")),
               Contains(at + "key 'weights' of shape 'up': tensor 'scales_nan' " + in +
                        " holds nan at [2, 5]"));
    CHECK_THAT(
        refused(config(
            "{ name = \"up\", weights = { file = \"w.safetensors\", qweight = \"" + qw + "\" } }",
            "\"awq_g64\"")),
        Contains(at + "key 'weights' of shape 'up' lacks qzeros, scales: AWQ tensors are "
                      "all three"));
  }
  SECTION("the formats: kbit needs a float tensor, AWQ tensors their own group") {
    CHECK_THAT(refused(config(awq_shape())),
               Contains(at + "key 'weights' of shape 'up' names AWQ tensors only (qweight '" + kQ +
                        "qweight' " + in + "); the config's formats hold \"kbit\""));
    CHECK_THAT(refused(config(awq_shape(), "\"awq_g128\"")),
               Contains(at + "key 'weights' of shape 'up' holds AWQ tensors of group 64") &&
                   Contains("formats names \"awq_g128\""));
    // A float tensor serves every AWQ group (awq_quantize), as the draw does.
    CHECK(refused(config(tensor_shape(kW), "[\"awq_g32\", \"awq_g128\"]")) == "(accepted)");
  }
  SECTION("the table itself") {
    CHECK_THAT(refused(config("{ name = \"up\", weights = \"w.safetensors\" }")),
               Contains(at + "key 'weights' of shape 'up' must be a table"));
    CHECK_THAT(refused(config("{ name = \"up\", weights = { file = \"w.safetensors\", tensor = \"" +
                              kW + "\", dtype = \"bf16\" } }")),
               Contains(at + "key 'weights.dtype' of shape 'up' is not known in weights (known: "
                             "file, tensor, qweight, qzeros, scales)"));
    CHECK_THAT(refused(config("{ name = \"up\", weights = { tensor = \"" + kW + "\" } }")),
               Contains(at + "key 'weights' of shape 'up' has no file"));
    CHECK_THAT(refused(config("{ name = \"up\", weights = { file = \"w.safetensors\" } }")),
               Contains(at + "key 'weights' of shape 'up' names no tensor"));
    CHECK_THAT(
        refused(config("{ name = \"up\", weights = { file = \"w.safetensors\", tensor = 3 } }")),
        Contains(at + "key 'weights.tensor' of shape 'up' must be a string"));
    CHECK_THAT(
        refused(config("{ name = \"up\", weights = { file = \"w.safetensors\", tensor = \"\" } }")),
        Contains(at + "key 'weights.tensor' of shape 'up' must not be empty"));
    CHECK_THAT(
        refused(config("{ name = \"up\", weights = { file = \"\", tensor = \"" + kW + "\" } }")),
        Contains(at + "key 'weights.file' of shape 'up' must not be empty"));
  }
  SECTION("a problem kind that cannot take them: MoE layers") {
    const std::string moe =
        "name = \"w\"\nmoe = [{ name = \"e\", experts = 8, k_dim = 256, n = 64, top_k = 2, "
        "weights = { file = \"w.safetensors\", tensor = \"" +
        kW +
        "\" } }]\ntokens = [4]\n"
        "k_bits = [4]\ndtype = [\"fp16\"]\nvariants = [\"cublas_fp16\"]\n";
    CHECK_THAT(refused(moe), Contains(path + ":2: key 'weights' is for dense shapes: an moe layer "
                                             "draws N(0,1) weights for each of its experts"));
  }
}

TEST_CASE("config weights: run.json names each tensor by the FNV-1a of its bytes, MoE as drawn",
          "[config][weights]") {
  TempDir dir("config_weights");
  write_file(dir);
  const AwqTensor a = awq_of_weight();
  const std::string path = dir.path + "/e.toml";
  const nlohmann::json j = weights_json(parse_experiment(
      config(awq_shape(", tensor = \"" + kW + "\""), "[\"kbit\", \"awq_g64\"]"), path));
  REQUIRE(j.size() == 1);
  CHECK(j[0]["tensor"]["fnv1a"] == fnv1a_hex(le16(weight_bf16())));
  CHECK(j[0]["awq"]["qweight"]["fnv1a"] == fnv1a_hex(le32(u32(a.qweight))));
  CHECK(j[0]["awq"]["qzeros"]["fnv1a"] == fnv1a_hex(le32(u32(a.qzeros))));
  CHECK(j[0]["awq"]["scales"]["fnv1a"] == fnv1a_hex(le16(a.scales)));
  CHECK(j[0]["awq"]["qweight"]["name"] == kQ + "qweight");
  CHECK(j[0]["awq"]["qzeros"]["name"] == kQ + "qzeros");
  // An MoE layer draws N(0,1) weights: recorded after the dense shapes.
  const nlohmann::json m = weights_json(parse_experiment(
      config(tensor_shape(kW), "",
             "moe = [{ name = \"e\", experts = 8, k_dim = 256, n = 64, top_k = 2 }]\n"
             "tokens = [4]\n"),
      path));
  REQUIRE(m.size() == 2);
  CHECK(m[0]["tensor"]["fnv1a"] == fnv1a_hex(le16(weight_bf16())));
  CHECK(m[1] == nlohmann::json::parse(R"({"shape":"e","source":"normal"})"));
}

TEST_CASE("config weights: a refusal names the line of the key at fault in a weights table",
          "[config][weights]") {
  TempDir dir("config_weights");
  write_file(dir);
  std::filesystem::create_directories(dir.path + "/shapes");
  const std::string in = "in safetensors file '" + dir.path + "/shapes/../w.safetensors'";
  // The included file: the table at line 4, its keys at lines 5, 6 (, 7, 8).
  auto refused = [&](const std::string& keys, const std::string& formats = "") {
    dir.file("shapes/m.toml", "model = \"m\"\n[[shape]]\nname = \"up\"\n[shape.weights]\n" + keys);
    return refusal_of(config("{ include = \"shapes/m.toml\" }", formats), dir.path + "/e.toml");
  };
  const std::string m = dir.path + "/shapes/m.toml:";
  CHECK_THAT(refused("file = \"none.safetensors\"\ntensor = \"" + kW + "\"\n"),
             Contains(m + "5: key 'weights.file' of shape 'up' = \"none.safetensors\": cannot "
                          "open safetensors file"));
  CHECK_THAT(refused("file = \"../w.safetensors\"\ntensor = \"ids\"\n"),
             Contains(m + "6: key 'weights.tensor' of shape 'up': tensor 'ids' " + in +
                      " is I32, not F16, BF16 or F32"));
  CHECK_THAT(refused("file = \"../w.safetensors\"\n"),
             Contains(m + "4: key 'weights' of shape 'up' names no tensor"));
  // The AWQ tensors' refusal: the line of one of their keys (6..8), not the table's.
  CHECK_THAT(refused("file = \"../w.safetensors\"\nqweight = \"" + kQ + "qweight\"\nqzeros = \"" +
                         kQ + "qzeros\"\nscales = \"scales_f32\"\n",
                     "\"awq_g64\""),
             Catch::Matches(".*/shapes/m\\.toml:[678]: key 'weights' of shape 'up': tensor "
                            "'scales_f32' .* is F32, not F16.*"));
  CHECK(refused("file = \"../w.safetensors\"\ntensor = \"" + kW + "\"\n") == "(accepted)");
}

TEST_CASE("config weights: N and K_dim of file weights are held to the limits of n and k_dim",
          "[config][weights]") {
  TempDir dir("config_weights");
  // All-zero tensors, their data never written. "edge" is N = kMaxDim (the most); "tall" one row
  // more, "wide" K_dim one block past kMaxDim; the AWQ tensors of group 32 "big_*" hold
  // N x K_dim = 2^31 elements (one above the limit), "many_*" N = kMaxDim + 8.
  const std::int64_t big_k = 2048, big_n = kMaxDim, many_n = kMaxDim + 8;
  test::write_zero_safetensors(dir.path + "/w.safetensors",
                               {{"edge", "F16", {kMaxDim, 32}, ""},
                                {"tall", "F16", {kMaxDim + 1, 32}, ""},
                                {"wide", "F16", {8, kMaxDim + 32}, ""},
                                {"big_qweight", "I32", {big_k, big_n / 8}, ""},
                                {"big_qzeros", "I32", {big_k / 32, big_n / 8}, ""},
                                {"big_scales", "F16", {big_k / 32, big_n}, ""},
                                {"many_qweight", "I32", {32, many_n / 8}, ""},
                                {"many_qzeros", "I32", {1, many_n / 8}, ""},
                                {"many_scales", "F16", {1, many_n}, ""}},
                               {2, 2, 2, 4, 4, 2, 4, 4, 2});
  const std::string path = dir.path + "/e.toml";
  const std::string in = "in safetensors file '" + dir.path + "/w.safetensors'";
  auto refused = [&](const std::string& text) { return refusal_of(text, path); };
  const ExperimentConfig c = parse_experiment(config(tensor_shape("edge")), path);
  CHECK(c.shapes[0].n == kMaxDim);
  CHECK(c.shapes[0].k_dim == 32);
  CHECK_THAT(refused(config(tensor_shape("tall"))),
             Contains("key 'weights.tensor' of shape 'up': tensor 'tall' " + in +
                      " [1048577, 32]: N = 1048577, K_dim = 32; each is at most 1048576 (the "
                      "limit of n and k_dim)"));
  CHECK_THAT(refused(config(tensor_shape("wide"))),
             Contains("tensor 'wide' " + in +
                      " [8, 1048608]: N = 8, K_dim = 1048608; each is at most 1048576"));
  auto awq = [&](const std::string& p) {
    return config("{ name = \"up\", weights = { file = \"w.safetensors\", qweight = \"" + p +
                      "qweight\", qzeros = \"" + p + "qzeros\", scales = \"" + p + "scales\" } }",
                  "\"awq_g32\"");
  };
  CHECK_THAT(refused(awq("big_")),
             Contains("key 'weights' of shape 'up': qweight 'big_qweight' " + in +
                      " [2048, 131072], scales 'big_scales' [64, 1048576]: N x K_dim = "
                      "2147483648 elements is above the limit 2147483647"));
  CHECK_THAT(refused(awq("many_")),
             Contains("qweight 'many_qweight' " + in +
                      " [32, 131073], scales 'many_scales' [1, 1048584]: N = 1048584, "
                      "K_dim = 32; each is at most 1048576"));
}
