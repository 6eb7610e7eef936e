// Reading results/<experiment>/CURRENT (harness/current.hpp).
#include "harness/current.hpp"

#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/device_info.hpp"
#include "harness/input_file.hpp"
#include "harness/results.hpp"
#include "reference/error.hpp"

namespace kbit {

std::string current_gpu_key(const std::string& device_name) {
  return sanitize_name(device_name);
}

bool parse_current_line(const std::string& text, const std::string& where, CurrentRun& out) {
  std::istringstream words(text);
  std::vector<std::string> w;
  for (std::string s; words >> s;) w.push_back(s);
  if (w.empty() || w[0][0] == '#') return false;
  if (w.size() > 2)
    throw Error(where + ": '" + text + "' has " + std::to_string(w.size()) +
                " words; a line is `<GPU> <run folder>` (or the run folder alone)");
  out = CurrentRun{};
  out.run = w.back();
  if (w.size() == 2) {
    out.gpu = w[0];
    if (current_gpu_key(out.gpu) != out.gpu)
      throw Error(where + ": GPU '" + out.gpu + "' is not written as run folders write it ('" +
                  current_gpu_key(out.gpu) + "')");
  }
  if (out.run.find('/') != std::string::npos || out.run == "." || out.run == "..")
    throw Error(where + ": '" + out.run + "' is not the name of a run folder");
  return true;
}

std::vector<CurrentRun> read_current(const std::string& results_root,
                                     const std::string& experiment) {
  namespace fs = std::filesystem;
  const std::string exp_dir = results_root + "/" + experiment;
  const std::string path = exp_dir + "/CURRENT";
  std::istringstream text(read_text_file(path, "CURRENT file", kMaxCurrentBytes));
  std::vector<CurrentRun> out;
  std::map<std::string, int> line_of;  // GPU -> the line that named its run
  int number = 0;
  for (std::string line; std::getline(text, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(number);
    CurrentRun r;
    if (!parse_current_line(line, where, r)) continue;
    r.line = number;
    r.dir = exp_dir + "/" + r.run;
    if (!fs::is_directory(r.dir))
      throw Error(where + ": names '" + r.run + "', which is not in " + exp_dir);
    const nlohmann::json j = parse_json(
        read_text_file(r.dir + "/run.json", "run.json", kMaxRunJsonBytes), r.dir + "/run.json");
    const nlohmann::json* name = nullptr;
    if (j.contains("device") && j["device"].is_object() && j["device"].contains("name"))
      name = &j["device"]["name"];
    if (!name || !name->is_string() || name->get<std::string>().empty())
      throw Error(where + ": " + r.dir + "/run.json has no device.name (the GPU it was timed on)");
    r.gpu_name = name->get<std::string>();
    const std::string key = current_gpu_key(r.gpu_name);
    if (r.gpu.empty()) r.gpu = key;
    if (r.gpu != key)
      throw Error(where + ": names GPU " + r.gpu + ", but run " + r.run + " was timed on '" +
                  r.gpu_name + "' (" + key + ")");
    const auto [it, fresh] = line_of.emplace(r.gpu, number);
    if (!fresh)
      throw Error(where + ": a second run of GPU " + r.gpu + " (line " +
                  std::to_string(it->second) + " names one); one run per GPU");
    out.push_back(std::move(r));
  }
  if (out.empty()) throw Error(path + " names no run (a line is `<GPU> <run folder>`)");
  return out;
}

}  // namespace kbit
