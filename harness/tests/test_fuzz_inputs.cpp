// Fuzzing the readers of configs, dispatch tables and JSON: random bytes, random byte changes of a
// valid file, every truncation of a valid file and deep nesting either parse or throw kbit::Error
// (exit 2 in kbit-harness); no other exception, no crash, no hang. The special files (/dev/zero,
// a FIFO) are in test_inputs.cpp and, through the binary, check_special_files.sh.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "harness/config.hpp"
#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/input_file.hpp"
#include "harness/toml_input.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {

const std::string kConfig = R"(# a config with every kind of key
name = "fuzz"
description = "every key once"
shapes = [{ name = "a", k_dim = 64, n = 128 }, { include = "shapes/llama3_8b.toml" }]
moe = [{ name = "x", experts = 8, k_dim = 64, n = 128, top_k = 2, routing = "zipf" }]
m = [1, 4]
tokens = [1, 8]
routing = "uniform"
zipf_s = 1.1
routing_seed = 7
k_bits = [2, 4]
dtype = ["fp16", "bf16"]
codebook = "nf"
variants = ["cublas_fp16", "read_bulk", "*gemv*"]
baseline = "cublas_fp16"
peers = ["humming_u4_g128"]
[options.read_bulk]
chunk = 32
hold = true
grid = 8
[timing]
mode = "hot"
warmup = 2
min_samples = 5
max_samples = 50
max_rel_noise = 0.05
timeout_s = 0.5
[check]
enabled = true
seed = 3
max_rows = 8
)";

const std::string kTable = R"(gpu = "Test GPU"
fallback = "the rule in words"
runs = ["exp/run1", "exp/run2"]
entries = [
  { k_bits = 4, dtype = "fp16", problem = "dense", shape = "a", N = 4096, K_dim = 4096, experts = 0, M = 1, variant = "scalar_gemv", median_us = 10.5, run = "exp/run1", line = 2, config = "" },
  { k_bits = 3, dtype = "bf16", problem = "grouped", shape = "moe", N = 512, K_dim = 2048, experts = 64, M = 8, variant = "grouped_scalar_gemv", median_us = 20, run = "exp/run2", line = 3, config = "[checked=0]" },
]
)";

const std::string kConfigPath = source_dir() + "/experiments/fuzz.toml";  // includes resolve

// 0: parsed, 1: refused with kbit::Error; any other exception fails the test (in the caller's
// CHECK), a crash ends it.
int config_outcome(const std::string& text) {
  try {
    parse_experiment(text, kConfigPath);
    return 0;
  } catch (const Error&) {
    return 1;
  }
}

int table_outcome(const std::string& text) {
  try {
    parse_dispatch_table(text, "fuzz_table.toml");
    return 0;
  } catch (const Error&) {
    return 1;
  }
}

int json_outcome(const std::string& text) {
  try {
    parse_json(text, "fuzz.json");
    return 0;
  } catch (const Error&) {
    return 1;
  }
}

