// Socket addresses as the checks handle them: held by value, printed as c10d prints them,
// compared with v4-mapped IPv6 addresses (::ffff:a.b.c.d, what c10d's AF_INET6 lookup
// returns for an IPv4 host) taken as the IPv4 address they carry.
#pragma once

#include <sys/socket.h>

#include <string>
#include <vector>

namespace rdzvscope::preflight {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

SockAddr from_sockaddr(const sockaddr* sa, socklen_t len);

// "10.0.0.1", "::ffff:10.0.0.1", "fe80::1"; "?" for a family that is not IP.
std::string address_text(const SockAddr& a);
// "10.0.0.1:29500", "[::ffff:10.0.0.1]:29500".
std::string address_port_text(const SockAddr& a);

// The IPv4 address an IPv4 or v4-mapped IPv6 address carries, else the IPv6 text: the form
// in which two addresses are compared.
std::string canonical_address(const SockAddr& a);
bool is_loopback(const SockAddr& a);  // 127.0.0.0/8, ::1, ::ffff:127.x
bool is_v4_or_mapped(const SockAddr& a);

// This node's own addresses (getifaddrs, every interface that is up), canonical.
std::vector<std::string> local_addresses();

}  // namespace rdzvscope::preflight
