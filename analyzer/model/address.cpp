#include "address.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>

namespace rdzvscope {

namespace {

bool is_ipv4_mapped(const std::array<std::uint8_t, 16>& v6) {
  return v6[10] == 0xff && v6[11] == 0xff && std::all_of(v6.begin(), v6.begin() + 10, [](std::uint8_t b) { return b == 0; });
}

}  // namespace

std::array<std::uint8_t, 16> ipv6_form(const rdzv_sockaddr& a) {
  std::array<std::uint8_t, 16> out{};
  if (a.family == AF_INET) {
    out[10] = out[11] = 0xff;
    std::copy(a.addr, a.addr + 4, out.begin() + 12);
  } else if (a.family == AF_INET6) {
    std::copy(a.addr, a.addr + 16, out.begin());
  }
  return out;
}

ConnectionEnd connection_end(const rdzv_sockaddr& a) { return {ipv6_form(a), a.port}; }

bool is_loopback_name(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

bool is_loopback(const rdzv_sockaddr& a) {
  static constexpr std::array<std::uint8_t, 16> kV6Loopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (a.family != AF_INET && a.family != AF_INET6) return false;
  const auto v6 = ipv6_form(a);
  return is_ipv4_mapped(v6) ? v6[12] == 127 : v6 == kV6Loopback;
}

bool is_unspecified(const rdzv_sockaddr& a) {
  if (a.family != AF_INET && a.family != AF_INET6) return false;
  const auto v6 = ipv6_form(a);
  const std::size_t from = is_ipv4_mapped(v6) ? 12 : 0;
  return std::all_of(v6.begin() + from, v6.end(), [](std::uint8_t b) { return b == 0; });
}

std::string address_words(const rdzv_sockaddr& a) {
  if (a.family != AF_INET && a.family != AF_INET6) return "";
  const auto v6 = ipv6_form(a);
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_ipv4_mapped(v6))
    inet_ntop(AF_INET, v6.data() + 12, buf, sizeof buf);
  else
    inet_ntop(AF_INET6, v6.data(), buf, sizeof buf);
  return buf;
}

std::string endpoint_words(const rdzv_sockaddr& a) {
  const std::string host = address_words(a);
  if (host.empty()) return "";
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(a.port);
}

}  // namespace rdzvscope
