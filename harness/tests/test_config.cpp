#include <catch2/catch.hpp>

#include <filesystem>

#include "harness/config.hpp"
#include "harness/device_info.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {
const std::string kDir =
    source_dir() + "/experiments/x.toml";  // includes resolve from experiments/
// Config paths in experiments/ (so includes resolve); messages end with "<name>:<line>".
std::string P(const std::string& name) {
  return source_dir() + "/experiments/" + name;
}
const std::string kGood = R"(name = "t"
shapes = [{ name = "a", k_dim = 64, n = 100 }, { include = "shapes/llama3_8b.toml" }]
m = [1, 4]
k_bits = [2, 4]
dtype = ["fp16", "bf16"]
variants = ["cublas_fp16"]
[timing]
mode = "hot"
timeout_s = 0.5
[check]
seed = 3
)";

std::string with(const std::string& extra) {
  return kGood + extra;
}
}  // namespace

TEST_CASE("a good config parses, includes resolved", "[config]") {
  const auto c = parse_experiment(kGood, kDir);
  CHECK(c.name == "t");
  REQUIRE(c.shapes.size() == 3);
  CHECK(c.shapes[0].name == "a");
  CHECK(c.shapes[1].name == "llama3_8b.gate_up");
  CHECK(c.shapes[1].k_dim == 4096);
  CHECK(c.shapes[1].n == 14336);
  CHECK(c.m == std::vector<std::int64_t>{1, 4});
  CHECK(c.k_bits == std::vector<int>{2, 4});
  CHECK(c.dtypes == std::vector<DType>{DType::f16, DType::bf16});
  CHECK_FALSE(c.timing.cold);
  CHECK(c.timing.timeout_s == 0.5);
  CHECK_FALSE(c.timing.pdl);
  CHECK(c.check.seed == 3);
  CHECK(c.baseline == "cublas_fp16");
}

TEST_CASE("[timing] pdl is a boolean", "[config]") {
  auto sub = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  CHECK(parse_experiment(sub(kGood, "timeout_s = 0.5", "pdl = true"), P("e.toml")).timing.pdl);
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "timeout_s = 0.5", "pdl = 1"), P("e.toml")),
                    Catch::Contains("e.toml:9") && Catch::Contains("'pdl'"));
}

TEST_CASE("every shipped experiment config parses", "[config]") {
  const std::string dir = source_dir() + "/experiments";
  int n = 0;
  // Every file of the folder: a config nobody has run yet (or that a change broke) fails here,
  // on a machine without a GPU, not at the start of a device session.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    const std::string f = entry.path().stem().string();
    INFO(f);
    const auto c = load_experiment(entry.path().string());
    CHECK(c.name == f);
    CHECK_FALSE((c.shapes.empty() && c.moe.empty()));
    ++n;
  }
  CHECK(n >= 10);  // the folder was found and read
  CHECK(load_experiment(dir + "/baselines.toml").shapes.size() == 15);
  CHECK(load_experiment(dir + "/moe_decode.toml").moe.size() == 4);
}

TEST_CASE("the envelope config parses: auto and cuBLAS, K = 2..5, M = 1..4096, the peers",
          "[config]") {
  const auto c = load_experiment(source_dir() + "/experiments/envelope.toml");
  CHECK(c.name == "envelope");
  REQUIRE(c.shapes.size() == 8);  // Llama3-8B and -70B (2 each), Qwen3 and GLM dense (2 each)
  CHECK(c.shapes[0].name == "llama3_8b.gate_up");
  CHECK(c.shapes[7].name == "glm47.shared_down");
  CHECK(c.m == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096});
  CHECK(c.k_bits == std::vector<int>{2, 3, 4, 5});
  CHECK(c.dtypes == std::vector<DType>{DType::f16});
  CHECK(c.variants == std::vector<std::string>{"auto", "scalar_gemv", "warp_specialized",
                                               "fragment_mma", "cublas_fp16"});
  CHECK(c.baseline == "cublas_fp16");
  CHECK(c.peers == std::vector<std::string>{"humming_u2_g128", "humming_u3_g128", "humming_u4_g128",
                                            "humming_u5_g128"});
  CHECK(c.timing.cold);
  CHECK_FALSE(c.timing.pdl);
}

