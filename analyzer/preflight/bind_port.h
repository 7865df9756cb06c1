// Check 2, on the store host: can the store's port be bound the way c10d binds it? The
// legacy TCPStore server (socket.cpp SocketListenOp) calls getaddrinfo(NULL, port,
// {AI_PASSIVE | AI_NUMERICSERV}) with AF_INET6 first, then AF_INET, and sets SO_REUSEADDR
// and IPV6_V6ONLY=0 (one dual-stack socket on [::]); libuv's backend binds "::" then
// "0.0.0.0" the same way. When the bind fails, the port's holder is found in /proc: the
// socket's inode in /proc/net/tcp{,6}, then the process whose fd points at that inode.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.h"

namespace rdzvscope::preflight {

struct BindResult {
  int fd = -1;        // the listening socket on success (the caller owns it), else -1
  int err = 0;        // errno of the failed call
  std::string call;   // "socket", "bind", "listen": the one that failed
  std::string bound;  // "[::]:29500" on success
};

// Binds and listens as c10d does (backlog -1: the kernel's somaxconn, as 2.x).
BindResult bind_like_c10d(std::uint16_t port);

// One socket of /proc/net/tcp or tcp6.
struct ProcNetSocket {
  std::uint16_t local_port = 0;
  int state = 0;  // 0x0A: LISTEN
  unsigned long inode = 0;
};

inline constexpr int kTcpListen = 0x0A;

// One data line of /proc/net/tcp{,6} ("  0: 0100007F:7530 00000000:0000 0A ... INODE ...");
// nullopt for the header line or anything that does not parse.
std::optional<ProcNetSocket> parse_proc_net_tcp_line(const std::string& line);

struct PortHolder {
  unsigned long inode = 0;
  pid_t pid = 0;        // 0 when no process of ours could be seen holding it
  std::string command;  // its command line, arguments joined by spaces
};

// The listening sockets on `port` in this network namespace, and who holds each.
std::vector<PortHolder> port_holders(std::uint16_t port);

// The bind check's wording: ok (bound), or fail with the holders.
Check bind_check(std::uint16_t port, const BindResult& r, const std::vector<PortHolder>& holders);

}  // namespace rdzvscope::preflight
