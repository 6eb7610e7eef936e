// Results of a run: results.csv in long form, one row per (problem, variant), appended and
// flushed row by row so that a run that dies keeps every finished row; run.json beside it.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbit {

struct ResultRow {
  std::string experiment, shape;
  std::int64_t M = 0, N = 0, K_dim = 0;
  int k_bits = 0;
  std::string dtype, variant, family;
  double median_us = 0, p10_us = 0, p90_us = 0;
  int samples = 0;
  double gb_per_s = 0, tflops = 0, floor_us = 0, frac_of_floor = 0, speedup_vs_baseline = 0;
  std::string check;  // pass | fail | skipped
  double max_err_over_bound = 0;
  // Beyond the required columns:
  std::string l2;  // cold | hot
  int copies = 1, launches_per_sample = 1;
  double sm_mhz_before = 0, sm_mhz_after = 0, rel_noise = 0;
  int experts = 0, active_experts = 0;
  std::string codebook, config, error;
  std::string device;  // the device that timed the row: "<index on the host> <UUID>"
  int pdl = 0;         // 1: timed with programmatic dependent launch ([timing] pdl, Support::pdl)
  // The weights' values: "normal" (the N(0,1) draw), "FILE:TENSOR" (a checkpoint's tensor, FILE as
  // the config names it, quantized by the problem's format) or "FILE:QWEIGHT" (AWQ tensors as
  // they are); harness/config_weights.hpp. Runs before the column drew N(0,1) weights.
  std::string weights_source = "normal";
};

// Rows timed at a throttled SM clock: those whose lower nonzero reading (sm_mhz_before,
// sm_mhz_after) is below `fraction` of the highest reading of any row of the run. On the H200 a
// row read 1576-1620 MHz where the run's others read 1950-1980, and its time rose by about as much
// (power or thermal throttling after long tensor-bound rows): such a row is not comparable with
// its neighbours. Rows without a reading (0: the peers' before the timing) are judged by the other.
std::vector<std::size_t> low_clock_rows(const std::vector<ResultRow>& rows, double fraction = 0.9);
// The highest SM clock reading (MHz) of any row, before or after its timing: what they are judged
// by.
double highest_sm_clock(const std::vector<ResultRow>& rows);

// The column names, in order (the first 19 are the documented core columns).
const std::vector<std::string>& result_columns();
std::vector<std::string> row_fields(const ResultRow& r);

class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path);  // writes the header
  void append(const ResultRow& r);              // one line, flushed
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

std::string csv_escape(const std::string& field);
// Splits CSV text into records (quoted fields may hold commas, doubled quotes and line breaks):
// ncu's exports, and each line csv_split reads.
std::vector<std::vector<std::string>> csv_records(const std::string& text);
// Splits one CSV line (quotes as written by csv_escape); used by tests and tools.
std::vector<std::string> csv_split(const std::string& line);
// s without its leading and trailing white space (a CSV field, a CURRENT line, a log line).
std::string trimmed(const std::string& s);

// Writes JSON to path atomically (temporary file, then rename).
void write_json_file(const std::string& path, const nlohmann::json& j);
// A whole file's bytes (read_input_file, harness/input_file.hpp: a regular file of at most
// max_bytes); throws "cannot open <what> '<path>'" and the like when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& what = "file",
                           std::int64_t max_bytes = std::int64_t(16) << 20);

// "20261122T081500Z"
std::string utc_timestamp();

}  // namespace kbit