TEST_CASE("unknown and mistyped keys name the file, line and key", "[config]") {
  CHECK_THROWS_WITH(parse_experiment(with("warmpu = 3\n"), P("exp.toml")),
                    Catch::Contains("exp.toml:12") && Catch::Contains("'warmpu'") &&
                        Catch::Contains("in [check]"));
  CHECK_THROWS_WITH(parse_experiment(kGood + "[timing]\n", P("e.toml")), Catch::Contains("e.toml"));
  const std::string bad_timing = R"(name = "t"
shapes = [{ name = "a", k_dim = 64, n = 100 }]
m = 1
k_bits = 4
dtype = "fp16"
variants = "x"
[timing]
warmpu = 3
)";
  CHECK_THROWS_WITH(parse_experiment(bad_timing, P("e.toml")), Catch::Contains("e.toml:8") &&
                                                                   Catch::Contains("'warmpu'") &&
                                                                   Catch::Contains("[timing]"));
  CHECK_THROWS_WITH(
      parse_experiment(std::string(kGood).replace(kGood.find("m = [1, 4]"), 10, "m = \"one\""),
                       P("e.toml")),
      Catch::Contains("e.toml:3") && Catch::Contains("'m'") && Catch::Contains("integer"));
}

TEST_CASE("impossible values are refused with the value and the limit", "[config]") {
  auto sub = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "k_bits = [2, 4]", "k_bits = [2, 7]"), P("e.toml")),
                    Catch::Contains("7") && Catch::Contains("2..5"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "m = [1, 4]", "m = [0]"), P("e.toml")),
                    Catch::Contains("'m'") && Catch::Contains("minimum 1"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "mode = \"hot\"", "mode = \"warm\""), P("e.toml")),
                    Catch::Contains("'warm'"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "k_dim = 64", "k_dim = 100"), P("e.toml")),
                    Catch::Contains("100") && Catch::Contains("multiple of 32"));
  CHECK_THROWS_WITH(
      parse_experiment(sub(kGood, "dtype = [\"fp16\", \"bf16\"]", "dtype = \"fp8\""), P("e.toml")),
      Catch::Contains("'fp8'"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "timeout_s = 0.5", "timeout_s = -1"), P("e.toml")),
                    Catch::Contains("timeout_s"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "name = \"t\"", "name = \"a/b\""), P("e.toml")),
                    Catch::Contains("'a/b'"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "{ include = \"shapes/llama3_8b.toml\" }",
                                         "{ include = \"shapes/nope.toml\" }"),
                                     kDir),
                    Catch::Contains("nope.toml"));
  CHECK_THROWS_WITH(parse_experiment("name = \"t\"\nk_bits = 4\n", P("e.toml")),
                    Catch::Contains("'shapes' or 'moe'"));
  CHECK_THROWS_WITH(parse_experiment("name = \"t\"\nm = [1,\n", P("e.toml")),
                    Catch::Contains("e.toml:"));
}

TEST_CASE("every dimension has an upper limit, named with the file, line, key and value",
          "[config]") {
  auto sub = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "n = 100", "n = 1000000000"), P("e.toml")),
                    Catch::Contains("e.toml:2") && Catch::Contains("'n'") &&
                        Catch::Contains("1000000000") && Catch::Contains("limit 1048576"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "k_dim = 64", "k_dim = 4294967296"), P("e.toml")),
                    Catch::Contains("e.toml:2") && Catch::Contains("'k_dim'") &&
                        Catch::Contains("4294967296") && Catch::Contains("limit 1048576"));
  CHECK_THROWS_WITH(parse_experiment(sub(kGood, "m = [1, 4]", "m = [10000000000]"), P("e.toml")),
                    Catch::Contains("e.toml:3") && Catch::Contains("'m'") &&
                        Catch::Contains("10000000000") && Catch::Contains("limit 1048576"));
  // Each dimension inside its limit, their product past what an int indexes.
  CHECK_THROWS_WITH(
      parse_experiment(sub(sub(kGood, "n = 100", "n = 1048576"), "k_dim = 64", "k_dim = 4096"),
                       P("e.toml")),
      Catch::Contains("e.toml:2") && Catch::Contains("1048576 x 4096") &&
          Catch::Contains("limit 2147483647"));
  CHECK(parse_experiment(sub(sub(kGood, "n = 100", "n = 128256"), "k_dim = 64", "k_dim = 16384"),
                         P("e.toml"))
            .shapes[0]
            .n == 128256);  // Llama3-405B's vocabulary projection fits
  const std::string moe = R"(name = "moe"
