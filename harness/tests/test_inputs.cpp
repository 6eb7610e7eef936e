// Bad input refused where it is read, before any GPU work, with the file, the line and the key:
// input files that are no regular file or too large, non-finite values, option rules beyond a
// range, values that would otherwise be changed or ignored silently, and command-line numbers.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/cli_numbers.hpp"
#include "harness/config.hpp"
#include "harness/device_info.hpp"
#include "harness/input_file.hpp"
#include "harness/options.hpp"
#include "harness/registry.hpp"
#include "harness/tests/temp_dir.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {

namespace fs = std::filesystem;

// A scratch folder of this file's.
struct Scratch : test::TempDir {
  Scratch() : TempDir("inputs") {}
};

// Config paths in experiments/ (so that includes resolve); messages start with "<path>:<line>".
std::string P(const std::string& name) {
  return source_dir() + "/experiments/" + name;
}

const std::string kDense = R"(name = "t"
shapes = [{ name = "a", k_dim = 64, n = 128 }]
m = [1, 4]
k_bits = [2, 4]
dtype = ["fp16"]
variants = ["cublas_fp16"]
)";

const std::string kMoe = R"(name = "m"
moe = [{ name = "x", experts = 8, k_dim = 64, n = 128, top_k = 2 }]
tokens = [1, 4]
k_bits = 4
dtype = "bf16"
variants = ["cublas_fp16"]
)";

std::string sub(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

ExperimentConfig parse(const std::string& text) {
  return parse_experiment(text, P("e.toml"));
}

}  // namespace

TEST_CASE("input files: only regular files under their limit are read", "[inputs]") {
  Scratch s;
  const std::string good = s.file("good.toml", kDense);
  CHECK(read_input_file(good, "experiment file", kMaxConfigBytes) == kDense);
  CHECK_THROWS_WITH(read_input_file(s.path + "/none.toml", "experiment file", kMaxConfigBytes),
                    Catch::Contains("cannot open experiment file '" + s.path + "/none.toml'") &&
                        Catch::Contains("No such file"));
  CHECK_THROWS_WITH(read_input_file("/dev/zero", "experiment file", kMaxConfigBytes),
                    Catch::Contains("'/dev/zero' is a character device, not a regular file"));
  CHECK_THROWS_WITH(read_input_file(s.path, "shape file", kMaxConfigBytes),
                    Catch::Contains("'" + s.path + "' is a folder, not a regular file"));
  const std::string fifo = s.path + "/fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opened without waiting for a writer, then refused.
  CHECK_THROWS_WITH(read_input_file(fifo, "dispatch table", kMaxTableBytes),
                    Catch::Contains("'" + fifo + "' is a FIFO, not a regular file"));
  // Above the limit by its size (a sparse file: nothing is written or read).
  const std::string big = s.file("big.toml", "");
  fs::resize_file(big, std::uintmax_t(kMaxConfigBytes) + 1);
  CHECK_THROWS_WITH(read_input_file(big, "experiment file", kMaxConfigBytes),
                    Catch::Contains("16777217 bytes, above the limit 16777216 bytes (16 MiB)"));
  fs::resize_file(big, std::uintmax_t(kMaxConfigBytes));
  CHECK(read_input_file(big, "experiment file", kMaxConfigBytes).size() ==
        std::size_t(kMaxConfigBytes));
  // A file that reports no size (procfs) is held to the limit as it is read.
  CHECK_THROWS_WITH(read_input_file("/proc/self/maps", "CURRENT file", 16),
                    Catch::Contains("holds more than the limit 16 bytes"));
  CHECK_THROWS_WITH(load_experiment("/dev/zero"),
                    Catch::Contains("experiment file '/dev/zero' is a character device"));
  CHECK_THROWS_WITH(load_experiment(fifo), Catch::Contains("is a FIFO"));
}

