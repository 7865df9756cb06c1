// The address forms the analyzer compares (address.h): one host's address is equal however a
// socket spelled it, and the loopback and wildcard tests agree across the three spellings.
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include "model/address.h"
#include "trace_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

TEST_CASE("an IPv4 address and its IPv4-mapped IPv6 spelling have one form") {
  CHECK(ipv6_form(ipv4(10, 0, 0, 2, 1)) == ipv6_form(ipv6("::ffff:10.0.0.2", 1)));
  CHECK(ipv6_form(ipv4(10, 0, 0, 2, 1)) != ipv6_form(ipv4(10, 0, 0, 3, 1)));
  CHECK(ipv6_form(rdzv_sockaddr{}) == std::array<std::uint8_t, 16>{});
}

TEST_CASE("loopback and wildcard addresses in every spelling") {
  CHECK(is_loopback(ipv4(127, 0, 0, 1, 1)));
  CHECK(is_loopback(ipv4(127, 3, 2, 1, 1)));
  CHECK(is_loopback(ipv6("::1", 1)));
  CHECK(is_loopback(ipv6("::ffff:127.0.0.1", 1)));
  CHECK_FALSE(is_loopback(ipv4(10, 0, 0, 2, 1)));
  CHECK_FALSE(is_loopback(rdzv_sockaddr{}));

  CHECK(is_unspecified(ipv4(0, 0, 0, 0, 1)));
  CHECK(is_unspecified(ipv6("::", 1)));
  CHECK(is_unspecified(ipv6("::ffff:0.0.0.0", 1)));
  CHECK_FALSE(is_unspecified(ipv4(10, 0, 0, 2, 1)));
  CHECK_FALSE(is_unspecified(ipv6("::1", 1)));
  CHECK_FALSE(is_unspecified(rdzv_sockaddr{}));  // no family: no address at all, not a wildcard
}