moe = [{ name = "x", experts = 64, k_dim = 2048, n = 512, top_k = 8 }]
tokens = [1, 4]
k_bits = 4
dtype = "bf16"
variants = ["cublas_fp16"]
)";
  CHECK_THROWS_WITH(
      parse_experiment(sub(moe, "tokens = [1, 4]", "tokens = [1, 2000000]"), P("m.toml")),
      Catch::Contains("m.toml:3") && Catch::Contains("'tokens'") && Catch::Contains("2000000") &&
          Catch::Contains("limit 1048576"));
  // tokens x top_k are the rows of A.
  CHECK_THROWS_WITH(
      parse_experiment(sub(moe, "tokens = [1, 4]", "tokens = [1, 200000]"), P("m.toml")),
      Catch::Contains("m.toml:3") && Catch::Contains("'tokens'") && Catch::Contains("200000") &&
          Catch::Contains("1600000 rows") && Catch::Contains("limit 1048576"));
  CHECK_THROWS_WITH(parse_experiment(sub(moe, "experts = 64", "experts = 4294967297"), P("m.toml")),
                    Catch::Contains("m.toml:2") && Catch::Contains("'experts'") &&
                        Catch::Contains("4294967297") && Catch::Contains("1..4096"));
  CHECK_THROWS_WITH(parse_experiment(sub(moe, "top_k = 8", "top_k = 4294967304"), P("m.toml")),
                    Catch::Contains("m.toml:2") && Catch::Contains("'top_k'") &&
                        Catch::Contains("4294967304") && Catch::Contains("1..experts (64)"));
  CHECK_THROWS_WITH(parse_experiment(sub(moe, "n = 512", "n = 2000000"), P("m.toml")),
                    Catch::Contains("m.toml:2") && Catch::Contains("'n'") &&
                        Catch::Contains("2000000") && Catch::Contains("limit 1048576"));
  CHECK_THROWS_WITH(
      parse_experiment(sub(sub(moe, "k_dim = 2048", "k_dim = 1048576"), "n = 512", "n = 4096"),
                       P("m.toml")),
      Catch::Contains("m.toml:2") && Catch::Contains("4096 x 1048576") &&
          Catch::Contains("per expert") && Catch::Contains("limit 2147483647"));
  CHECK_THROWS_WITH(
      parse_experiment(sub(kGood, "timeout_s = 0.5", "warmup = 4294967297"), P("e.toml")),
      Catch::Contains("e.toml:9") && Catch::Contains("4294967297") && Catch::Contains("0..1000"));
}

TEST_CASE("a missing shapes include names the config, the line, the key and the path", "[config]") {
  const std::string text = R"(name = "x"
shapes = [{include = "shapes/nope.toml"}]
m = 1
k_bits = 4
dtype = "fp16"
variants = "cublas_fp16"
)";
  CHECK_THROWS_WITH(parse_experiment(text, P("x.toml")),
                    Catch::Contains(P("x.toml") + ":2") && Catch::Contains("'include'") &&
                        Catch::Contains(source_dir() + "/experiments/shapes/nope.toml"));
}

TEST_CASE("a dtype that is not a GEMM input lists only fp16 and bf16", "[config]") {
  auto sub = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  for (const char* bad : {"fp8", "fp32", "float32"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_experiment(sub(kGood, "dtype = [\"fp16\", \"bf16\"]",
                                           std::string("dtype = [\"fp16\", \"") + bad + "\"]"),
                                       P("e.toml")),
                      Catch::Contains("e.toml:5") && Catch::Contains("'dtype'") &&
                          Catch::Contains(std::string("'") + bad + "'") &&
                          Catch::Contains("fp16, bf16") && !Catch::Contains("fp32,"));
  }
}