int toml_outcome(const std::string& text) {
  try {
    parse_toml(text, "fuzz.toml");
    return 0;
  } catch (const Error&) {
    return 1;
  }
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * std::size_t(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("fuzz: the valid files parse (the inputs below start from them)", "[inputs][fuzz]") {
  CHECK(config_outcome(kConfig) == 0);
  CHECK(table_outcome(kTable) == 0);
}

TEST_CASE("fuzz: every truncation of a valid config and table parses or is refused",
          "[inputs][fuzz]") {
  int parsed = 0;
  for (std::size_t n = 0; n <= kConfig.size(); ++n) {
    INFO("config truncated to " << n << " bytes");
    int r = -1;
    CHECK_NOTHROW(r = config_outcome(kConfig.substr(0, n)));
    parsed += r == 0;
  }
  CHECK(parsed >= 1);  // the whole file (and some of its prefixes that still form a config)
  parsed = 0;
  for (std::size_t n = 0; n <= kTable.size(); ++n) {
    INFO("table truncated to " << n << " bytes");
    int r = -1;
    CHECK_NOTHROW(r = table_outcome(kTable.substr(0, n)));
    parsed += r == 0;
  }
  CHECK(parsed >= 2);  // after the first entry's line, and the whole table
}

TEST_CASE("fuzz: random bytes and random byte changes of valid files", "[inputs][fuzz]") {
  std::mt19937 rng(20261128);
  std::uniform_int_distribution<int> byte(0, 255);
  // Bytes a TOML file is made of, so that changes reach past the first syntax error.
  const std::string alphabet = "[]{}=\",.#'\\\n 0123456789eE+-_abcdefghijklmnopqrstuvwxyzinfnan";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  for (int i = 0; i < 300; ++i) {
    std::string junk(std::size_t(rng() % 600), '\0');
    for (char& c : junk) c = char(byte(rng));
    INFO("random bytes, case " << i);
    CHECK_NOTHROW(config_outcome(junk));
    CHECK_NOTHROW(table_outcome(junk));
    CHECK_NOTHROW(json_outcome(junk));
  }
  int parsed = 0;
  for (int i = 0; i < 600; ++i) {
    std::string c = kConfig, t = kTable;
    const int changes = 1 + int(rng() % 4);
    for (int k = 0; k < changes; ++k) {
      c[rng() % c.size()] = alphabet[pick(rng)];
      t[rng() % t.size()] = alphabet[pick(rng)];
    }
    INFO("changed config:\n" << c << "\nchanged table:\n" << t);
    int r = -1;
    CHECK_NOTHROW(r = config_outcome(c));
    parsed += r == 0;
    CHECK_NOTHROW(table_outcome(t));
  }
  CHECK(parsed < 600);  // the changes do break configs
}

TEST_CASE("fuzz: deep nesting is refused before it is built", "[inputs][fuzz]") {
  const int deep = 100000;
  // Dotted keys and table headers of 100000 parts (toml++ recurses once per part).
  CHECK_THROWS_WITH(parse_toml("a" + repeat(".a", deep) + " = 1\n", "d.toml"),
                    Catch::Contains("d.toml:1: a key of more than 64 dotted parts"));
  CHECK_THROWS_WITH(parse_toml("x = 1\n[a" + repeat(".a", deep) + "]\n", "d.toml"),
                    Catch::Contains("d.toml:2:"));
  CHECK_THROWS_WITH(parse_toml("a" + repeat(" . \"q\"", deep) + " = 1\n", "d.toml"),
                    Catch::Contains("dotted parts"));
  // Arrays and inline tables: toml++'s own limit.
  CHECK_THROWS_AS(parse_toml("a = " + repeat("[", deep), "d.toml"), Error);
  CHECK_THROWS_AS(parse_toml("a = " + repeat("{b=", deep), "d.toml"), Error);
  // The deepest TOML both limits let through: inline tables 250 deep, each key of 63 parts.
  const std::string key = "k" + repeat(".k", 62);
  CHECK(toml_outcome("a = " + repeat("{" + key + " = ", 250) + "1" + repeat("}", 250) + "\n") == 0);
  // Dots inside strings and comments are no key parts.
  CHECK_NOTHROW(parse_toml("a = \"" + repeat(".", deep) + "\" # " + repeat(".", deep) + "\n" +
                               "b = '''\n" + repeat("..\n", 100) + "'''\n",
                           "d.toml"));
  CHECK(config_outcome("name = \"" + repeat(".", deep) + "\"\n") == 1);
  // JSON (run.json): nesting past 64 is refused as it is read.
  CHECK_THROWS_WITH(parse_json(repeat("[", deep), "r.json"),
                    Catch::Contains("r.json: JSON nested deeper than the limit 64"));
  CHECK_THROWS_WITH(parse_json(repeat("{\"a\":", deep), "r.json"), Catch::Contains("deeper"));
  CHECK(parse_json(repeat("[", 60) + repeat("]", 60), "r.json").is_array());
  CHECK_THROWS_WITH(parse_json("{\"a\": ", "r.json"), Catch::Contains("r.json does not parse"));
}
