// The (problem, row) checks a GPU sweep ran, per row, and the problems it refused: a sweep
// prints one line per row and fails a row that runs on the device but was checked on no
// problem (test_variants_gpu.cpp; the counting itself is tested on the CPU in test_registry.cpp).
#pragma once
#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/registry.hpp"

namespace kbit::test {

class SweepTally {
 public:
  // device_sm: the device's compute capability as 10 * major + minor (90 for sm_90).
  SweepTally(std::string sweep, int device_sm) : sweep_(std::move(sweep)), sm_(device_sm) {}

  // Whether the row runs problem d; a problem it refuses is counted with its reason.
  bool admit(const VariantRow& row, const GemmDims& d) {
    Row& r = rows_[std::string(row.name)];
    r.on_device = sm_ >= row.support.min_sm;
    const std::string why = unsupported_reason(row, d, sm_);
    if (why.empty()) return true;
    ++r.refused;
    r.why = why;
    return false;
  }
  // One check of an admitted problem ran to its end.
  void ran(const VariantRow& row) { ++rows_[std::string(row.name)].checked; }

  std::size_t rows() const { return rows_.size(); }
  int checked(const std::string& row) const {
    const auto it = rows_.find(row);
    return it == rows_.end() ? 0 : it->second.checked;
  }
  // The rows swept that run on this device and were checked on no problem.
  std::vector<std::string> unchecked_rows() const {
    std::vector<std::string> out;
    for (const auto& [name, r] : rows_)
      if (r.on_device && r.checked == 0) out.push_back(name);
    return out;
  }
  // "sweep: row: N checks, M problems refused (the last: why)", one line per row swept.
  std::string report() const {
    std::ostringstream s;
    for (const auto& [name, r] : rows_) {
      s << sweep_ << ": " << name << ": " << r.checked << " checks, " << r.refused
        << " problems refused";
      if (r.refused) s << " (the last: " << r.why << ")";
      if (!r.on_device) s << "; does not run on this device";
      s << "\n";
    }
    return s.str();
  }

 private:
  struct Row {
    int checked = 0, refused = 0;
    bool on_device = true;
    std::string why;
  };
  std::string sweep_;
  int sm_;
  std::map<std::string, Row> rows_;
};

}  // namespace kbit::test
