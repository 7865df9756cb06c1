// The forms in which the analyzer compares socket addresses of the trace format.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "rdzvscope/trace_format.h"

namespace rdzvscope {

// The address as 16 bytes, an IPv4 address in its IPv6-mapped form (::ffff:a.b.c.d), so that
// one host's address compares equal however a socket spelled it; all zero for none.
std::array<std::uint8_t, 16> ipv6_form(const rdzv_sockaddr& a);
// 127.0.0.0/8, ::1, ::ffff:127.x.
bool is_loopback(const rdzv_sockaddr& a);
// A MASTER_ADDR (or a log line's host) that names loopback: "localhost", "127.0.0.1", "::1".
bool is_loopback_name(const std::string& addr);
// 0.0.0.0, ::, ::ffff:0.0.0.0: a wildcard bind, no host.
bool is_unspecified(const rdzv_sockaddr& a);
// One end of a TCP connection, its address in ipv6_form and its port, so that it compares
// equal however a socket spelled it; and a connection as one side sees it: (its own end, the
// other end). The other side sees the same connection with the two swapped.
using ConnectionEnd = std::pair<std::array<std::uint8_t, 16>, std::uint16_t>;
using Connection = std::pair<ConnectionEnd, ConnectionEnd>;
ConnectionEnd connection_end(const rdzv_sockaddr& a);

// The address for people, without its port: "10.0.0.1" also for its IPv4-mapped form
// (::ffff:10.0.0.1, as a dual-stack socket or an AI_V4MAPPED lookup gives it), "fe80::1";
// "" for none.
std::string address_words(const rdzv_sockaddr& a);
// The same with its port: "10.0.0.1:29500", "[fe80::1]:29500".
std::string endpoint_words(const rdzv_sockaddr& a);

}  // namespace rdzvscope