TEST_CASE("a shape include must be a regular file, named with the config's line", "[inputs]") {
  Scratch s;
  const std::string fifo = s.path + "/fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& inc : {std::string("/dev/urandom"), fifo, s.path}) {
    INFO(inc);
    CHECK_THROWS_WITH(parse(sub(kDense, "{ name = \"a\", k_dim = 64, n = 128 }",
                                "{ include = \"" + inc + "\" }")),
                      Catch::Contains(P("e.toml") + ":2: key 'include'") && Catch::Contains(inc) &&
                          Catch::Contains("not a regular file"));
  }
  // A [[shape]] that is not a table, and a shape file's model that is not a string.
  const std::string bad = s.file("bad.toml", "model = \"x\"\nshape = [1, 2]\n");
  CHECK_THROWS_WITH(
      parse(sub(kDense, "{ name = \"a\", k_dim = 64, n = 128 }", "{ include = \"" + bad + "\" }")),
      Catch::Contains(bad + ":2") && Catch::Contains("[[shape]] tables"));
  const std::string model =
      s.file("model.toml", "model = 3\n[[shape]]\nname = \"q\"\nk_dim = 64\nn = 8\n");
  CHECK_THROWS_WITH(parse(sub(kDense, "{ name = \"a\", k_dim = 64, n = 128 }",
                              "{ include = \"" + model + "\" }")),
                    Catch::Contains(model + ":1") && Catch::Contains("'model'"));
}

TEST_CASE("non-finite values are refused with the file, line, key and value", "[inputs]") {
  const std::string cb = sub(kDense, "k_bits = [2, 4]", "k_bits = 2");
  CHECK(parse(cb + "codebook = [-1.0, -0.5, 0.5, 1.0]\n").codebook_values.size() == 4);
  for (const char* v : {"nan", "-inf", "inf", "1e40", "-3.5e38"}) {
    INFO(v);
    CHECK_THROWS_WITH(parse(cb + "codebook = [-1.0, " + v + ", 0.5, 1.0]\n"),
                      Catch::Contains(P("e.toml") + ":7: key 'codebook'") &&
                          Catch::Contains("entry 1") && Catch::Contains("not a finite float32"));
  }
  for (const char* v : {"nan", "inf", "-0.5", "0.0"}) {
    INFO(v);
    CHECK_THROWS_WITH(parse(kDense + "[timing]\nmax_rel_noise = " + v + "\n"),
                      Catch::Contains(":8: key 'max_rel_noise'") && Catch::Contains("(0, 1]"));
    CHECK_THROWS_WITH(parse(kDense + "[timing]\ntimeout_s = " + v + "\n"),
                      Catch::Contains(":8: key 'timeout_s'") && Catch::Contains("(0, 3600]"));
  }
  CHECK_THROWS_WITH(
      parse(sub(kMoe, "tokens = [1, 4]", "tokens = [1, 4]\nrouting = \"zipf\"") + "zipf_s = nan\n"),
      Catch::Contains(":8: key 'zipf_s'") && Catch::Contains("nan"));
}

