#include "harness/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "reference/error.hpp"

namespace kbit {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

std::string limit_text(std::int64_t bytes) {
  std::string s = std::to_string(bytes) + " bytes";
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
    s += " (" + std::to_string(bytes >> 20) + " MiB)";
  else if (bytes >= 1024 && bytes % 1024 == 0)
    s += " (" + std::to_string(bytes >> 10) + " KiB)";
  return s;
}

// Thrown by the JSON callback when the nesting is too deep.
struct TooDeep {};

}  // namespace

InputFd::~InputFd() {
  if (fd >= 0) ::close(fd);
}

InputFd open_input_file(const std::string& path, const std::string& what) {
  const std::string name = what + " '" + path + "'";
  if (path.empty()) throw Error("cannot open " + what + ": the path is empty");
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below).
  InputFd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f.fd < 0) throw Error("cannot open " + name + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw Error("cannot open " + name + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(name + " is " + kind_of(st.st_mode) + ", not a regular file");
  f.size = std::int64_t(st.st_size);
  return f;
}

std::string read_input_file(const std::string& path, const std::string& what,
                            std::int64_t max_bytes) {
  const std::string name = what + " '" + path + "'";
  const InputFd f = open_input_file(path, what);
  if (f.size > max_bytes)
    throw Error(name + " is " + std::to_string(f.size) + " bytes, above the limit " +
                limit_text(max_bytes) + " for " + what + "s");
  std::string out;
  out.reserve(std::size_t(f.size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("reading " + name + " failed: " + std::strerror(errno));
    if (n == 0) break;
    // A file that reports no size (/proc) or grows while read is held to the same limit.
    if (std::int64_t(out.size()) + n > max_bytes)
      throw Error(name + " holds more than the limit " + limit_text(max_bytes) + " for " + what +
                  "s");
    out.append(buf, std::size_t(n));
  }
  return out;
}

nlohmann::json parse_json(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text,
                                 [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
                                   if (depth > kMaxJsonDepth) throw TooDeep{};
                                   return true;
                                 });
  } catch (const TooDeep&) {
    throw Error(path + ": JSON nested deeper than the limit " + std::to_string(kMaxJsonDepth));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + " does not parse: " + e.what());
  }
}

}  // namespace kbit
