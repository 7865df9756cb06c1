#include "preflight/addresses.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

namespace rdzvscope::preflight {

SockAddr from_sockaddr(const sockaddr* sa, socklen_t len) {
  SockAddr a;
  a.len = len > sizeof(a.storage) ? static_cast<socklen_t>(sizeof(a.storage)) : len;
  std::memcpy(&a.storage, sa, a.len);
  return a;
}

namespace {

const sockaddr_in* v4(const SockAddr& a) {
  return a.family() == AF_INET ? reinterpret_cast<const sockaddr_in*>(&a.storage) : nullptr;
}
const sockaddr_in6* v6(const SockAddr& a) {
  return a.family() == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&a.storage) : nullptr;
}

std::string ntop(int family, const void* addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  return ::inet_ntop(family, addr, buf, sizeof buf) ? buf : "?";
}

// The IPv4 address of an IPv4 or v4-mapped address, in network order.
bool ipv4_of(const SockAddr& a, in_addr& out) {
  if (const auto* s = v4(a)) {
    out = s->sin_addr;
    return true;
  }
  if (const auto* s = v6(a); s && IN6_IS_ADDR_V4MAPPED(&s->sin6_addr)) {
    std::memcpy(&out, &s->sin6_addr.s6_addr[12], 4);
    return true;
  }
  return false;
}

}  // namespace

std::string address_text(const SockAddr& a) {
  if (const auto* s = v4(a)) return ntop(AF_INET, &s->sin_addr);
  if (const auto* s = v6(a)) return ntop(AF_INET6, &s->sin6_addr);
  return "?";
}

std::string address_port_text(const SockAddr& a) {
  if (const auto* s = v4(a)) return address_text(a) + ":" + std::to_string(ntohs(s->sin_port));
  if (const auto* s = v6(a))
    return "[" + address_text(a) + "]:" + std::to_string(ntohs(s->sin6_port));
  return "?";
}

std::string canonical_address(const SockAddr& a) {
  in_addr ip{};
  if (ipv4_of(a, ip)) return ntop(AF_INET, &ip);
  return address_text(a);
}

bool is_loopback(const SockAddr& a) {
  in_addr ip{};
  if (ipv4_of(a, ip)) return (ntohl(ip.s_addr) >> 24) == 127;
  const auto* s = v6(a);
  return s && IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
}

bool is_v4_or_mapped(const SockAddr& a) {
  in_addr ip{};
  return ipv4_of(a, ip);
}

std::vector<std::string> local_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    const socklen_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    out.push_back(canonical_address(from_sockaddr(i->ifa_addr, len)));
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace rdzvscope::preflight