TEST_CASE("row options: each rule declared with the option is checked where it is given",
          "[inputs]") {
  const std::string bulk =
      sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"read_bulk\"]");
  CHECK(parse(bulk + "[options.read_bulk]\nchunk = 32\n").options.size() == 1);
  CHECK_THROWS_WITH(parse(bulk + "[options.read_bulk]\nchunk = 17\n"),
                    Catch::Contains(P("e.toml") + ":8") && Catch::Contains("chunk") &&
                        Catch::Contains("= 17") && Catch::Contains("not a multiple of 16"));
  CHECK_THROWS_WITH(parse(bulk + "[options.read_bulk]\nhold = true\n"),
                    Catch::Contains(P("e.toml") + ":8") && Catch::Contains("hold") &&
                        Catch::Contains("needs grid > 0"));
  CHECK(parse(bulk + "[options.read_bulk]\nhold = true\ngrid = 8\n").options.size() == 1);
  const std::string slices =
      sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"read_slices\"]");
  CHECK_THROWS_WITH(
      parse(slices + "[options.read_slices]\nslice = 48\n"),
      Catch::Contains(":8") && Catch::Contains("slice") && Catch::Contains("not a power of two"));
  const std::string ws =
      sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"warp_specialized\"]");
  CHECK_THROWS_WITH(parse(ws + "[options.warp_specialized]\ntoken_tile = 48\n"),
                    Catch::Contains(":8") && Catch::Contains("= 48 is not a power of two"));
  CHECK_THROWS_WITH(parse(ws + "[options.warp_specialized]\ntoken_tile = 4\n"),
                    Catch::Contains("= 4 is not a multiple of 8"));
  CHECK(parse(ws + "[options.warp_specialized]\ntoken_tile = 64\n").options.size() == 1);
  // validate's --option takes the same path.
  const VariantRow& rb = find_variant("read_bulk");
  CHECK_THROWS_WITH(resolve_options(rb, {parse_option_flag("chunk=17")}),
                    Catch::Contains("--option chunk=17") && Catch::Contains("multiple of 16"));
  CHECK_THROWS_WITH(
      resolve_options(rb, {parse_option_flag("stages=2"), parse_option_flag("stages=3")}),
      Catch::Contains("given twice"));
  // Every row's default keeps its own rules (else a row could not run at its defaults).
  for (const VariantRow& r : registry())
    for (const OptionSpec& o : r.options) {
      INFO(std::string(r.name) + "." + std::string(o.name));
      CHECK(option_rule_error(o, o.default_value).empty());
      CHECK(o.min <= o.default_value);
      CHECK(o.default_value <= o.max);
    }
  CHECK_NOTHROW(resolve_options(rb, {}));
}

