// Name tables and formatters: every enum value has its own name, and the formatting of
// addresses and times matches what the reports promise.
#include <catch2/catch.hpp>

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <set>

#include "reader/names.h"
#include "trace_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

TEST_CASE("every kind has its snake_case name", "[names]") {
  const char* expected[] = {"proc_start", "proc_exit", "fork",    "exec",         "spawn",
                            "snapshot",   "resolve",   "connect", "connect_done", "bind",
                            "listen",     "accept",    "send",    "recv",         "poll",
                            "sockopt",    "close",     "tcp_state", "signal",      "reap"};
  REQUIRE(std::size(expected) == RDZV_EV_KIND_MAX);
  for (unsigned k = 1; k <= RDZV_EV_KIND_MAX; ++k) CHECK(kind_name(k) == expected[k - 1]);
  CHECK(kind_name(0) == "kind_0");
  CHECK(kind_name(99) == "kind_99");
}

TEST_CASE("every op has its own name, in enum order", "[names]") {
  const char* expected[] = {
      "none",        "getaddrinfo", "gethostbyname", "gethostbyname2", "gethostbyname_r",
      "gethostbyname2_r", "getnameinfo", "connect",  "bind",           "listen",
      "accept",      "accept4",     "send",          "sendto",         "sendmsg",
      "write",       "writev",      "recv",          "recvfrom",       "recvmsg",
      "read",        "poll",        "ppoll",         "select",         "pselect",
      "epoll_wait",  "epoll_pwait", "getsockopt",    "setsockopt",     "close",
      "fork",        "vfork",       "posix_spawn",   "posix_spawnp",   "exec",
      "exit",        "_exit",       "destructor",    "init",           "kernel",
      "sendmmsg",    "recvmmsg",    "kill",          "killpg",         "waitpid",
      "wait4",       "wait"};
  REQUIRE(std::size(expected) == RDZV_OP_MAX);
  for (unsigned op = 0; op < RDZV_OP_MAX; ++op) CHECK(op_name(op) == expected[op]);
  CHECK(op_name(RDZV_OP_MAX) == "op_" + std::to_string(RDZV_OP_MAX));
  // Spot checks against the enum itself, in case both lists shifted together.
  CHECK(op_name(RDZV_OP_UNDERSCORE_EXIT) == "_exit");
  CHECK(op_name(RDZV_OP_EPOLL_PWAIT) == "epoll_pwait");
  CHECK(op_name(RDZV_OP_KERNEL) == "kernel");
}

TEST_CASE("flags and features list their set bits by name", "[names]") {
  CHECK(flag_names(0).empty());
  CHECK(flag_names(RDZV_F_STORE | RDZV_F_TIMEOUT) == std::vector<std::string>{"store", "timeout"});
  CHECK(flag_names(0x1ff) ==
        std::vector<std::string>{"store", "nonblock", "timeout", "zero_read", "abandoned",
                                 "status_unknown", "truncated", "passive", "reverse"});
  CHECK(flag_names(RDZV_F_SOCK_ERROR | RDZV_F_RESET_RECEIVED | RDZV_F_RESET_SENT) ==
        std::vector<std::string>{"sock_error", "reset_received", "reset_sent"});
  CHECK(flag_names(RDZV_F_STORE | RDZV_F_PREEXISTING) == std::vector<std::string>{"store", "preexisting"});
  CHECK(flag_names(RDZV_F_STORE | RDZV_F_INJECTED) == std::vector<std::string>{"store", "injected"});
  CHECK(flag_names(RDZV_F_STORE | RDZV_F_PEER) == std::vector<std::string>{"store", "peer"});
  CHECK(flag_names(RDZV_F_REVERSE | RDZV_F_SIGNALED) == std::vector<std::string>{"reverse", "signaled"});
  // Every bit of the 16-bit field has a name now: a wider value names the rest by number.
  CHECK(flag_names(RDZV_F_REVERSE | (1u << 16)) == std::vector<std::string>{"reverse", "bit16"});
  CHECK(feature_names(0xf) ==
        std::vector<std::string>{"proc_start", "snapshots", "store_io", "lost_counter"});
  CHECK(feature_names(RDZV_FEAT_STORE_IO) == std::vector<std::string>{"store_io"});
  CHECK(source_name(RDZV_SOURCE_SHIM) == "shim");
  CHECK(source_name(RDZV_SOURCE_BPF) == "bpf");
  CHECK(source_name(9) == "source_9");
  CHECK(snapshot_reason_name(RDZV_SNAP_FIRST_STORE_CONNECT) == "first_store_connect");
  CHECK(snapshot_reason_name(RDZV_SNAP_FAILURE) == "failure");
  CHECK(snapshot_reason_name(RDZV_SNAP_EXIT) == "exit");
}

