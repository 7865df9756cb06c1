#include "proc_info.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace rdzvscope::bpf {

std::string read_file(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string data(limit, '\0');
  in.read(data.data(), static_cast<std::streamsize>(limit));
  data.resize(static_cast<std::size_t>(in.gcount()));
  return data;
}

std::uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::vector<std::string> stat_fields(int pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat", 4096);
  std::vector<std::string> fields;
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream rest(stat.substr(close + 1));
  std::string f;
  while (rest >> f) fields.push_back(f);
  return fields;  // fields[0] is field 3 (state)
}

namespace {

// /proc/PID/environ: NUL-separated NAME=value. Only the variables we look at are kept.
std::map<std::string, std::string> environ_of(int pid) {
  std::map<std::string, std::string> env;
  const std::string data = read_file("/proc/" + std::to_string(pid) + "/environ");
  std::size_t start = 0;
  while (start < data.size()) {
    std::size_t end = data.find('\0', start);
    if (end == std::string::npos) end = data.size();
    const std::string item = data.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq != std::string::npos && eq + 1 < item.size()) env[item.substr(0, eq)] = item.substr(eq + 1);
    start = end + 1;
  }
  return env;
}

bool parse_int(const std::string& s, long long* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || !end || *end) return false;
  *out = v;
  return true;
}

std::int32_t env_int(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  long long v;
  if (it == env.end() || !parse_int(it->second, &v) || v < INT32_MIN || v > INT32_MAX) return -1;
  return static_cast<std::int32_t>(v);
}

void copy_cut(char* dst, std::size_t cap, const std::string& s) {
  const std::size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

void env_str(char* dst, std::size_t cap, const std::map<std::string, std::string>& env,
             const char* name) {
  auto it = env.find(name);
  copy_cut(dst, cap, it == env.end() ? std::string() : it->second);
}

void add_port(std::vector<std::uint16_t>& ports, long long p) {
  if (p <= 0 || p > 65535) return;
  const auto port = static_cast<std::uint16_t>(p);
  if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(port);
}

}  // namespace

bool process_exists(int pid) { return pid > 0 && access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0; }

bool fill_header_from_proc(int pid, rdzv_file_header* h) {
  const std::string dir = "/proc/" + std::to_string(pid);
  h->pid = pid;
  h->ppid = -1;
  h->clock_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
  h->clock_realtime_ns = clock_ns(CLOCK_REALTIME);
  h->created_monotonic_ns = h->clock_monotonic_ns;
  char host[256];
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  copy_cut(h->host, sizeof h->host, host);

  rdzv_identity& id = h->ident;
  const auto env = environ_of(pid);
  id.rank = env_int(env, "RANK");
  id.local_rank = env_int(env, "LOCAL_RANK");
  id.world_size = env_int(env, "WORLD_SIZE");
  id.group_rank = env_int(env, "GROUP_RANK");
  id.master_port = env_int(env, "MASTER_PORT");
  id.restart_count = env_int(env, "TORCHELASTIC_RESTART_COUNT");
  id.slurm_procid = env_int(env, "SLURM_PROCID");
  id.slurm_nodeid = env_int(env, "SLURM_NODEID");
  env_str(id.master_addr, sizeof id.master_addr, env, "MASTER_ADDR");
  env_str(id.run_id, sizeof id.run_id, env, "TORCHELASTIC_RUN_ID");
  env_str(id.slurm_job_id, sizeof id.slurm_job_id, env, "SLURM_JOB_ID");

  const auto fields = stat_fields(pid);
  if (fields.size() < 20) return false;
  long long v;
  if (parse_int(fields[1], &v)) h->ppid = static_cast<std::int32_t>(v);  // field 4
  long hz = sysconf(_SC_CLK_TCK);
  if (parse_int(fields[19], &v) && hz > 0) {  // field 22: start time, ticks after boot
    const std::uint64_t started_boot = static_cast<std::uint64_t>(v) * (1000000000ull / static_cast<std::uint64_t>(hz));
    const std::uint64_t boot_now = clock_ns(CLOCK_BOOTTIME);
    if (started_boot <= boot_now) {
      h->start_realtime_ns = h->clock_realtime_ns - (boot_now - started_boot);
      h->features |= RDZV_FEAT_PROC_START;
    }
  }
  char exe[sizeof h->exe];
  ssize_t n = readlink((dir + "/exe").c_str(), exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  copy_cut(h->exe, sizeof h->exe, exe);

  std::string cmd = read_file(dir + "/cmdline", RDZV_CMDLINE_MAX + 1);
  if (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  copy_cut(h->cmdline, sizeof h->cmdline, cmd);
  h->cmdline_truncated = cmd.size() >= sizeof h->cmdline;
  return true;
}

std::vector<std::uint16_t> store_ports_of(int pid, const std::vector<std::uint16_t>& extra) {
  std::vector<std::uint16_t> ports;
  const auto env = environ_of(pid);
  long long v;
  if (auto it = env.find("MASTER_PORT"); it != env.end() && parse_int(it->second, &v)) add_port(ports, v);
  if (auto it = env.find("PET_RDZV_ENDPOINT"); it != env.end()) {
    const std::size_t colon = it->second.rfind(':');
    if (colon != std::string::npos && it->second.find(']', colon) == std::string::npos &&
        parse_int(it->second.substr(colon + 1), &v))
      add_port(ports, v);
  }
  add_port(ports, 29400);
  add_port(ports, 29500);
  if (auto it = env.find("RDZVSCOPE_PORTS"); it != env.end()) {
    std::istringstream list(it->second);
    std::string item;
    while (std::getline(list, item, ','))
      if (parse_int(item, &v)) add_port(ports, v);
  }
  for (auto p : extra) add_port(ports, p);
  return ports;
}

std::string libc_path_of(int pid) {
  const std::string base = pid > 0 ? "/proc/" + std::to_string(pid) : std::string("/proc/self");
  std::ifstream maps(base + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (name.rfind("libc.so", 0) == 0 || (name.rfind("libc-", 0) == 0 && name.find(".so") != std::string::npos))
      return base + "/root" + path;
  }
  return {};
}

std::vector<int> pids_with_comm(const std::string& comm) {
  const std::string want = comm.substr(0, 15);
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  const int self = getpid();
  while (const dirent* e = readdir(d)) {
    long long pid;
    if (!parse_int(e->d_name, &pid) || pid == self) continue;
    std::string c = read_file(std::string("/proc/") + e->d_name + "/comm", 64);
    if (!c.empty() && c.back() == '\n') c.pop_back();
    if (c == want) pids.push_back(static_cast<int>(pid));
  }
  closedir(d);
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace rdzvscope::bpf