TEST_CASE("nothing is changed or ignored silently: such values are refused", "[inputs]") {
  // min_samples above max_samples (given or the default 400).
  CHECK_THROWS_WITH(parse(kDense + "[timing]\nmin_samples = 500\nmax_samples = 10\n"),
                    Catch::Contains(":9: key 'max_samples'") &&
                        Catch::Contains("min_samples = 500 above max_samples = 10"));
  CHECK_THROWS_WITH(parse(kDense + "[timing]\nmin_samples = 500\n"),
                    Catch::Contains(":8: key 'min_samples'") && Catch::Contains("(the default)"));
  CHECK(parse(kDense + "[timing]\nmin_samples = 400\n").timing.max_samples == 400);
  // Two shapes of one name (inline, and inline beside an include's).
  CHECK_THROWS_WITH(
      parse(sub(kDense, "{ name = \"a\", k_dim = 64, n = 128 }",
                "{ name = \"a\", k_dim = 64, n = 128 },\n  { name = \"a\", k_dim = 32, n = 8 }")),
      Catch::Contains(":3: key 'name'") && Catch::Contains("'a'") && Catch::Contains("unique"));
  CHECK_THROWS_WITH(parse(sub(kDense, "{ name = \"a\", k_dim = 64, n = 128 }",
                              "{ name = \"llama3_8b.down\", k_dim = 64, n = 128 }, { include = "
                              "\"shapes/llama3_8b.toml\" }")),
                    Catch::Contains("llama3_8b.toml:") && Catch::Contains("'llama3_8b.down'"));
  CHECK_THROWS_WITH(parse(sub(kMoe, "top_k = 2 }]",
                              "top_k = 2 },\n  { name = \"x\", experts = 8, "
                              "k_dim = 64, n = 128, top_k = 2 }]")),
                    Catch::Contains(":3: key 'name'") && Catch::Contains("'x'"));
  // Duplicates in lists.
  CHECK_THROWS_WITH(parse(sub(kDense, "k_bits = [2, 4]", "k_bits = [4, 2, 4]")),
                    Catch::Contains(":4: key 'k_bits'") && Catch::Contains("names 4 twice"));
  CHECK_THROWS_WITH(parse(sub(kDense, "dtype = [\"fp16\"]", "dtype = [\"fp16\", \"fp16\"]")),
                    Catch::Contains(":5: key 'dtype'") && Catch::Contains("\"fp16\" twice"));
  CHECK_THROWS_WITH(parse(sub(kDense, "m = [1, 4]", "m = [1, 4, 1]")),
                    Catch::Contains(":3: key 'm'") && Catch::Contains("names 1 twice"));
  CHECK_THROWS_WITH(
      parse(sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"auto\", \"auto\"]")),
      Catch::Contains(":6: key 'variants'") && Catch::Contains("\"auto\" twice"));
  // Keys that would have no effect in this config.
  CHECK_THROWS_WITH(parse(kDense + "tokens = [1, 2]\n"),
                    Catch::Contains(":7: key 'tokens'") && Catch::Contains("has none"));
  for (const char* key : {"routing = \"zipf\"", "zipf_s = 1.2", "routing_seed = 3"}) {
    INFO(key);
    CHECK_THROWS_WITH(
        parse(kDense + key + "\n"),
        Catch::Contains(":7: key '") && Catch::Contains("moe layers; this file has none"));
  }
  CHECK_THROWS_WITH(parse(kMoe + "zipf_s = 1.2\n"),
                    Catch::Contains(":7: key 'zipf_s'") && Catch::Contains("routed by zipf"));
  CHECK(parse(kMoe + "routing = \"zipf\"\nzipf_s = 1.2\n").zipf_s == 1.2);
  CHECK_THROWS_WITH(parse(kMoe + "routing_seed = -1\n"),
                    Catch::Contains(":7: key 'routing_seed'") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(
      parse(sub(kDense, "k_bits = [2, 4]\n", "formats = \"awq_g32\"\n") + "codebook = \"nf\"\n"),
      Catch::Contains(":7: key 'codebook'") && Catch::Contains("no \"kbit\""));
  CHECK_THROWS_WITH(
      parse(kDense + "[options.read_bulk]\nchunk = 32\n"),
      Catch::Contains(":7: key 'options.read_bulk'") && Catch::Contains("does not run"));
  CHECK_THROWS_WITH(parse(kDense + "[check]\nmax_rows = 2000000\n"),
                    Catch::Contains(":8: key 'max_rows'") && Catch::Contains("limit 1048576"));
  CHECK_THROWS_WITH(parse(kDense + "[check]\nenabled = false\nmax_rows = 4\n"),
                    Catch::Contains(":9: key 'max_rows'") && Catch::Contains("enabled = false"));
  // Names: empty, too long, not printable.
  CHECK_THROWS_WITH(parse(sub(kDense, "name = \"t\"", "name = \"\"")),
                    Catch::Contains(":1: key 'name'") && Catch::Contains("must not be empty"));
  CHECK_THROWS_WITH(parse(sub(kDense, "name = \"t\"", "name = \"" + std::string(300, 'a') + "\"")),
                    Catch::Contains(":1: key 'name'") &&
                        Catch::Contains("300 characters long, above the limit 100"));
  CHECK(
      parse(sub(kDense, "name = \"t\"", "name = \"" + std::string(100, 'a') + "\"")).name.size() ==
      100);
  CHECK_THROWS_WITH(parse(sub(kDense, "name = \"a\"", "name = \"\"")),
                    Catch::Contains(":2: key 'name'") && Catch::Contains("must not be empty"));
  CHECK_THROWS_WITH(parse(sub(kDense, "name = \"a\"", "name = \"a\\tb\"")),
                    Catch::Contains(":2: key 'name'") && Catch::Contains("not printable"));
  CHECK_THROWS_WITH(parse(kDense + "description = \"" + std::string(5000, 'd') + "\"\n"),
                    Catch::Contains(":7: key 'description'") && Catch::Contains("limit 4096"));
}

TEST_CASE("rows: an unknown name or a glob that matches none names the file, line and key",
          "[inputs]") {
  CHECK_THROWS_WITH(
      parse(sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"cublas_fp16\", \"nope\"]")),
      Catch::Contains(P("e.toml") + ":6: key 'variants'") &&
          Catch::Contains("variant 'nope' is not in the registry"));
  CHECK_THROWS_WITH(
      parse(sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"*nothing_like_it*\"]")),
      Catch::Contains(":6: key 'variants'") &&
          Catch::Contains("'*nothing_like_it*' matches no registry row") &&
          !Catch::Contains("not in the registry"));
  CHECK_THROWS_WITH(parse(kDense + "baseline = \"cublas_fp17\"\n"),
                    Catch::Contains(":7: key 'baseline'") && Catch::Contains("'cublas_fp17'"));
  CHECK_THROWS_WITH(match_variants({"*nothing_like_it*"}),
                    Catch::Contains("matches no registry row"));
}

