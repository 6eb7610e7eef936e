// Progress of a long run: done/total, the current item and an ETA, redrawn in place on a
// terminal, one plain line per item otherwise (logs, CI).
#pragma once
#include <chrono>
#include <string>

namespace kbit {

class Progress {
 public:
  Progress(int total, bool quiet);
  void start_item(const std::string& what);
  void finish_item();
  void done();

 private:
  std::string eta() const;
  int total_, done_ = 0;
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace kbit
