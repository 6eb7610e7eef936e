// The dispatch tables committed under results/dispatch/ (written by `kbit-harness dispatch
// build`, read by the auto rows): each reads through the auto rows' reader (DispatchTables) with
// nothing noted, and every entry is one an auto row may choose: a registry row of the entry's
// weight format (auto_may_pick, awq_auto_may_pick for awq_g<G> entries) whose Support covers the
// entry's problem on the compute capability of the run it came from, and that run is a folder of
// results/ (run.json of the table's GPU, results.csv holding the entry's row at its line).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/input_file.hpp"
#include "harness/results.hpp"
#include "harness/weight_format.hpp"
#include "reference/dtype.hpp"

using namespace kbit;

namespace {

namespace fs = std::filesystem;

const std::string kResults = source_dir() + "/results";
const std::string kTables = kResults + "/dispatch";

// std::cerr and std::clog into a string while it lives: what a reader prints on the side.
class SideOutput {
 public:
  SideOutput() : cerr_(std::cerr.rdbuf(text_.rdbuf())), clog_(std::clog.rdbuf(text_.rdbuf())) {}
  ~SideOutput() {
    std::cerr.rdbuf(cerr_);
    std::clog.rdbuf(clog_);
  }
  SideOutput(const SideOutput&) = delete;
  SideOutput& operator=(const SideOutput&) = delete;
  std::string str() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* cerr_;
  std::streambuf* clog_;
};

// One run folder a table names: its GPU, compute capability x 10 and results.csv lines (line 1,
// the header, at index 0).
struct RunFolder {
  std::string gpu;
  int sm = 0;
  std::vector<std::string> lines;
};

RunFolder read_run_folder(const std::string& run) {
  RunFolder f;
  const std::string dir = kResults + "/" + run;
  const nlohmann::json j = parse_json(
      read_text_file(dir + "/run.json", "run.json", kMaxRunJsonBytes), dir + "/run.json");
  f.gpu = j.at("device").at("name").get<std::string>();
  const std::string cc = j.at("device").at("compute_capability").get<std::string>();
  if (cc.size() == 3 && cc[1] == '.') f.sm = (cc[0] - '0') * 10 + (cc[2] - '0');
  std::istringstream csv(read_text_file(dir + "/results.csv", "results.csv", kMaxResultsCsvBytes));
  for (std::string line; std::getline(csv, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    f.lines.push_back(line);
  }
  return f;
}

std::vector<std::string> committed_tables() {
  std::vector<std::string> names;
  if (fs::is_directory(kTables))
    for (const auto& f : fs::directory_iterator(kTables))
      if (f.is_regular_file() && f.path().extension() == ".toml")
        names.push_back(f.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("dispatch: every committed table reads cleanly and every entry is one an auto row runs",
          "[dispatch]") {
  const std::vector<std::string> names = committed_tables();
  INFO("results/dispatch: " << kTables);
  REQUIRE_FALSE(names.empty());
  for (const std::string& name : names) {
    const std::string path = kTables + "/" + name;
    INFO("table " << path);
    // The GPU the file is for (its key gpu, which its name spells), then the whole table through
    // the reader the auto rows use: nothing noted and nothing printed beside it.
    std::string gpu;
    try {
      gpu = toml::parse_file(path)["gpu"].value_or(std::string());
    } catch (const std::exception& e) {
      FAIL_CHECK("not TOML: " << e.what());
      continue;
    }
    CHECK(dispatch_file_name(gpu) == name);
    if (dispatch_file_name(gpu) != name) continue;  // the auto rows would never read it
    std::ostringstream notes;
    DispatchTables tables(kTables, notes);
    const DispatchTable* t = nullptr;
    std::string printed;
    {
      const SideOutput side;
      CHECK_NOTHROW(t = tables.load(gpu));
      printed = side.str();
    }
    CHECK(notes.str().empty());
    CHECK(printed.empty());
    CHECK(t != nullptr);
    if (!t) continue;
    CHECK(t->gpu == gpu);
    CHECK_FALSE(t->runs.empty());
    CHECK_FALSE(t->entries.empty());

    // Every run the table names: a folder of results/ of this GPU, with results.csv.
    std::map<std::string, std::optional<RunFolder>> runs;  // nullopt: could not be read
    auto run_folder = [&](const std::string& run) -> const RunFolder* {
      const auto it = runs.find(run);
      if (it != runs.end()) return it->second ? &*it->second : nullptr;
      INFO("run " << run);
      CHECK(fs::is_directory(kResults + "/" + run));
      CHECK(fs::is_regular_file(kResults + "/" + run + "/results.csv"));
      std::optional<RunFolder> f;
      try {
        f = read_run_folder(run);
        CHECK(f->gpu == gpu);
        CHECK(f->sm > 0);
      } catch (const std::exception& e) {
        FAIL_CHECK("cannot read run " << run << ": " << e.what());
      }
      const auto& kept = runs.emplace(run, std::move(f)).first->second;
      return kept ? &*kept : nullptr;
    };
    for (const std::string& run : t->runs) run_folder(run);

    for (std::size_t i = 0; i < t->entries.size(); ++i) {
      const DispatchEntry& e = t->entries[i];
      INFO("entry " << i + 1 << ": " << e.format << " K = " << e.k_bits << " " << e.dtype << " "
                    << (e.grouped ? "grouped" : "dense") << " " << e.shape << " N = " << e.N
                    << " K_dim = " << e.K_dim << " experts = " << e.experts << " M = " << e.M
                    << " -> " << e.variant << " (" << e.run << ":" << e.line << ")");
      CHECK(std::count(t->runs.begin(), t->runs.end(), e.run) == 1);
      const RunFolder* run = run_folder(e.run);

      // A registry row the auto row of the entry's format may run.
      const VariantRow* row = nullptr;
      CHECK_NOTHROW(row = &find_variant(e.variant));
      if (!row) continue;
      const int awq_group = parse_weight_format(e.format);
      if (awq_group > 0)
        CHECK(awq_auto_may_pick(*row));
      else
        CHECK(auto_may_pick(*row));

      // Its Support covers the entry's problem on the run's device (K or AWQ group, dtype, M
      // range, dense or grouped, N and K_dim multiples, compute capability), as does the auto
      // row that would look the entry up.
      GemmDims d;
      d.M = e.M, d.N = e.N, d.K_dim = e.K_dim, d.k_bits = e.k_bits, d.awq_group = awq_group;
      d.dtype = parse_dtype(e.dtype);
      d.num_experts = e.grouped ? e.experts : 0;
      CHECK(e.grouped == (e.experts > 0));
      CHECK((e.grouped ? row->support.grouped : row->support.dense));
      const int sm = run ? run->sm : 0;
      CHECK(unsupported_reason(*row, d, sm) == "");
      const char* auto_name = awq_group > 0 ? "awq_auto" : e.grouped ? "grouped_auto" : "auto";
      CHECK(unsupported_reason(find_variant(auto_name), d, sm) == "");

      // The results.csv row it came from: the same problem and variant, checked, plain launch.
      if (!run) continue;
      const bool in_file = e.line >= 2 && std::size_t(e.line) <= run->lines.size();
      CHECK(in_file);
      if (!in_file) continue;
      const std::vector<std::string> header = csv_split(run->lines[0]);
      const std::vector<std::string> fields = csv_split(run->lines[std::size_t(e.line) - 1]);
      CHECK(fields.size() == header.size());
      if (fields.size() != header.size()) continue;
      std::map<std::string, std::string> v;
      for (std::size_t c = 0; c < header.size(); ++c) v[trimmed(header[c])] = fields[c];
      // Runs before a column existed lack it: codebook (kbit only), pdl (plain launches only).
      CHECK(format_of_codebook(v.count("codebook") ? v["codebook"] : "") == e.format);
      CHECK((v["pdl"] == "0" || v["pdl"].empty()));
      CHECK(v["variant"] == e.variant);
      CHECK(v["shape"] == e.shape);
      CHECK(v["M"] == std::to_string(e.M));
      CHECK(v["N"] == std::to_string(e.N));
      CHECK(v["K_dim"] == std::to_string(e.K_dim));
      CHECK(v["k_bits"] == std::to_string(e.k_bits));
      CHECK(v["dtype"] == e.dtype);
      CHECK(v["check"] == "pass");
      CHECK(v["l2"] == "cold");
    }
  }
}