TEST_CASE("command-line numbers are refused as given: negative, nan, inf, overflow", "[inputs]") {
  CHECK(cli_unsigned_error("0").empty());
  CHECK(cli_unsigned_error("18446744073709551615").empty());
  CHECK_THAT(cli_unsigned_error("-1"), Catch::Contains("'-1' is negative"));
  CHECK_THAT(cli_unsigned_error("18446744073709551616"),
             Catch::Contains("'18446744073709551616' is above"));
  CHECK_THAT(cli_unsigned_error("1e3"), Catch::Contains("'1e3' is not an integer"));
  CHECK_THAT(cli_unsigned_error(" 7"), Catch::Contains("not an integer"));
  CHECK_THAT(cli_unsigned_error(""), Catch::Contains("not an integer"));
  CHECK(cli_integer_error("-5", -10, 10).empty());
  CHECK_THAT(cli_integer_error("11", -10, 10), Catch::Contains("'11' is outside -10..10"));
  CHECK_THAT(cli_integer_error("99999999999999999999", 0, 100),
             Catch::Contains("'99999999999999999999' is outside"));
  CHECK_THAT(cli_integer_error("4.0", 0, 100), Catch::Contains("not an integer"));
  CHECK(cli_number_error("0.5", 0, 4096).empty());
  CHECK_THAT(cli_number_error("-5", 0, 4096), Catch::Contains("'-5' is outside (0, 4096]"));
  CHECK_THAT(cli_number_error("0", 0, 4096), Catch::Contains("'0' is outside"));
  for (const char* v : {"nan", "inf", "-inf", "1e999", "NaN"}) {
    INFO(v);
    CHECK_THAT(cli_number_error(v, 0, 4096), Catch::Contains("is not a finite number"));
  }
  CHECK_THAT(cli_number_error("5GB", 0, 4096), Catch::Contains("'5GB' is not a number"));
  CHECK_THROWS_WITH(refuse_duplicates("--k-bits", std::vector<int>{4, 2, 4}),
                    Catch::Contains("--k-bits names 4 twice"));
  CHECK_NOTHROW(refuse_duplicates("--m", std::vector<std::int64_t>{1, 2}));
}

TEST_CASE("k_bits, dtype and [check] refusals name the entry's line, the value and the range",
          "[inputs]") {
  // k_bits below 2 names the supported range, as above 5 does.
  for (const char* v : {"-1", "0", "1", "6"}) {
    INFO(v);
    CHECK_THROWS_WITH(parse(sub(kDense, "k_bits = [2, 4]", std::string("k_bits = [2, ") + v + "]")),
                      Catch::Contains(":4: key 'k_bits' value " + std::string(v) +
                                      " is outside the supported range 2..5"));
  }
  // The line of the entry in a list over several lines.
  CHECK_THROWS_WITH(parse(sub(kDense, "k_bits = [2, 4]", "k_bits = [\n  2,\n  7,\n]")),
                    Catch::Contains(":6: key 'k_bits' value 7"));
  CHECK_THROWS_WITH(
      parse(sub(kDense, "dtype = [\"fp16\"]", "dtype = [\n  \"fp16\",\n  \"fp8\",\n]")),
      Catch::Contains(":7: key 'dtype' = 'fp8'"));
  // One dtype under two spellings would run every problem twice.
  CHECK(parse(sub(kDense, "dtype = [\"fp16\"]", "dtype = [\"half\", \"bf16\"]")).dtypes ==
        std::vector<DType>{DType::f16, DType::bf16});
  CHECK_THROWS_WITH(parse(sub(kDense, "dtype = [\"fp16\"]", "dtype = [\"fp16\", \"half\"]")),
                    Catch::Contains(":5: key 'dtype' = 'half' is fp16") &&
                        Catch::Contains("'fp16' names already"));
  CHECK_THROWS_WITH(
      parse(sub(kDense, "dtype = [\"fp16\"]", "dtype = [\"bfloat16\", \"fp16\", \"bf16\"]")),
      Catch::Contains(":5: key 'dtype' = 'bf16' is bf16") &&
          Catch::Contains("'bfloat16' names already"));
  // [check]: the value and its range.
  CHECK_THROWS_WITH(parse(kDense + "[check]\nseed = -1\n"),
                    Catch::Contains(":8: key 'seed' = -1 must be in 0..9223372036854775807"));
  CHECK(parse(kDense + "[check]\nseed = 9223372036854775807\n").check.seed ==
        9223372036854775807ull);
  for (const char* v : {"1", "0", "-5"}) {
    INFO(v);
    CHECK_THROWS_WITH(
        parse(kDense + "[check]\nmax_rows = " + v + "\n"),
        Catch::Contains(":8: key 'max_rows' = " + std::string(v) + " must be at least 2"));
  }
  CHECK(parse(kDense + "[check]\nmax_rows = 2\n").check.max_rows == 2);
}

