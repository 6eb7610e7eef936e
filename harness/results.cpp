#include "harness/results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "harness/input_file.hpp"
#include "reference/error.hpp"

namespace kbit {

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> cols = {"experiment",
                                                "shape",
                                                "M",
                                                "N",
                                                "K_dim",
                                                "k_bits",
                                                "dtype",
                                                "variant",
                                                "median_us",
                                                "p10_us",
                                                "p90_us",
                                                "samples",
                                                "gb_per_s",
                                                "tflops",
                                                "floor_us",
                                                "frac_of_floor",
                                                "speedup_vs_baseline",
                                                "check",
                                                "max_err_over_bound",
                                                "family",
                                                "l2",
                                                "copies",
                                                "launches_per_sample",
                                                "pdl",
                                                "sm_mhz_before",
                                                "sm_mhz_after",
                                                "rel_noise",
                                                "experts",
                                                "active_experts",
                                                "codebook",
                                                "config",
                                                "error",
                                                "device",
                                                "weights_source"};
  return cols;
}

namespace {
std::string num(double v, int digits = 6) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}
}  // namespace

double highest_sm_clock(const std::vector<ResultRow>& rows) {
  double highest = 0;
  for (const ResultRow& r : rows) highest = std::max({highest, r.sm_mhz_before, r.sm_mhz_after});
  return highest;
}

std::vector<std::size_t> low_clock_rows(const std::vector<ResultRow>& rows, double fraction) {
  const double highest = highest_sm_clock(rows);
  std::vector<std::size_t> low;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double b = rows[i].sm_mhz_before, a = rows[i].sm_mhz_after;
    const double lower = b > 0 && a > 0 ? std::min(b, a) : std::max(b, a);  // 0: no reading
    if (lower > 0 && lower < fraction * highest) low.push_back(i);
  }
  return low;
}

std::vector<std::string> row_fields(const ResultRow& r) {
  return {r.experiment,
          r.shape,
          std::to_string(r.M),
          std::to_string(r.N),
          std::to_string(r.K_dim),
          std::to_string(r.k_bits),
          r.dtype,
          r.variant,
          num(r.median_us),
          num(r.p10_us),
          num(r.p90_us),
          std::to_string(r.samples),
          num(r.gb_per_s),
          num(r.tflops),
          num(r.floor_us),
          num(r.frac_of_floor, 4),
          num(r.speedup_vs_baseline, 4),
          r.check,
          num(r.max_err_over_bound, 4),
          r.family,
          r.l2,
          std::to_string(r.copies),
          std::to_string(r.launches_per_sample),
          std::to_string(r.pdl),
          num(r.sm_mhz_before, 5),
          num(r.sm_mhz_after, 5),
          num(r.rel_noise, 3),
          std::to_string(r.experts),
          std::to_string(r.active_experts),
          r.codebook,
          r.config,
          r.error,
          r.device,
          r.weights_source};
}

std::string csv_escape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string r = "\"";
  for (char c : f) {
    if (c == '"') r += '"';
    r += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return r + "\"";
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n\f\v");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n\f\v") - b + 1);
}

std::vector<std::vector<std::string>> csv_records(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      rec.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        rec.push_back(field);
        out.push_back(rec);
      }
      rec.clear();
      field.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) {
    rec.push_back(field);
    out.push_back(rec);
  }
  return out;
}

std::vector<std::string> csv_split(const std::string& line) {
  auto recs = csv_records(line);
  return recs.empty() ? std::vector<std::string>(1) : std::move(recs.front());
}

CsvWriter::CsvWriter(const std::string& path)
    : path_(path), out_(path, std::ios::out | std::ios::trunc) {
  if (!out_) throw Error("cannot write results file '" + path + "'");
  const auto& cols = result_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out_ << (i ? "," : "") << cols[i];
  out_ << "\n";
  out_.flush();
}

void CsvWriter::append(const ResultRow& r) {
  const auto f = row_fields(r);
  for (std::size_t i = 0; i < f.size(); ++i) out_ << (i ? "," : "") << csv_escape(f[i]);
  out_ << "\n";
  out_.flush();
  if (!out_) throw Error("writing results file '" + path_ + "' failed");
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::out | std::ios::trunc);
    if (!f) throw Error("cannot write '" + tmp + "'");
    f << j.dump(2) << "\n";
    if (!f) throw Error("writing '" + tmp + "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error("cannot rename '" + tmp + "' to '" + path + "'");
}

std::string read_text_file(const std::string& path, const std::string& what,
                           std::int64_t max_bytes) {
  return read_input_file(path, what, max_bytes);
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace kbit
