#include "seed.h"

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "proc_info.h"

namespace rdzvscope::bpf {
namespace {

constexpr unsigned kSynSent = 2, kSynRecv = 3, kTimeWait = 6, kListen = 10;

// "0100007F:1F90": the address as the kernel prints it, 32-bit words in host byte order
// (so copying each word's bytes back gives the network-order address), then the port.
bool parse_addr(const std::string& text, bool v6, rdzv_sockaddr* out) {
  const std::size_t colon = text.find(':');
  const std::size_t hex_len = v6 ? 32 : 8;
  if (colon != hex_len) return false;
  for (std::size_t w = 0; w < hex_len / 8; ++w) {
    char* end = nullptr;
    const std::string word = text.substr(w * 8, 8);
    const auto v = static_cast<std::uint32_t>(std::strtoul(word.c_str(), &end, 16));
    if (*end) return false;
    std::memcpy(out->addr + w * 4, &v, 4);
  }
  char* end = nullptr;
  const unsigned long port = std::strtoul(text.c_str() + colon + 1, &end, 16);
  if (*end || port > 0xffff) return false;
  out->family = v6 ? AF_INET6 : AF_INET;
  out->port = static_cast<std::uint16_t>(port);
  return true;
}

bool is_port(const std::vector<std::uint16_t>& ports, std::uint16_t p) {
  return p && std::find(ports.begin(), ports.end(), p) != ports.end();
}

// inode of each descriptor of `pid` that is a socket.
std::map<std::uint64_t, std::vector<int>> socket_fds(int pid) {
  std::map<std::uint64_t, std::vector<int>> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd/";
  for (long fd : numbered_entries(dir)) {
    char link[64];
    const ssize_t n = readlink((dir + std::to_string(fd)).c_str(), link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    unsigned long long inode = 0;
    if (std::sscanf(link, "socket:[%llu]", &inode) == 1) out[inode].push_back(static_cast<int>(fd));
  }
  return out;
}

}  // namespace

std::vector<long> numbered_entries(const std::string& dir) {
  std::vector<long> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long n = std::strtol(e->d_name, &end, 10);
    if (!*end && end != e->d_name) out.push_back(n);
  }
  closedir(d);
  return out;
}

std::vector<FoundSocket> parse_proc_net_tcp(const std::string& text, bool v6) {
  std::vector<FoundSocket> out;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);  // the column names
  while (std::getline(lines, line)) {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
    std::istringstream f(line);
    std::string sl, local, rem, st, queues, timer, retr, uid, timeout;
    std::uint64_t inode = 0;
    if (!(f >> sl >> local >> rem >> st >> queues >> timer >> retr >> uid >> timeout >> inode)) continue;
    FoundSocket s;
    s.inode = inode;
    if (!parse_addr(local, v6, &s.local) || !parse_addr(rem, v6, &s.peer)) continue;
    s.tcp_state = static_cast<unsigned>(std::strtoul(st.c_str(), nullptr, 16));
    if (s.peer.port == 0) s.peer = rdzv_sockaddr{};  // a listener: no peer, as sk_addrs says
    out.push_back(s);
  }
  return out;
}

std::vector<FoundSocket> find_store_sockets(int pid, const std::vector<std::uint16_t>& ports) {
  std::vector<FoundSocket> out;
  const auto fds = socket_fds(pid);
  if (fds.empty()) return out;
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  for (const bool v6 : {false, true}) {
    for (const FoundSocket& s : parse_proc_net_tcp(read_file(net + (v6 ? "tcp6" : "tcp"), 64u << 20), v6)) {
      if (s.tcp_state == kSynSent || s.tcp_state == kSynRecv || s.tcp_state == kTimeWait) continue;
      if (!is_port(ports, s.local.port) && !is_port(ports, s.peer.port)) continue;
      const auto it = fds.find(s.inode);
      if (it == fds.end() || s.inode == 0) continue;
      for (int fd : it->second) {  // copies (dup) of one socket are store sockets each
        FoundSocket c = s;
        c.fd = fd;
        out.push_back(c);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const FoundSocket& a, const FoundSocket& b) { return a.fd < b.fd; });
  return out;
}

std::vector<BlockedCall> blocked_calls(int pid, const std::vector<FoundSocket>& found) {
  // x86_64: read, write, poll, readv, writev, sendto, recvfrom, sendmsg, recvmsg.
  constexpr long kPoll = 7;
  constexpr long kCalls[] = {0, 1, kPoll, 19, 20, 44, 45, 46, 47};
  std::vector<BlockedCall> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task/";
  for (long tid : numbered_entries(dir)) {
    // "NR ARG1 ... SP PC" while in a call; "running" or "-1 ..." otherwise.
    std::istringstream line(read_file(dir + std::to_string(tid) + "/syscall", 512));
    long nr = -1;
    std::string arg1;
    if (!(line >> nr >> arg1) || std::find(std::begin(kCalls), std::end(kCalls), nr) == std::end(kCalls)) continue;
    const long fd = std::strtol(arg1.c_str(), nullptr, 16);
    const bool on_store = std::any_of(found.begin(), found.end(), [&](const FoundSocket& s) { return s.fd == fd; });
    if (nr == kPoll || on_store) out.push_back({static_cast<int>(tid), nr});
  }
  return out;
}

rdzv_record found_record(int pid, const FoundSocket& s, const std::vector<std::uint16_t>& ports,
                         std::uint64_t now_ns) {
  rdzv_record r{};
  if (s.tcp_state == kListen) {
    r.kind = RDZV_EV_LISTEN;
    r.op = RDZV_OP_LISTEN;
  } else if (is_port(ports, s.peer.port)) {
    r.kind = RDZV_EV_CONNECT;
    r.op = RDZV_OP_CONNECT;
  } else {
    r.kind = RDZV_EV_ACCEPT;
    r.op = RDZV_OP_ACCEPT;
    r.ret = s.fd;  // accept's result: the descriptor
  }
  r.flags = RDZV_F_STORE | RDZV_F_PREEXISTING;
  r.tid = static_cast<rdzv_u32>(pid);
  r.ts_ns = now_ns;
  r.fd = s.fd;
  r.u.net.local = s.local;
  r.u.net.peer = s.peer;
  r.u.net.timeout_ms = -1;
  r.u.net.tcp_state = s.tcp_state;
  return r;
}

}  // namespace rdzvscope::bpf
