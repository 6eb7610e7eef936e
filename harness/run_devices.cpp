// kbit-harness run --devices all|0,1: the problems of one experiment sharded over GPUs of one host
// (docs/gpu_machines.md, "Sweeps over several GPUs"). The parent re-executes itself once per
// device, `run CONFIG --shard I/N --device-index D --out-root <scratch>/dD --no-plot` with
// CUDA_VISIBLE_DEVICES set to the device's UUID (the child, its peers' Python included, sees that
// device alone), prints each child's lines prefixed with its device, and joins the children's run
// folders with harness/tools/merge_runs.py into one folder under the results root.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/device_info.hpp"
#include "harness/peers.hpp"
#include "harness/results.hpp"
#include "harness/run_devices.hpp"
#include "harness/shard.hpp"
#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"

extern char** environ;

namespace kbit {
namespace {

namespace fs = std::filesystem;

// A running child: its output pipe and the part of a line not yet printed.
struct Running {
  DeviceChild* child = nullptr;
  pid_t pid = -1;
  int fd = -1;
  std::string pending;
};

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's path (/proc/self/exe): " + ec.message());
  return p.string();
}

// The child's command line: the parent's run options, its shard and device, its own results root.
std::vector<std::string> child_args(const std::string& exe, const std::string& config,
                                    const RunOptions& o, const DeviceChild& c, int index,
                                    int count) {
  std::vector<std::string> a = {exe, "run", config, "--out-root", c.out_root, "--no-plot"};
  if (count > 1)
    a.insert(a.end(), {"--shard", std::to_string(index) + "/" + std::to_string(count)});
  a.insert(a.end(), {"--device-index", std::to_string(c.device.index)});
  auto list = [&](const char* flag, const std::vector<std::string>& v) {
    if (v.empty()) return;
    a.push_back(flag);
    a.insert(a.end(), v.begin(), v.end());
  };
  list("--variants", o.variants);
  list("--shapes", o.shapes);
  std::vector<std::string> m;
  for (std::int64_t x : o.m) m.push_back(std::to_string(x));
  list("--m", m);
  if (o.memory_budget_gb > 0)
    a.insert(a.end(), {"--memory-budget-gb", std::to_string(o.memory_budget_gb)});
  if (o.quiet) a.push_back("--quiet");
  if (o.pdl) a.push_back("--pdl");
  return a;
}

// Forks and executes args with CUDA_VISIBLE_DEVICES set to the child's device (its UUID). The
// argument and environment arrays are built before the fork: the forked copy of this process
// (whose CUDA runtime may have threads) only duplicates descriptors and executes.
void start(Running& r, const std::vector<std::string>& args) {
  const DeviceChild& c = *r.child;
  std::vector<std::string> env_strings;
  bool omp_set = false;
  for (char** e = environ; *e; ++e) {
    omp_set = omp_set || std::strncmp(*e, "OMP_NUM_THREADS=", 16) == 0;
    if (std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0) env_strings.push_back(*e);
  }
  env_strings.push_back("CUDA_VISIBLE_DEVICES=" + c.device.uuid);
  // Its share of the cores for OpenMP (the CPU quantizer, the reference), unless the environment
  // sets it: children on every core each slow the other's (docs/gpu_machines.md).
  if (c.cpu_threads > 0 && !omp_set)
    env_strings.push_back("OMP_NUM_THREADS=" + std::to_string(c.cpu_threads));
  std::vector<char*> argv, envp;
  for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  for (const std::string& s : env_strings) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  const std::string failed = "cannot execute " + args.front() + "\n";
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    const ssize_t ignored = ::write(STDERR_FILENO, failed.data(), failed.size());
    (void)ignored;
    ::_exit(127);
  }
  ::close(fds[1]);
  r.pid = pid;
  r.fd = fds[0];
}

// The one run folder a child wrote under <its root>/<experiment>/, or "" when it wrote none.
std::string part_folder(const DeviceChild& c, const std::string& experiment) {
  const fs::path dir = fs::path(c.out_root) / experiment;
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) found.push_back(e.path().string());
  return found.size() == 1 ? found.front() : "";
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

void run_device_children(std::vector<DeviceChild>& children,
                         const std::vector<std::vector<std::string>>& commands, std::ostream& out) {
  std::vector<Running> running(children.size());
  for (std::size_t i = 0; i < children.size(); ++i) {
    running[i].child = &children[i];
    start(running[i], commands.at(i));
  }
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Running*> who;
    for (Running& r : running)
      if (r.fd >= 0) {
        fds.push_back({r.fd, POLLIN, 0});
        who.push_back(&r);
      }
    if (fds.empty()) break;
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("poll: ") + std::strerror(errno));
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Running& r = *who[i];
      char buf[4096];
      const ssize_t n = ::read(r.fd, buf, sizeof buf);
      if (n > 0) r.pending.append(buf, std::size_t(n));
      const std::string tag = "[gpu " + std::to_string(r.child->device.index) + "] ";
      for (std::size_t nl; (nl = r.pending.find('\n')) != std::string::npos;) {
        out << tag << r.pending.substr(0, nl) << "\n";
        r.pending.erase(0, nl + 1);
      }
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {  // closed: the child ended
        if (!r.pending.empty()) out << tag << r.pending << "\n";
        r.pending.clear();
        ::close(r.fd);
        r.fd = -1;
      }
      out.flush();
    }
  }
  for (Running& r : running) {
    int status = 0;
    while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.child->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
}