TEST_CASE("row options: true and false only for boolean options, integers as written", "[inputs]") {
  const std::string bulk =
      sub(kDense, "variants = [\"cublas_fp16\"]", "variants = [\"read_bulk\"]");
  // A boolean option takes true / false or 0 / 1.
  CHECK(parse(bulk + "[options.read_bulk]\nstriped = true\n").options.size() == 1);
  CHECK(parse(bulk + "[options.read_bulk]\nstriped = 1\n").options.size() == 1);
  // An integer option refuses them rather than reading true as 1.
  CHECK_THROWS_WITH(parse(bulk + "[options.read_bulk]\nstages = true\n"),
                    Catch::Contains(P("e.toml") + ":8") &&
                        Catch::Contains("option stages of read_bulk = true is not a boolean") &&
                        Catch::Contains("1..16"));
  CHECK_THROWS_WITH(parse(bulk + "[options.read_bulk]\nblocks_per_sm = false\n"),
                    Catch::Contains(":8") && Catch::Contains("blocks_per_sm") &&
                        Catch::Contains("= false is not a boolean") && Catch::Contains("0..32"));
  // validate's --option the same.
  const VariantRow& ws = find_variant("warp_specialized");
  CHECK_THROWS_WITH(resolve_options(ws, {parse_option_flag("mma=true")}),
                    Catch::Contains("--option mma=true") &&
                        Catch::Contains("mma of warp_specialized = true is not a boolean") &&
                        Catch::Contains("0..2"));
  auto value_of = [](const VariantOptions& o, const std::string& name) {
    for (const auto& [n, v] : o.values)
      if (n == name) return v;
    FAIL("no option " << name);
    return std::int64_t(-1);
  };
  CHECK(value_of(resolve_options(ws, {parse_option_flag("mma=1")}), "mma") == 1);
  CHECK(value_of(resolve_options(find_variant("read_bulk"), {parse_option_flag("striped=true")}),
                 "striped") == 1);
  // Values as written: digits after an optional '-', nothing else; overflow refused as such.
  CHECK(parse_option_flag("before_wait=-1").value == -1);
  CHECK(parse_option_flag("chunk=016").value == 16);
  for (const char* f : {"chunk= 16", "chunk=+16", "chunk=16 ", "chunk=0x10", "chunk=1e3", "chunk=-",
                        "chunk=TRUE"}) {
    INFO(f);
    CHECK_THROWS_WITH(parse_option_flag(f), Catch::Contains("is not an integer, true or false"));
  }
  CHECK_THROWS_WITH(parse_option_flag("chunk=99999999999999999999"),
                    Catch::Contains("'99999999999999999999' is outside "
                                    "-9223372036854775808..9223372036854775807"));
}
