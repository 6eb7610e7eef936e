#include "harness/peers.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "harness/match_rows.hpp"
#include "harness/results.hpp"
#include "reference/error.hpp"

#ifndef KBIT_PYTHON_EXE
#define KBIT_PYTHON_EXE "python3"
#endif

namespace kbit {

const std::vector<PeerRow>& peers() {
  const std::vector<DType> both{DType::f16, DType::bf16};
  static const std::vector<PeerRow> rows = {
      {"humming_u4_g128",
       "humming-kernels (Hopper wgmma + TMA, warp-specialized, JIT): uint4 weights, fp16 scales "
       "per group of 128",
       {4},
       both,
       true,
       4.125,
       "humming-kernels"},
      {"humming_u4_g32",
       "humming-kernels: uint4 weights, fp16 scales per group of 32",
       {4},
       both,
       true,
       4.5,
       "humming-kernels"},
      {"humming_u2_g128",
       "humming-kernels: uint2 weights, fp16 scales per group of 128",
       {2},
       both,
       true,
       2.125,
       "humming-kernels"},
      {"humming_u3_g128",
       "humming-kernels: uint3 weights, fp16 scales per group of 128",
       {3},
       both,
       true,
       3.125,
       "humming-kernels"},
      {"humming_u5_g128",
       "humming-kernels: uint5 weights, fp16 scales per group of 128",
       {5},
       both,
       true,
       5.125,
       "humming-kernels"},
      {"humming_awq_g128",
       "humming-kernels on AWQ int4 (docs/awq_format.md): 4-bit zero point and fp16 scale per "
       "group of 128, loaded through humming's AWQ schema, fp16 only",
       {4},
       {DType::f16},
       false,
       4.15625,
       "humming-kernels"},
      {"humming_awq_g64",
       "humming-kernels on AWQ int4: zero point and fp16 scale per group of 64, fp16 only",
       {4},
       {DType::f16},
       false,
       4.3125,
       "humming-kernels"},
      {"humming_awq_g32",
       "humming-kernels on AWQ int4: zero point and fp16 scale per group of 32, fp16 only",
       {4},
       {DType::f16},
       false,
       4.625,
       "humming-kernels"},
      {"tinygemm_int4_g32",
       "torch's _weight_int4pack_mm (tinygemm): int4 with bf16 scales and zeros per group of 32, "
       "bf16 only",
       {4},
       {DType::bf16},
       false,
       5.0,
       "torch"},
      {"tinygemm_int4_g128",
       "torch's _weight_int4pack_mm (tinygemm): int4 with bf16 scales and zeros per group of "
       "128, bf16 only",
       {4},
       {DType::bf16},
       false,
       4.25,
       "torch"},
  };
  return rows;
}

std::vector<const PeerRow*> match_peers(const std::vector<std::string>& patterns) {
  return match_rows(peers(), patterns, [](const std::string& p) {
    std::string known;
    for (const auto& r : peers()) known += (known.empty() ? "" : ", ") + std::string(r.name);
    throw Error("peer '" + p + "' matches no peer (known: " + known + ")");
  });
}

std::string peer_unsupported_reason(const PeerRow& p, int k_bits, DType dtype, bool moe) {
  if (std::find(p.k_bits.begin(), p.k_bits.end(), k_bits) == p.k_bits.end())
    return "K = " + std::to_string(k_bits) + " is not its bit width";
  if (std::find(p.dtypes.begin(), p.dtypes.end(), dtype) == p.dtypes.end())
    return std::string(dtype_name(dtype)) + " is not supported";
  if (moe && !p.moe) return "MoE problems are not supported";
  return "";
}

nlohmann::json peer_request_json(const PeerRequest& r) {
  nlohmann::json j;
  j["experiment"] = r.experiment;
  j["run_dir"] = r.run_dir;
  j["csv"] = r.csv;
  j["status_path"] = r.run_dir + "/peers_status.json";
  j["test_peers"] = false;
  j["peers"] = nlohmann::json::array();
  for (const PeerRow* p : r.peers) j["peers"].push_back(std::string(p->name));
  j["timing"] = r.timing;
  j["check"] = r.check;
  j["codebook"] = r.codebook;
  j["l2_bytes"] = r.l2_bytes;
  j["rotation_budget_bytes"] = r.rotation_budget_bytes;
  j["device"] = r.device;
  j["problems"] = nlohmann::json::array();
  for (const PeerProblem& p : r.problems)
    j["problems"].push_back({{"shape", p.shape},
                             {"M", p.M},
                             {"N", p.N},
                             {"K_dim", p.K_dim},
                             {"k_bits", p.k_bits},
                             {"format", p.format},
                             {"dtype", dtype_name(p.dtype)},
                             {"floor_us", p.floor_us},
                             {"baseline_us", p.baseline_us},
                             {"experts", p.experts},
                             {"expert_offsets", p.expert_offsets}});
  return j;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

nlohmann::json run_peers(const PeerRequest& r, const std::string& python,
                         const std::string& source_dir) {
  const std::string req = r.run_dir + "/peers_request.json";
  write_json_file(req, peer_request_json(r));
  const std::string status_path = r.run_dir + "/peers_status.json";
  const std::string cmd = shell_quote(python) + " -u " +
                          shell_quote(source_dir + "/harness/peers/runner.py") + " run " +
                          shell_quote(req);
  const int rc = std::system(cmd.c_str());
  nlohmann::json status;
  std::ifstream f(status_path);
  if (f) {
    try {
      f >> status;
    } catch (const std::exception& e) {
      status = {{"error", std::string("peers_status.json is not JSON: ") + e.what()}};
    }
  } else {
    status = {
        {"error", "the peers' runner wrote no status (exit " + std::to_string(rc) + "): " + cmd}};
  }
  status["runner_exit"] = rc;
  status["command"] = cmd;
  return status;
}

std::string configured_python() {
  return KBIT_PYTHON_EXE;
}

}  // namespace kbit