std::string join_device_parts(const std::vector<DeviceChild>& children,
                              const std::string& results_root, const std::string& experiment,
                              const std::vector<std::string>& argv, const std::string& devices,
                              double wall_s) {
  std::vector<std::string> parts;
  std::string name;  // the joined folder's: the first part's as run names it
  for (const DeviceChild& c : children) {
    const std::string part = part_folder(c, experiment);
    if (part.empty())
      throw Error("device " + std::to_string(c.device.index) + " (exit " + std::to_string(c.rc) +
                  ") wrote no run folder under " + c.out_root + "/" + experiment +
                  "; nothing joined");
    if (name.empty()) name = fs::path(part).filename().string();
    parts.push_back(part);
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    // Distinct names: merge_runs keeps each part's run.json under parts/<name>/.
    const std::string renamed = parts[i] + "_gpu" + std::to_string(children[i].device.index);
    fs::rename(parts[i], renamed);
    parts[i] = renamed;
  }
  const std::string dir = results_root + "/" + experiment + "/" + name;
  if (fs::exists(dir)) throw Error(dir + " exists; nothing joined");
  std::string cmd =
      quoted(configured_python()) + " " + quoted(source_dir() + "/harness/tools/merge_runs.py");
  for (const std::string& p : parts) cmd += " " + quoted(p);
  if (std::system(cmd.c_str()) != 0) throw Error("joining the parts failed (" + cmd + ")");
  fs::rename(parts.front(), dir);

  nlohmann::json run = nlohmann::json::parse(read_text_file(dir + "/run.json", "run.json"));
  run["argv"] = argv;
  run["overrides"]["devices"] = devices;
  run["devices"] = nlohmann::json::array();
  for (const DeviceChild& c : children)
    run["devices"].push_back({{"index", c.device.index},
                              {"name", c.device.name},
                              {"uuid", c.device.uuid},
                              {"exit_code", c.rc}});
  run["devices_wall_s"] = wall_s;
  write_json_file(dir + "/run.json", run);
  return dir;
}

int run_on_devices(const std::string& config_path, const RunOptions& opts) {
  const DeviceSelection sel = parse_devices(opts.devices);
  const ExperimentConfig cfg = load_run_config(config_path, opts);
  if (!cuda_device_available()) {
    std::cerr << "kbit-harness run: no CUDA device; nothing was run (exit " << kExitNoDevice
              << ")\n";
    return kExitNoDevice;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  const std::vector<int> indices = resolve_devices(sel, count);
  if (indices == std::vector<int>{0}) {  // the current device alone: a run as without --devices
    RunOptions one = opts;
    one.devices.clear();
    return run_experiment(config_path, one);
  }
  std::vector<HostDevice> devices;
  for (int i : indices) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
      throw Error("--devices: cannot read the properties of device " + std::to_string(i));
    devices.push_back({i, p.name, uuid_string(p.uuid)});
  }
  check_one_gpu_model(devices);
  const std::vector<PlannedProblem> plan = plan_problems(cfg);
  const std::size_t problems = plan.size();
  const int n = sweep_children(plan, int(devices.size()));
  devices.resize(std::size_t(n));

  const std::string root = opts.out_root.empty() ? source_dir() + "/results" : opts.out_root;
  const std::string exe = self_exe();
  const auto t0 = std::chrono::steady_clock::now();
  auto child = [](const HostDevice& d, const std::string& out_root) {
    DeviceChild c;
    c.device = d;
    c.out_root = out_root;
    return c;
  };
  if (n == 1) {  // one device (not 0, or a config of one problem): its run folder where run's goes
    std::vector<DeviceChild> one{child(devices.front(), root)};
    run_device_children(one, {child_args(exe, config_path, opts, one.front(), 0, 1)}, std::cout);
    return one.front().rc;
  }
  const std::string scratch =
      root + "/" + cfg.name + "/.devices_" + utc_timestamp() + "_" + std::to_string(::getpid());
  std::vector<DeviceChild> children;
  std::vector<std::vector<std::string>> commands;
  // The cores this process may run on (its affinity mask: a container's CPU set, taskset).
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const int cores = ::sched_getaffinity(0, sizeof(mask), &mask) == 0
                        ? CPU_COUNT(&mask)
                        : int(std::thread::hardware_concurrency());
  const int cpu_threads = cores > 0 ? child_cpu_threads(cores, n) : 0;
  for (const HostDevice& d : devices) {
    children.push_back(child(d, scratch + "/d" + std::to_string(d.index)));
    children.back().cpu_threads = cpu_threads;
  }
  for (int i = 0; i < n; ++i)
    commands.push_back(child_args(exe, config_path, opts, children[i], i, n));
  std::cout << "run --devices: " << problems << " problems of " << cfg.name << " over " << n
            << " x " << devices.front().name << " (devices";
  for (const HostDevice& d : devices) std::cout << " " << d.index;
  std::cout << "), one process each; their folders under " << scratch << std::endl;
  run_device_children(children, commands, std::cout);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int rc = kExitOk;
  for (const DeviceChild& c : children) rc = std::max(rc, c.rc);
  std::string dir;
  try {
    dir = join_device_parts(children, root, cfg.name, opts.argv, opts.devices, wall_s);
  } catch (const Error& e) {
    std::cerr << "run --devices: " << e.what() << "; the parts stay in " << scratch << "\n";
    return rc == kExitOk ? kExitCheckFailed : rc;
  }
  fs::remove_all(scratch);
  const nlohmann::json run = nlohmann::json::parse(read_text_file(dir + "/run.json", "run.json"));
  const nlohmann::json& sum = run["summary"];
  std::printf(
      "\nrun --devices: %d devices, %.1f s wall; %d rows, %d checks passed, %d failed, %d "
      "errors\n%s\n",
      n, wall_s, sum.value("rows", 0), sum.value("check_passed", 0), sum.value("check_failed", 0),
      sum.value("errors", 0), dir.c_str());
  if (opts.plot) plot_run(dir);
  return rc;
}

}  // namespace kbit
