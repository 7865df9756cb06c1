#include "seed.h"

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
      if (s.tcp_state == kSynRecv || s.tcp_state == kTimeWait) continue;
      if (!is_port(ports, s.local.port) && !is_port(ports, s.peer.port)) continue;
      // A connect in progress: only towards a store port (a client's), never reached yet.
      if (s.tcp_state == kSynSent && !is_port(ports, s.peer.port)) continue;
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

std::string read_memory(int pid, std::uint64_t addr, std::size_t len) {
  if (!addr || !len) return {};
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/mem").c_str(), "rb");
  if (!f) return {};
  std::string buf(len, '\0');
  const bool ok = fseeko(f, static_cast<off_t>(addr), SEEK_SET) == 0 && std::fread(buf.data(), 1, len, f) == len;
  std::fclose(f);
  return ok ? buf : std::string();
}

namespace {

// x86_64 syscall numbers of the waits found from outside.
constexpr long kPoll = 7, kSelect = 23, kEpollWait = 232, kPselect6 = 270, kPpoll = 271, kEpollPwait = 281,
               kEpollPwait2 = 441;

bool is_found(const std::vector<FoundSocket>& found, long fd) {
  return std::any_of(found.begin(), found.end(), [&](const FoundSocket& s) { return s.fd == fd; });
}

// The first found store socket in a ppoll's pollfd array (its first 16, as the kernel side).
int ppoll_store_fd(int pid, std::uint64_t fds, std::uint64_t nfds, const std::vector<FoundSocket>& found) {
  const std::size_t n = std::min<std::uint64_t>(nfds, 16);
  const std::string raw = read_memory(pid, fds, n * 8);  // struct pollfd: int fd, short, short
  for (std::size_t i = 0; i < raw.size() / 8; ++i) {
    std::int32_t fd;
    std::memcpy(&fd, raw.data() + i * 8, sizeof fd);
    if (is_found(found, fd)) return fd;
  }
  return -1;
}

// The first found store socket in a select's read, write or except set.
int select_store_fd(int pid, std::uint64_t nfds, const std::uint64_t sets[3], const std::vector<FoundSocket>& found) {
  const std::size_t bytes = (std::min<std::uint64_t>(nfds, 1024) + 63) / 64 * 8;
  for (int k = 0; k < 3; ++k) {
    const std::string raw = read_memory(pid, sets[k], bytes);
    for (const FoundSocket& s : found) {
      const auto fd = static_cast<std::size_t>(s.fd);
      if (fd / 8 < raw.size() && (static_cast<unsigned char>(raw[fd / 8]) >> (fd % 8)) & 1) return s.fd;
    }
  }
  return -1;
}

// The first found store socket an epoll instance watches ("tfd: N" lines of its fdinfo).
int epoll_store_fd(int pid, long epfd, const std::vector<FoundSocket>& found) {
  std::istringstream info(read_file("/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(epfd), 1 << 16));
  std::string line;
  while (std::getline(info, line)) {
    long fd = -1;
    if (std::sscanf(line.c_str(), "tfd: %ld", &fd) == 1 && is_found(found, fd)) return static_cast<int>(fd);
  }
  return -1;
}

// A timespec (ppoll, pselect6, epoll_pwait2) or timeval (select) in the process's memory, as
// milliseconds; -1 when absent or unreadable.
std::int64_t timeout_at(int pid, std::uint64_t addr, bool timeval) {
  const std::string raw = read_memory(pid, addr, 16);
  if (raw.size() != 16) return -1;
  std::int64_t sec, frac;
  std::memcpy(&sec, raw.data(), 8);
  std::memcpy(&frac, raw.data() + 8, 8);
  return sec * 1000 + frac / (timeval ? 1000 : 1000000);
}

// A thread blocked in a wait the kernel side cannot rebuild at its exit: the store socket it
// waits on and its timeout, read now; wait_fd -1 when it waits on none.
BlockedCall found_wait(int pid, int tid, long nr, const std::uint64_t a[6], const std::vector<FoundSocket>& found) {
  BlockedCall b{tid, nr};
  switch (nr) {
    case kPpoll:
      b.wait_fd = ppoll_store_fd(pid, a[0], a[1], found);
      b.timeout_ms = timeout_at(pid, a[2], false);
      break;
    case kSelect:
    case kPselect6:
      b.wait_fd = select_store_fd(pid, a[0], a + 1, found);
      b.timeout_ms = timeout_at(pid, a[4], nr == kSelect);
      b.glibc_select = nr == kPselect6 && a[5] == 0;  // as the kernel side names it
      break;
    case kEpollWait:
    case kEpollPwait:
      b.wait_fd = epoll_store_fd(pid, static_cast<long>(a[0]), found);
      b.timeout_ms = static_cast<std::int32_t>(a[3]);  // an int; -1 waits for ever
      break;
    case kEpollPwait2:
      b.wait_fd = epoll_store_fd(pid, static_cast<long>(a[0]), found);
      b.timeout_ms = timeout_at(pid, a[3], false);
      break;
    default:
      break;
  }
  return b;
}

}  // namespace

std::vector<BlockedCall> blocked_calls(int pid, const std::vector<FoundSocket>& found) {
  // x86_64: read, write, poll, readv, writev, sendto, recvfrom, sendmsg, recvmsg; the kernel
  // rebuilds these at their exit.
  constexpr long kRebuilt[] = {0, 1, kPoll, 19, 20, 44, 45, 46, 47};
  constexpr long kWaits[] = {kPpoll, kSelect, kPselect6, kEpollWait, kEpollPwait, kEpollPwait2};
  std::vector<BlockedCall> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task/";
  for (long tid : numbered_entries(dir)) {
    // "NR ARG1 ... ARG6 SP PC" (hexadecimal arguments) while in a call; "running" or "-1 ..."
    // otherwise.
    std::istringstream line(read_file(dir + std::to_string(tid) + "/syscall", 512));
    long nr = -1;
    std::string arg[6];
    if (!(line >> nr >> arg[0] >> arg[1] >> arg[2] >> arg[3] >> arg[4] >> arg[5])) continue;
    std::uint64_t a[6];
    for (int i = 0; i < 6; ++i) a[i] = std::strtoull(arg[i].c_str(), nullptr, 16);
    if (std::find(std::begin(kWaits), std::end(kWaits), nr) != std::end(kWaits)) {
      BlockedCall b = found_wait(pid, static_cast<int>(tid), nr, a, found);
      // With no timeout too (-1): it cannot time out, but it is in flight (the shim publishes it).
      if (b.wait_fd >= 0 && b.timeout_ms != 0) out.push_back(b);
      continue;
    }
    if (std::find(std::begin(kRebuilt), std::end(kRebuilt), nr) == std::end(kRebuilt)) continue;
    if (nr == kPoll || is_found(found, static_cast<long>(a[0]))) {
      BlockedCall b{static_cast<int>(tid), nr};
      // What it is in flight on (bpf/inflight.cpp): the descriptor, or a poll's store socket
      // and its timeout (an int; -1 waits for ever).
      b.call_fd = nr == kPoll ? ppoll_store_fd(pid, a[0], a[1], found) : static_cast<int>(a[0]);
      if (nr == kPoll) b.call_timeout_ms = static_cast<std::int32_t>(a[2]);
      out.push_back(b);
    }
  }
  return out;
}

rdzv_record found_wait_record(const BlockedCall& b, std::uint64_t now_ns) {
  rdzv_record r{};
  r.kind = RDZV_EV_POLL;
  switch (b.nr) {
    case kPpoll: r.op = RDZV_OP_PPOLL; break;
    case kSelect: r.op = RDZV_OP_SELECT; break;
    case kPselect6: r.op = b.glibc_select ? RDZV_OP_SELECT : RDZV_OP_PSELECT; break;
    case kEpollWait: r.op = RDZV_OP_EPOLL_WAIT; break;
    default: r.op = RDZV_OP_EPOLL_PWAIT; break;  // epoll_pwait, epoll_pwait2
  }
  r.flags = RDZV_F_PREEXISTING;
  r.tid = static_cast<rdzv_u32>(b.tid);
  r.ts_ns = now_ns;
  r.fd = b.wait_fd;
  r.u.net.timeout_ms = b.timeout_ms;
  return r;
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
    if (s.tcp_state == kSynSent) {  // still in progress: as a non-blocking connect's first answer
      r.ret = -1;
      r.err = EINPROGRESS;
    }
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
