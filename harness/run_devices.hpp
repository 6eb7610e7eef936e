// run --devices (harness/run_devices.cpp): the children, one per device, and the join of the run
// folders they wrote. Exposed for the CPU tests, which run shell commands as children and join
// synthetic run folders.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/shard.hpp"

namespace kbit {

// One child of run --devices: its device, the results root it writes under, its exit code.
struct DeviceChild {
  HostDevice device;
  std::string out_root;
  // OpenMP threads for its CPU work (the quantizer, the reference), set as OMP_NUM_THREADS where
  // the environment does not set it; 0: the environment's (or every core).
  int cpu_threads = 0;
  int rc = -1;  // once it ended: its exit code, 128 + the signal that ended it
};

// Starts commands[i] (an argv; commands[i][0] a path) for children[i], all at once, each with
// CUDA_VISIBLE_DEVICES set to its device's UUID (and OMP_NUM_THREADS to its cpu_threads) and
// stdin from /dev/null; copies their output (stdout and stderr) to `out` line by line, each line
// prefixed "[gpu D] "; waits for all and sets each child's rc.
void run_device_children(std::vector<DeviceChild>& children,
                         const std::vector<std::vector<std::string>>& commands, std::ostream& out);

// Joins the run folder each child wrote (the one folder under <out_root>/<experiment>/) with
// harness/tools/merge_runs.py into <results_root>/<experiment>/<the first child's folder name>;
// its run.json gets `argv`, overrides.devices, `devices` (each child's index, name, UUID and exit
// code) and `devices_wall_s`. Returns the joined folder. Throws kbit::Error when a child wrote no
// folder, the target exists or merge_runs refuses (the parts stay where they are).
std::string join_device_parts(const std::vector<DeviceChild>& children,
                              const std::string& results_root, const std::string& experiment,
                              const std::vector<std::string>& argv, const std::string& devices,
                              double wall_s);

}  // namespace kbit
