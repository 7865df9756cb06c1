#include "proc_info.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "rdzvscope/recorder_core.h"

namespace rdzvscope::bpf {

std::string read_file(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string data(limit, '\0');
  in.read(data.data(), static_cast<std::streamsize>(limit));
  data.resize(static_cast<std::size_t>(in.gcount()));
  return data;
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

// /proc/PID/environ, as it is: NUL-ended NAME=value entries (rdzv_env_block_get reads it).
std::string environ_of(int pid) { return read_file("/proc/" + std::to_string(pid) + "/environ"); }

}  // namespace

bool process_exists(int pid) { return pid > 0 && access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0; }

bool fill_header_from_proc(int pid, rdzv_file_header* h) {
  const bool alive = rdzv_process_fill(h, pid) == 0;
  const std::string env = environ_of(pid);
  rdzv_env_block block{env.data(), env.size()};
  rdzv_identity_fill(&h->ident, rdzv_env_block_get, &block);
  return alive;
}

std::vector<std::uint16_t> store_ports_of(int pid, const std::vector<std::uint16_t>& extra) {
  const std::string env = environ_of(pid);
  rdzv_env_block block{env.data(), env.size()};
  rdzv_port_set set{};
  rdzv_ports_from_env(&set, rdzv_env_block_get, &block);
  std::vector<std::uint16_t> ports;
  for (const std::uint16_t p : set.port)
    if (p) ports.push_back(p);
  for (const std::uint16_t p : extra)
    if (p && std::find(ports.begin(), ports.end(), p) == ports.end()) ports.push_back(p);
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
    rdzv_s64 pid;
    if (!rdzv_parse_i64(e->d_name, &pid) || pid == self) continue;
    std::string c = read_file(std::string("/proc/") + e->d_name + "/comm", 64);
    if (!c.empty() && c.back() == '\n') c.pop_back();
    if (c == want) pids.push_back(static_cast<int>(pid));
  }
  closedir(d);
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace rdzvscope::bpf
