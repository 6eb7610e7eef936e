// Peers: the best public low-bit GEMM kernels, run as rows beside ours in the same run folder
// (family "peer"). They are Python (torch) and live in harness/peers/; this is their table as the
// harness knows it (names, what each supports: `kbit-harness list`, config checks) and the step
// that hands them the run's problems. docs/peers.md has the interface and the timing method.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/dtype.hpp"

namespace kbit {

struct PeerRow {
  std::string_view name;
  std::string_view description;
  std::vector<int> k_bits;     // problems whose k_bits is one of these (the same bit width)
  std::vector<DType> dtypes;   // activation / output types it takes
  bool moe = false;            // grouped (MoE) problems too
  double bits_per_weight = 0;  // its own storage, scales (and zeros) included
  std::string_view package;    // the Python package it needs
};

const std::vector<PeerRow>& peers();
// Rows matching any of the names or globs, in table order; a pattern that matches nothing is an
// error naming it and the known peers.
std::vector<const PeerRow*> match_peers(const std::vector<std::string>& patterns);
// Empty when the peer takes the problem, otherwise why not.
std::string peer_unsupported_reason(const PeerRow& p, int k_bits, DType dtype, bool moe);

// One problem as the peers' runner reads it (docs/peers.md).
struct PeerProblem {
  std::string shape;
  std::int64_t M = 0, N = 0, K_dim = 0;
  int k_bits = 0;
  // The weights' format (harness/weight_format.hpp): "kbit", or "awq_g128" etc. (k_bits 4), so
  // that a peer picks the problems of its format.
  std::string format = "kbit";
  DType dtype = DType::f16;
  double floor_us = 0, baseline_us = 0;
  int experts = 0;
  std::vector<std::int64_t> expert_offsets;
};

struct PeerRequest {
  std::string experiment, run_dir, csv, codebook;
  std::vector<const PeerRow*> peers;
  std::vector<PeerProblem> problems;
  nlohmann::json timing, check;
  std::int64_t l2_bytes = 0, rotation_budget_bytes = 0;
  std::string device;  // the rows' device column ("<index on the host> <UUID>")
};
nlohmann::json peer_request_json(const PeerRequest& r);

// Writes the request beside the CSV, runs `python harness/peers/runner.py run` on it (which
// appends its rows to the CSV) and returns its status (peers_status.json) with what was run and
// why anything was not. Never throws for a missing Python, torch or package: the status says so.
nlohmann::json run_peers(const PeerRequest& r, const std::string& python,
                         const std::string& source_dir);

// The interpreter configured at build time (CMake's KBIT_PYTHON): the one that imports
// matplotlib for the plots, and torch for the peers where the machine has it.
std::string configured_python();

}  // namespace kbit