TEST_CASE("custom codebooks and moe layers parse", "[config]") {
  const std::string moe = R"(name = "moe"
moe = [{ name = "x", experts = 64, k_dim = 2048, n = 512, top_k = 8 }]
tokens = [1, 4]
routing = "zipf"
k_bits = 2
dtype = "bf16"
codebook = [-1.0, -0.25, 0.3, 1.0]
variants = ["cublas_fp16"]
)";
  const auto c = parse_experiment(moe, "m.toml");
  REQUIRE(c.moe.size() == 1);
  CHECK(c.moe[0].top_k == 8);
  CHECK(c.tokens == std::vector<std::int64_t>{1, 4});
  CHECK(c.codebook == "custom");
  CHECK(c.codebook_values.size() == 4);
  std::string bad = moe;
  bad.replace(bad.find("top_k = 8"), 9, "top_k = 99");
  CHECK_THROWS_WITH(parse_experiment(bad, "m.toml"),
                    Catch::Contains("top_k") && Catch::Contains("99"));
  CHECK(c.moe[0].routing.empty());  // the experiment's routing
  std::string per_layer = moe;
  per_layer.replace(per_layer.find("top_k = 8 }"), 11, "top_k = 8, routing = \"uniform\" }");
  CHECK(parse_experiment(per_layer, "m.toml").moe[0].routing == "uniform");
  std::string bad_routing = moe;
  bad_routing.replace(bad_routing.find("top_k = 8 }"), 11, "top_k = 8, routing = \"skewed\" }");
  CHECK_THROWS_WITH(parse_experiment(bad_routing, "m.toml"), Catch::Contains("routing") &&
                                                                 Catch::Contains("'skewed'") &&
                                                                 Catch::Contains("uniform"));
  std::string badcb = moe;
  badcb.replace(badcb.find("k_bits = 2"), 10, "k_bits = 3");
  CHECK_THROWS_WITH(parse_experiment(badcb, "m.toml"),
                    Catch::Contains("has 4 values") && Catch::Contains("needs 8"));
}

TEST_CASE("config_hash is 64-bit FNV-1a in 16 hex digits", "[config]") {
  // The published FNV-1a 64 test vectors (offset basis cbf29ce484222325, prime 100000001b3): a
  // run.json's hash names its config text across builds, so a changed function must fail here.
  CHECK(config_hash("") == "cbf29ce484222325");
  CHECK(config_hash("a") == "af63dc4c8601ec8c");
  CHECK(config_hash("foobar") == "85944171f73967e8");
  CHECK(config_hash("abc") != config_hash("abd"));
}

TEST_CASE("formats: kbit by default, AWQ groups beside or instead of kbit", "[config][awq]") {
  const std::string dense = R"(name = "f"
shapes = [{ name = "a", k_dim = 256, n = 264 }, { include = "shapes/llama3_8b.toml" }]
m = [1, 16]
k_bits = [2, 4]
dtype = "fp16"
variants = ["cublas_fp16"]
)";
  const auto plain = parse_experiment(dense, P("f.toml"));
  CHECK(plain.formats == std::vector<std::string>{"kbit"});
  CHECK(plain.has_kbit());
  CHECK(plain.awq_groups().empty());
  const auto both =
      parse_experiment(dense + "formats = [\"kbit\", \"awq_g128\", \"awq_g32\"]\n", P("f.toml"));
  CHECK(both.formats == std::vector<std::string>{"kbit", "awq_g128", "awq_g32"});
  CHECK(both.has_kbit());
  CHECK(both.awq_groups() == std::vector<int>{128, 32});
  CHECK(both.k_bits == std::vector<int>{2, 4});
  // AWQ alone: no k_bits (AWQ weights are 4-bit); one given is refused.
  auto sub = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  const std::string awq_only = sub(dense, "k_bits = [2, 4]\n", "formats = \"awq_g64\"\n");
  const auto a = parse_experiment(awq_only, P("f.toml"));
  CHECK_FALSE(a.has_kbit());
  CHECK(a.awq_groups() == std::vector<int>{64});
  CHECK(a.k_bits.empty());
  CHECK_THROWS_WITH(
      parse_experiment(awq_only + "k_bits = 4\n", P("f.toml")),
      Catch::Contains("f.toml:7") && Catch::Contains("'k_bits'") && Catch::Contains("no \"kbit\""));
  CHECK_THROWS_WITH(
      parse_experiment(sub(dense, "k_bits = [2, 4]\n", "formats = [\"kbit\"]\n"), P("f.toml")),
      Catch::Contains("'k_bits' is missing"));
}

