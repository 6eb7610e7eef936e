// A fresh folder under the system's temporary folder, removed at the end of the test: the CPU
// tests that write files (configs, tables, CURRENT trees, run folders) each take one.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kbit::test {

struct TempDir {
  // prefix names the test file in the folder's name; copy_from (a folder) is copied in first.
  explicit TempDir(const std::string& prefix, const std::string& copy_from = "") {
    namespace fs = std::filesystem;
    static int n = 0;
    path = (fs::temp_directory_path() /
            ("kbit_" + prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++)))
               .string();
    fs::remove_all(path);
    if (copy_from.empty())
      fs::create_directories(path);
    else
      fs::copy(copy_from, path, fs::copy_options::recursive);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `text` to NAME in the folder and returns its path.
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name, std::ios::binary | std::ios::trunc) << text;
    return path + "/" + name;
  }
  std::string path;
};

}  // namespace kbit::test
