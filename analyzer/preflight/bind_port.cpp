#include "preflight/bind_port.h"

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "preflight/addresses.h"

namespace rdzvscope::preflight {

namespace {

// One attempt on one address of the passive lookup; fills r on failure.
int try_bind(const addrinfo* a, BindResult& r) {
  const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
  if (fd < 0) {
    r = BindResult{-1, errno, "socket", ""};
    return -1;
  }
  const int on = 1, off = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (a->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
    r = BindResult{-1, errno, "bind", ""};
    ::close(fd);
    return -1;
  }
  if (::listen(fd, -1) != 0) {
    r = BindResult{-1, errno, "listen", ""};
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string command_of(pid_t pid) {
  std::string cmd = read_file(fmt::format("/proc/{}/cmdline", pid));
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd) {
    if (c == '\0') c = ' ';
  }
  if (cmd.size() > 200) cmd = cmd.substr(0, 197) + "...";
  return cmd.empty() ? read_file(fmt::format("/proc/{}/comm", pid)) : cmd;
}

// The pid whose descriptors include socket:[inode]; 0 when none is visible.
pid_t pid_of_inode(unsigned long inode) {
  const std::string want = fmt::format("socket:[{}]", inode);
  std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
  if (!proc) return 0;
  while (const dirent* p = ::readdir(proc.get())) {
    char* end = nullptr;
    const long pid = std::strtol(p->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string fd_dir = fmt::format("/proc/{}/fd", pid);
    std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir(fd_dir.c_str()), ::closedir);
    if (!fds) continue;
    while (const dirent* f = ::readdir(fds.get())) {
      char target[64] = {};
      const std::string link = fd_dir + "/" + f->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n > 0 && want == std::string(target, static_cast<size_t>(n)))
        return static_cast<pid_t>(pid);
    }
  }
  return 0;
}

}  // namespace

BindResult bind_like_c10d(std::uint16_t port) {
  BindResult r{-1, EAFNOSUPPORT, "getaddrinfo", ""};
  const std::string p = std::to_string(port);
  for (int family : {AF_INET6, AF_INET}) {
    addrinfo hints{};
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(nullptr, p.c_str(), &hints, &res) != 0) continue;
    for (const addrinfo* a = res; a; a = a->ai_next) {
      const int fd = try_bind(a, r);
      if (fd >= 0) {
        const std::string bound = address_port_text(from_sockaddr(a->ai_addr, a->ai_addrlen));
        ::freeaddrinfo(res);
        return BindResult{fd, 0, "", bound};
      }
      // c10d stops at the first "address in use": another family would not help either.
      if (r.err == EADDRINUSE) {
        ::freeaddrinfo(res);
        return r;
      }
    }
    ::freeaddrinfo(res);
  }
  return r;
}

std::optional<ProcNetSocket> parse_proc_net_tcp_line(const std::string& line) {
  std::istringstream in(line);
  std::string slot, local, remote, state, queues, timer, retrans, uid, timeout, inode;
  if (!(in >> slot >> local >> remote >> state >> queues >> timer >> retrans >> uid >> timeout >>
        inode))
    return std::nullopt;
  if (slot.empty() || slot.back() != ':') return std::nullopt;
  const auto colon = local.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  try {
    size_t used = 0;
    const unsigned long port = std::stoul(local.substr(colon + 1), &used, 16);
    if (used != local.size() - colon - 1 || port > 65535) return std::nullopt;
    const unsigned long st = std::stoul(state, &used, 16);
    if (used != state.size()) return std::nullopt;
    const unsigned long ino = std::stoul(inode, &used, 10);
    if (used != inode.size()) return std::nullopt;
    return ProcNetSocket{static_cast<std::uint16_t>(port), static_cast<int>(st), ino};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<PortHolder> port_holders(std::uint16_t port) {
  std::vector<PortHolder> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(read_file(table));
    std::string line;
    while (std::getline(lines, line)) {
      const auto s = parse_proc_net_tcp_line(line);
      if (!s || s->local_port != port || s->state != kTcpListen || s->inode == 0) continue;
      const pid_t pid = pid_of_inode(s->inode);
      out.push_back(PortHolder{s->inode, pid, pid ? command_of(pid) : ""});
    }
  }
  return out;
}

Check bind_check(std::uint16_t port, const BindResult& r, const std::vector<PortHolder>& holders) {
  if (r.fd >= 0 || r.err == 0) {
    return ok_check(
        "bind",
        fmt::format("port {} can be bound as c10d binds it ({}, SO_REUSEADDR, dual-stack)", port,
                    r.bound),
        {{"port", port}, {"bound", r.bound}});
  }
  nlohmann::json data = {{"port", port},
                         {"call", r.call},
                         {"errno", r.err},
                         {"holders", nlohmann::json::array()}};
  std::string who;
  for (const PortHolder& h : holders) {
    data["holders"].push_back({{"pid", h.pid ? nlohmann::json(h.pid) : nlohmann::json(nullptr)},
                               {"command", h.command},
                               {"inode", h.inode}});
    if (!who.empty()) who += "; ";
    who += h.pid ? fmt::format("pid {} ({})", h.pid, h.command)
                 : fmt::format("socket inode {}, no visible process (another user's? run as root)",
                               h.inode);
  }
  const std::string what = fmt::format("{}() on port {} failed: {}", r.call, port,
                                       errno_text(r.err));
  if (r.err == EADDRINUSE) {
    return fail_check("bind", what + (who.empty() ? "" : "; held by " + who),
                      who.empty()
                          ? fmt::format("find the holder with: ss -ltnp 'sport = :{}'", port)
                          : fmt::format(
                                "stop the holder (an earlier job's store?) or choose another port; "
                                "the job's store fails with EADDRINUSE on it"),
                      std::move(data));
  }
  if (r.err == EACCES) {
    return fail_check("bind", what,
                      "ports below 1024 need root or CAP_NET_BIND_SERVICE: use a port above 1024",
                      std::move(data));
  }
  return fail_check("bind", what, "the job's store cannot listen on this node either",
                    std::move(data));
}

}  // namespace rdzvscope::preflight
