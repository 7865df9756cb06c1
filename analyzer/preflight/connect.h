// Check 4, on the other nodes: does a TCP connect to the endpoint get through? The same
// non-blocking connect + poll + SO_ERROR as c10d, to every address of the lookup in c10d's
// order. The outcome tells the network's answer apart:
//   refused      an RST came back: the host is reachable, nothing listens on the port (yet)
//   timeout      no answer to the SYN: a firewall drops it, or the host is down
//   unreachable  EHOSTUNREACH / ENETUNREACH: no route, or no ARP answer on the link
//   reset        ECONNRESET during the handshake (a full backlog with tcp_abort_on_overflow)
// With retry (--world-size: the store host's preflight may start later), rounds repeat with
// c10d's 2.x backoff (500 ms, x1.5, +-50 % jitter; capped here at 5 s) until the deadline.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "preflight/addresses.h"
#include "preflight/check.h"

namespace rdzvscope::preflight {

using Clock = std::chrono::steady_clock;

enum class Outcome { Connected, Refused, Timeout, Unreachable, Reset, Other };
const char* name_of(Outcome o);  // "connected", "refused", "timeout", ...

// Which outcome an errno of connect() or SO_ERROR means.
Outcome outcome_of_errno(int err);

struct Attempt {
  Outcome outcome = Outcome::Other;
  int err = 0;
  double ms = 0;
  std::string address;  // "[::ffff:10.0.0.1]:29500"
};

struct ConnectResult {
  int fd = -1;                    // connected (blocking) socket, the caller owns it
  std::string connected_to;       // address of fd
  std::vector<Attempt> attempts;  // in order
  double ms = 0;                  // from the first attempt to the end
  std::map<Outcome, int> counts;  // attempts by outcome
  const Attempt* last_failure() const;
};

// Each attempt waits at most this long for the handshake, so that a retry can follow.
inline constexpr int kAttemptCapMs = 5000;

Attempt connect_once(const SockAddr& to, int timeout_ms, int& fd_out);
ConnectResult connect_like_c10d(const std::vector<SockAddr>& addresses, Clock::time_point deadline,
                                bool retry);

// The wording. expect_listener: a store (the store host's preflight) should be listening;
// without it a refusal is the expected answer before the job starts.
Check connect_check(const std::string& endpoint, const ConnectResult& r, bool expect_listener);

}  // namespace rdzvscope::preflight
