// Every file the harness reads as input (experiment configs, shape files, dispatch tables,
// CURRENT files, a run's run.json and results.csv) is opened here: it must be a regular file
// (never a FIFO, a device such as /dev/zero, or a folder) no larger than its limit, else
// kbit::Error names the path and why. Then nothing reads without bound or waits for a writer.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kbit {

// The limits (docs/harness.md lists them with the others). A config or a table is a few KB; a
// results.csv a few MB at most.
constexpr std::int64_t kMaxConfigBytes = std::int64_t(16) << 20;       // configs, shape files
constexpr std::int64_t kMaxTableBytes = std::int64_t(16) << 20;        // dispatch tables
constexpr std::int64_t kMaxCurrentBytes = 4096;                        // CURRENT: a folder name
constexpr std::int64_t kMaxRunJsonBytes = std::int64_t(16) << 20;      // run.json, peers_status
constexpr std::int64_t kMaxResultsCsvBytes = std::int64_t(256) << 20;  // results.csv
// Nesting: TOML keys of more dotted parts and JSON values nested deeper are refused before they
// are built (toml++ recurses once per part: 100000 parts overflow the stack).
constexpr int kMaxTomlKeyParts = 64;
constexpr int kMaxJsonDepth = 64;

// A regular file opened for reading (a FIFO, a device, a folder refused as below, without
// waiting or reading) and its size; the descriptor is closed with the object. For a file read
// in parts or memory-mapped (a .safetensors file), whose size has no limit of its own.
struct InputFd {
  int fd = -1;
  std::int64_t size = 0;
  InputFd() = default;
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;
  InputFd(InputFd&& o) noexcept : fd(o.fd), size(o.size) { o.fd = -1; }
  ~InputFd();
};
InputFd open_input_file(const std::string& path, const std::string& what);

// The bytes of a regular file of at most max_bytes; throws kbit::Error "WHAT 'PATH' ..." naming
// what is wrong (missing, not a regular file and what it is, above the limit).
std::string read_input_file(const std::string& path, const std::string& what,
                            std::int64_t max_bytes);

// JSON text parsed, or kbit::Error "PATH: ..." (a syntax error, nesting deeper than
// kMaxJsonDepth).
nlohmann::json parse_json(const std::string& text, const std::string& path);

}  // namespace kbit