TEST_CASE("formats: unknown names, repeats, shapes AWQ cannot hold and MoE layers are refused",
          "[config][awq]") {
  const std::string dense = R"(name = "f"
shapes = [{ name = "a", k_dim = 256, n = 264 }]
m = 1
k_bits = 4
dtype = "fp16"
variants = ["cublas_fp16"]
formats = [
  "kbit", "FORMAT"]
)";
  auto with_format = [&](const std::string& f) {
    std::string s = dense;
    return s.replace(s.find("FORMAT"), 6, f);
  };
  CHECK_NOTHROW(parse_experiment(with_format("awq_g32"), P("f.toml")));
  for (const char* bad : {"awq_g48", "awq", "AWQ_G128", "nf"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_experiment(with_format(bad), P("f.toml")),
                      Catch::Contains("f.toml:7") && Catch::Contains("'formats'") &&
                          Catch::Contains(std::string("'") + bad + "'") &&
                          Catch::Contains("kbit, awq_g32, awq_g64, awq_g128"));
  }
  // The line of the repeated entry.
  CHECK_THROWS_WITH(parse_experiment(with_format("kbit"), P("f.toml")),
                    Catch::Contains("f.toml:8") && Catch::Contains("\"kbit\" twice"));
  std::string number = dense;
  number.replace(number.find("\"FORMAT\""), 8, "128");
  CHECK_THROWS_WITH(parse_experiment(number, P("f.toml")),
                    Catch::Contains("'formats'") && Catch::Contains("must be a string"));
  // N = 260 is no multiple of 8; K_dim = 96 none of 64 (fine at G = 32).
  std::string odd = with_format("awq_g128");
  odd.replace(odd.find("n = 264"), 7, "n = 260");
  CHECK_THROWS_WITH(parse_experiment(odd, P("f.toml")),
                    Catch::Contains("f.toml:7") && Catch::Contains("shape 'a'") &&
                        Catch::Contains("n = 260") && Catch::Contains("multiple of 8"));
  std::string k96 = with_format("awq_g64");
  k96.replace(k96.find("k_dim = 256"), 11, "k_dim = 96");
  CHECK_THROWS_WITH(parse_experiment(k96, P("f.toml")),
                    Catch::Contains("\"awq_g64\"") && Catch::Contains("k_dim = 96") &&
                        Catch::Contains("multiple of the group size 64"));
  std::string k96_g32 = k96;
  k96_g32.replace(k96_g32.find("awq_g64"), 7, "awq_g32");
  CHECK_NOTHROW(parse_experiment(k96_g32, P("f.toml")));
  const std::string moe = R"(name = "moe"
moe = [{ name = "x", experts = 64, k_dim = 2048, n = 512, top_k = 8 }]
tokens = [1, 4]
k_bits = 4
dtype = "fp16"
variants = ["cublas_fp16"]
formats = ["kbit", "awq_g128"]
)";
  CHECK_THROWS_WITH(parse_experiment(moe, P("m.toml")),
                    Catch::Contains("m.toml:7") && Catch::Contains("'formats'") &&
                        Catch::Contains("\"awq_g128\"") && Catch::Contains("dense only") &&
                        Catch::Contains("'x'"));
  std::string moe_kbit = moe;
  moe_kbit.replace(moe_kbit.find(", \"awq_g128\""), 12, "");
  CHECK(parse_experiment(moe_kbit, P("m.toml")).formats == std::vector<std::string>{"kbit"});
}
