#include "harness/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace kbit {

Progress::Progress(int total, bool quiet)
    : total_(total),
      quiet_(quiet),
      tty_(isatty(fileno(stdout)) != 0),
      t0_(std::chrono::steady_clock::now()) {}

std::string Progress::eta() const {
  if (done_ == 0) return "--";
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const int s = int(el / done_ * (total_ - done_));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  return buf;
}

void Progress::start_item(const std::string& what) {
  if (quiet_) return;
  if (tty_) {
    std::printf("\r\033[K[%d/%d] ETA %s  %s", done_ + 1, total_, eta().c_str(), what.c_str());
  } else {
    std::printf("[%d/%d] ETA %s  %s\n", done_ + 1, total_, eta().c_str(), what.c_str());
  }
  std::fflush(stdout);
}

void Progress::finish_item() {
  ++done_;
}

void Progress::done() {
  if (!quiet_ && tty_) std::printf("\r\033[K[%d/%d] done\n", done_, total_);
  std::fflush(stdout);
}

}  // namespace kbit
