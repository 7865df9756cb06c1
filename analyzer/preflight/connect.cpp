#include "preflight/connect.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace rdzvscope::preflight {

const char* name_of(Outcome o) {
  switch (o) {
    case Outcome::Connected: return "connected";
    case Outcome::Refused: return "refused";
    case Outcome::Timeout: return "timeout";
    case Outcome::Unreachable: return "unreachable";
    case Outcome::Reset: return "reset";
    case Outcome::Other: return "other";
  }
  return "other";
}

Outcome outcome_of_errno(int err) {
  switch (err) {
    case 0: return Outcome::Connected;
    case ECONNREFUSED: return Outcome::Refused;
    case ETIMEDOUT: return Outcome::Timeout;
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN: return Outcome::Unreachable;
    case ECONNRESET: return Outcome::Reset;
    default: return Outcome::Other;
  }
}

const Attempt* ConnectResult::last_failure() const {
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    if (it->outcome != Outcome::Connected) return &*it;
  }
  return nullptr;
}

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Waits for the non-blocking connect's outcome; errno-style result, ETIMEDOUT when the poll
// ran out (the SYN, or its answer, got lost).
int wait_connected(int fd, int timeout_ms) {
  pollfd p{fd, POLLOUT, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n == 0) return ETIMEDOUT;
  if (n < 0) return errno;
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace

Attempt connect_once(const SockAddr& to, int timeout_ms, int& fd_out) {
  fd_out = -1;
  Attempt a;
  a.address = address_port_text(to);
  const auto t0 = Clock::now();
  const int fd = ::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    a.err = errno;
    a.outcome = Outcome::Other;
    return a;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  int err = ::connect(fd, to.get(), to.len) == 0 ? 0 : errno;
  if (err == EINPROGRESS) err = wait_connected(fd, timeout_ms);
  a.ms = ms_between(t0, Clock::now());
  a.err = err;
  a.outcome = outcome_of_errno(err);
  if (err != 0) {
    ::close(fd);
    return a;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // back to blocking, as c10d
  fd_out = fd;
  return a;
}

ConnectResult connect_like_c10d(const std::vector<SockAddr>& addresses, Clock::time_point deadline,
                                bool retry) {
  ConnectResult r;
  const auto t0 = Clock::now();
  std::mt19937 rng(std::random_device{}());
  double backoff_ms = 500;
  while (true) {
    for (const SockAddr& to : addresses) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                              Clock::now())
                            .count();
      const int wait_ms = static_cast<int>(std::clamp<long long>(left, 1, kAttemptCapMs));
      int fd = -1;
      Attempt a = connect_once(to, wait_ms, fd);
      r.attempts.push_back(a);
      r.counts[a.outcome]++;
      if (fd >= 0) {
        r.fd = fd;
        r.connected_to = a.address;
        r.ms = ms_between(t0, Clock::now());
        return r;
      }
      if (Clock::now() >= deadline) break;
    }
    if (!retry || Clock::now() >= deadline) break;
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    const auto pause = std::chrono::duration<double, std::milli>(backoff_ms * jitter(rng));
    const auto left = deadline - Clock::now();
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::duration_cast<Clock::duration>(pause), left));
    backoff_ms = std::min(backoff_ms * 1.5, 5000.0);
    if (Clock::now() >= deadline) break;
  }
  r.ms = ms_between(t0, Clock::now());
  return r;
}

namespace {

std::string counts_text(const ConnectResult& r) {
  std::string out;
  for (const auto& [outcome, n] : r.counts) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", n, name_of(outcome));
  }
  return out;
}

nlohmann::json result_json(const ConnectResult& r) {
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [outcome, n] : r.counts) counts[name_of(outcome)] = n;
  const Attempt* last = r.last_failure();
  return {{"attempts", r.attempts.size()},
          {"outcomes", counts},
          {"ms", r.ms},
          {"connected_to", r.fd >= 0 ? nlohmann::json(r.connected_to) : nlohmann::json(nullptr)},
          {"last_failure", last ? nlohmann::json(name_of(last->outcome)) : nlohmann::json(nullptr)},
          {"last_errno", last ? nlohmann::json(last->err) : nlohmann::json(nullptr)}};
}

std::string fix_for(Outcome o, const std::string& endpoint, bool expect_listener) {
  switch (o) {
    case Outcome::Refused:
      return expect_listener ? fmt::format(
                                   "nothing listened on {} in time: start the store host's "
                                   "preflight (same --world-size) "
                                   "at most --timeout before this one, and check that the endpoint "
                                   "names the store host",
                                   endpoint)
                             : "";
    case Outcome::Timeout:
      return fmt::format(
          "the SYNs to {} get no answer: a firewall drops them (iptables -L -n on both nodes, the "
          "cloud's security group) or the host is down; c10d waits its whole timeout on this",
          endpoint);
    case Outcome::Unreachable:
      return "no route to the store host from this node: check the interface and routes (ip route "
             "get ADDR), and "
             "that the endpoint is an address of the right network";
    case Outcome::Reset:
      return "the store host reset the handshake: its listen backlog may be full "
             "(net.core.somaxconn) or a "
             "middlebox resets the connection";
    default: return "see the errno; the job's store connect fails the same way";
  }
}

}  // namespace

Check connect_check(const std::string& endpoint, const ConnectResult& r, bool expect_listener) {
  nlohmann::json data = result_json(r);
  if (r.fd >= 0) {
    const std::size_t failed = r.attempts.size() - 1;
    return ok_check("connect",
                    fmt::format("connected to {} in {:.1f} ms{}", r.connected_to,
                                r.attempts.back().ms,
                                failed
                                    ? fmt::format(" (after {} failed attempt(s) over {:.1f} s: {})",
                                                  failed, r.ms / 1000, counts_text(r))
                                    : ""),
                    std::move(data));
  }
  const Attempt* last = r.last_failure();
  if (!last) return fail_check("connect", "no address to connect to", "", std::move(data));
  double longest_wait_ms = 0;  // the last attempt may have had only what was left
  for (const Attempt& a : r.attempts) {
    if (a.outcome == Outcome::Timeout) longest_wait_ms = std::max(longest_wait_ms, a.ms);
  }
  const std::string how = last->outcome == Outcome::Timeout && last->err == ETIMEDOUT
                              ? fmt::format("no answer to the SYN within {:.1f} s",
                                            longest_wait_ms / 1000)
                              : errno_text(last->err);
  const std::string seen = fmt::format("{}: {} ({} attempt(s) over {:.1f} s: {})", endpoint, how,
                                       r.attempts.size(), r.ms / 1000, counts_text(r));
  // Before the job starts nothing need listen: an RST proves the path to the host works.
  if (!expect_listener && r.counts.size() == 1 && last->outcome == Outcome::Refused) {
    return ok_check(
        "connect",
        fmt::format("{} reachable: refused, as expected while nothing listens yet ({:.1f} ms)",
                    endpoint, last->ms),
        std::move(data));
  }
  return fail_check("connect", seen, fix_for(last->outcome, endpoint, expect_listener),
                    std::move(data));
}

}  // namespace rdzvscope::preflight