TEST_CASE("errno, EAI and h_errno codes have symbolic names", "[names]") {
  CHECK(errno_name(ECONNREFUSED) == "ECONNREFUSED");
  CHECK(errno_name(ETIMEDOUT) == "ETIMEDOUT");
  CHECK(errno_name(EPIPE) == "EPIPE");
  CHECK(errno_name(ECONNRESET) == "ECONNRESET");
  CHECK(errno_name(EAGAIN) == "EAGAIN");
  CHECK(errno_name(EINPROGRESS) == "EINPROGRESS");
  CHECK(errno_name(EADDRINUSE) == "EADDRINUSE");
  CHECK(errno_name(111) == "ECONNREFUSED");  // Linux value, as a trace from any host holds
  CHECK(errno_name(4000) == "E4000");
  CHECK(eai_name(EAI_NONAME) == "EAI_NONAME");
  CHECK(eai_name(-2) == "EAI_NONAME");
  CHECK(eai_name(EAI_AGAIN) == "EAI_AGAIN");
  CHECK(eai_name(EAI_SYSTEM) == "EAI_SYSTEM");
  CHECK(eai_name(EAI_NODATA) == "EAI_NODATA");
  CHECK(eai_name(EAI_ADDRFAMILY) == "EAI_ADDRFAMILY");
  CHECK(eai_name(-77) == "EAI_-77");
  CHECK(h_errno_name(HOST_NOT_FOUND) == "HOST_NOT_FOUND");
  CHECK(h_errno_name(TRY_AGAIN) == "TRY_AGAIN");
  CHECK(resolver_error_name(RDZV_OP_GETADDRINFO, -2) == "EAI_NONAME");
  CHECK(resolver_error_name(RDZV_OP_GETHOSTBYNAME, 1) == "HOST_NOT_FOUND");
  CHECK(resolver_error_name(RDZV_OP_GETHOSTBYNAME2_R, 2) == "TRY_AGAIN");
}

TEST_CASE("socket addresses format like the socket tools print them", "[names]") {
  CHECK(format_sockaddr(ipv4(127, 0, 0, 1, 29500)) == "127.0.0.1:29500");
  CHECK(format_sockaddr(ipv4(10, 1, 2, 3, 0)) == "10.1.2.3:0");
  CHECK(format_sockaddr(ipv6("::1", 29500)) == "[::1]:29500");
  CHECK(format_sockaddr(ipv6("::ffff:127.0.0.1", 29500)) == "[::ffff:127.0.0.1]:29500");
  CHECK(format_sockaddr(ipv6("fe80::1", 80, 2)) == "[fe80::1%2]:80");
  CHECK_FALSE(format_sockaddr(rdzv_sockaddr{}).has_value());
  rdzv_sockaddr unix_sa{};
  unix_sa.family = AF_UNIX;
  CHECK(format_sockaddr(unix_sa) == "family_1:0");
}

TEST_CASE("fixed-size strings stop at NUL or at the field's end", "[names]") {
  char full[4] = {'a', 'b', 'c', 'd'};  // no NUL at all
  CHECK(bounded_string(full) == "abcd");
  char shorter[8] = "ab";
  CHECK(bounded_string(shorter) == "ab");
  char empty[3] = {};
  CHECK(bounded_string(empty).empty());
}

TEST_CASE("realtime nanoseconds print as ISO-8601 UTC with milliseconds", "[names]") {
  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00.000Z");
  CHECK(iso8601_utc(1796080758123456789) == "2026-11-30T23:19:18.123Z");
  CHECK(iso8601_utc(1796080758999999999) == "2026-11-30T23:19:18.999Z");
  CHECK(iso8601_utc(-1) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("monotonic timestamps are put on the wall clock with the header's pair", "[names]") {
  rdzv_file_header h{};
  h.clock_realtime_ns = kClockRealtimeNs;
  h.clock_monotonic_ns = kClockMonotonicNs;
  CHECK(wall_ns(h, kClockMonotonicNs) == static_cast<std::int64_t>(kClockRealtimeNs));
  CHECK(wall_ns(h, kClockMonotonicNs + 2'000'000'000) ==
        static_cast<std::int64_t>(kClockRealtimeNs) + 2'000'000'000);
  // An event before the clock pair was read (bpf sees the process before the loader's pair).
  CHECK(wall_ns(h, kClockMonotonicNs - 1'000'000'000) ==
        static_cast<std::int64_t>(kClockRealtimeNs) - 1'000'000'000);
}
