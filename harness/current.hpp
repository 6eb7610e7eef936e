// results/<experiment>/CURRENT: the run the docs cite, one per GPU model (docs/harness.md,
// "Results"). One line per GPU, `<GPU> <run folder>`, where GPU is the run's device name as in
// its folder name (run.json's device.name, every character but letters, digits, '-' and '.' as
// '_': NVIDIA_H100_80GB_HBM3). A line holding only a run folder takes its GPU from that run's
// run.json. Blank lines and lines starting with '#' are skipped.
#pragma once
#include <string>
#include <vector>

namespace kbit {

struct CurrentRun {
  std::string gpu;       // the GPU as the line (or run.json) names it: NVIDIA_H100_80GB_HBM3
  std::string gpu_name;  // run.json's device.name: "NVIDIA H100 80GB HBM3"
  std::string run;       // the run folder's name
  std::string dir;       // <results root>/<experiment>/<run>
  int line = 0;          // its line in CURRENT
};

// One line of a CURRENT file, without looking at the disk: `gpu` is empty for a line of a run
// folder alone. Throws kbit::Error naming `where` (file:line) for a malformed line (three or more
// words, a run folder with '/', a GPU with characters a folder name does not keep). Returns false
// for a blank or comment line.
bool parse_current_line(const std::string& text, const std::string& where, CurrentRun& out);

// The runs <results_root>/<experiment>/CURRENT names, in file order. Throws kbit::Error naming
// CURRENT and the line: a malformed line, a run folder that is not there, a run.json without a
// device name or of another GPU than the line names, a second run of one GPU, a file naming none.
std::vector<CurrentRun> read_current(const std::string& results_root,
                                     const std::string& experiment);

// The GPU of a device name as CURRENT and run folders write it ("NVIDIA H200" -> "NVIDIA_H200").
std::string current_gpu_key(const std::string& device_name);

}  // namespace kbit
