#include "preflight/meeting.h"

#include <cctype>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "preflight/addresses.h"

namespace rdzvscope::preflight {

namespace {

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
                        .count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

bool send_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// One connection of the store host: its bytes so far and where it is in the exchange.
struct Conn {
  int fd = -1;
  std::string address;
  std::string buffer;
  std::optional<Peer> peer;  // set at hello
  bool done = false;
};

void finish(Conn& c, Meeting& m) {
  if (c.peer) m.peers.push_back(std::move(*c.peer));
  c.peer.reset();
  ::close(c.fd);
  c.done = true;
}

void drop(Conn& c, Meeting& m, const std::string& why) {
  m.problems.push_back(fmt::format("{}: {}", c.address, why));
  finish(c, m);
}

// What the store host is: its name and its job key, for the answers.
struct Self {
  const std::string& host;
  const std::string& job;
};

// A hello of another job: told so (the node reports it too), recorded, not counted.
void turn_away(Conn& c, Meeting& m, const Self& self, const Hello& hello) {
  send_all(c.fd, refused_line(Refused{self.host, self.job}));
  m.other_jobs.push_back(OtherJob{hello.host, c.address, hello.job});
  finish(c, m);
}

// One complete line from a node.
void on_line(Conn& c, Meeting& m, const std::string& line, const Self& self,
             std::int64_t received_ns) {
  const std::string& self_host = self.host;
  if (!c.peer) {
    auto hello = parse_hello(line);
    if (!hello) return drop(c, m, "not a preflight hello: " + hello.error().message());
    if (!same_job(self.job, hello.value().job)) return turn_away(c, m, self, hello.value());
    Peer p{hello.value().host, c.address, hello.value().world_size, std::move(hello.value().checks),
           std::nullopt, hello.value().node_rank};
    ClockSample s;
    s.t1_ns = hello.value().t1_ns;
    s.t2_ns = received_ns;
    s.t3_ns = wall_ns();
    if (!send_all(c.fd, welcome_line(Welcome{self_host, s.t2_ns, s.t3_ns})))
      return drop(c, m, fmt::format("{} said hello, the welcome could not be sent", p.host));
    p.clock = s;  // t4 still to come
    c.peer = std::move(p);
    return;
  }
  auto clock = parse_clock(line);
  if (!clock) {
    c.peer->clock.reset();
    return drop(c, m,
                fmt::format("{}: not a clock line: {}", c.peer->host, clock.error().message()));
  }
  c.peer->clock->t4_ns = clock.value().t4_ns;
  finish(c, m);
}

void on_readable(Conn& c, Meeting& m, const Self& self) {
  char buf[4096];
  const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
  const std::int64_t now = wall_ns();
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    // Closed after its hello: counted, without a clock sample.
    if (c.peer) {
      c.peer->clock.reset();
      return finish(c, m);
    }
    return drop(c, m,
                n == 0 ? "closed before saying hello" : "connection failed: " + errno_text(errno));
  }
  c.buffer.append(buf, static_cast<std::size_t>(n));
  std::size_t nl;
  while (!c.done && (nl = c.buffer.find('\n')) != std::string::npos) {
    const std::string line = c.buffer.substr(0, nl);
    c.buffer.erase(0, nl + 1);
    on_line(c, m, line, self, now);
  }
  if (!c.done && c.buffer.size() > kMaxLine)
    drop(c, m, "a line longer than 64 KiB: not a preflight node");
}

std::size_t distinct_hosts(const Meeting& m) {
  std::set<std::string> hosts;
  for (const Peer& p : m.peers) hosts.insert(p.host);
  return hosts.size();
}

}  // namespace

Meeting wait_for_peers(int listen_fd, unsigned expected_peers, const std::string& self_host,
                       const std::string& job, Clock::time_point deadline) {
  const Self self{self_host, job};
  Meeting m;
  const auto t0 = Clock::now();
  std::vector<Conn> conns;
  while (distinct_hosts(m) < expected_peers && Clock::now() < deadline) {
    std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), std::min(ms_left(deadline), 1000));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents) on_readable(conns[i - 1], m, self);
    }
    if (fds[0].revents & POLLIN) {
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC);
      if (fd >= 0) {
        conns.push_back(
            Conn{fd,
                 canonical_address(from_sockaddr(reinterpret_cast<sockaddr*>(&from), len)),
                 "",
                 {},
                 false});
      }
    }
    std::erase_if(conns, [](const Conn& c) { return c.done; });
  }
  // Connections that said hello but whose clock line has not come yet still count.
  for (Conn& c : conns) {
    if (c.peer) c.peer->clock.reset();
    if (c.peer) {
      finish(c, m);
    } else {
      ::close(c.fd);
    }
  }
  m.waited_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return m;
}

namespace {

// One line from a blocking socket, within the deadline; "" and why on failure.
bool read_line(int fd, Clock::time_point deadline, std::string& line, std::string& why) {
  std::string buf;
  while (buf.find('\n') == std::string::npos) {
    if (buf.size() > kMaxLine) {
      why = "the answer is not a preflight line (more than 64 KiB without a newline)";
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n == 0) {
      why = "no answer to the hello before the timeout";
      return false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      why = "poll: " + errno_text(errno);
      return false;
    }
    char chunk[4096];
    const ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got == 0) {
      why = "the listener closed the connection without answering";
      return false;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      why = "recv: " + errno_text(errno);
      return false;
    }
    buf.append(chunk, static_cast<std::size_t>(got));
  }
  line = buf.substr(0, buf.find('\n'));
  return true;
}

}  // namespace

Exchange exchange_hello(int fd, const Hello& hello, Clock::time_point deadline) {
  Exchange e;
  Hello h = hello;
  h.t1_ns = wall_ns();
  if (!send_all(fd, hello_line(h))) {
    e.problem = "sending the hello: " + errno_text(errno);
    return e;
  }
  e.job = hello.job;
  std::string line;
  if (!read_line(fd, deadline, line, e.problem)) return e;
  const std::int64_t t4 = wall_ns();
  if (auto refused = parse_refused(line)) {
    e.refused = refused.value();
    e.problem = fmt::format("the store host's preflight ({}) is job {}, this node is job {}",
                            e.refused->host, job_words(e.refused->job), job_words(e.job));
    return e;
  }
  auto w = parse_welcome(line);
  if (!w) {
    e.problem = "what listens there answered, but not as a preflight: " + w.error().message();
    return e;
  }
  send_all(fd, clock_line(ClockLine{t4}));  // the store host's clock figure; ours is complete
  e.ok = true;
  e.store_host = w.value().host;
  e.clock = ClockSample{h.t1_ns, w.value().t2_ns, w.value().t3_ns, t4};
  return e;
}

namespace {

// Both sides of a refused hello say the same fix: their stores would collide once started
// (EADDRINUSE, or one job's ranks in the other's store).
constexpr const char* kTwoJobsFix =
    "give each job its own endpoint (another port in --rdzv-endpoint / MASTER_PORT): their stores "
    "would collide (EADDRINUSE, or one job's ranks in the other's store); when it is one job, give "
    "every node the same --job-id (or the same PET_RDZV_ID / SLURM_JOB_ID)";

}  // namespace

std::string job_words(const std::string& job) {
  return job.empty() ? std::string("(none)") : "'" + job + "'";
}

Check exchange_check(const std::string& endpoint, const Exchange& e) {
  if (e.refused) {
    return fail_check(
        "meeting",
        fmt::format("two jobs share the rendezvous endpoint {}: {}", endpoint, e.problem),
        kTwoJobsFix, {{"problem", e.problem}, {"store_job", e.refused->job}, {"job", e.job}});
  }
  if (e.ok) {
    return ok_check("meeting",
                    fmt::format("said hello to the store host's preflight ({}) on {}", e.store_host,
                                endpoint),
                    {{"store_host", e.store_host}});
  }
  return fail_check(
      "meeting", fmt::format("connected to {}, but {}", endpoint, e.problem),
      "something else holds the port on the store host (an earlier job's store?), or the store "
      "host's "
      "preflight was not started with --world-size: see the store host's preflight report",
      {{"problem", e.problem}});
}

Check clock_check(const std::string& other_host, const ClockSample& c, bool this_is_store_host) {
  // Always the node's clock minus the store host's: positive, the node is ahead.
  const double ahead = -c.offset_ms();
  const double unc = c.uncertainty_ms();
  const nlohmann::json data = {{"store_host", this_is_store_host ? "this node" : other_host},
                               {"node_ahead_ms", ahead},
                               {"uncertainty_ms", unc}};
  const std::string node = this_is_store_host ? other_host : "this node";
  const std::string store = this_is_store_host ? "this node (the store host)"
                                               : other_host + " (the store host)";
  const std::string seen = fmt::format(
      "{} is {} {} by {:.1f} ms (+-{:.1f} ms, from the hello round trip)", node,
      ahead >= 0 ? "ahead of" : "behind", store, std::fabs(ahead), std::fabs(unc));
  // analyze realigns traces by itself (docs/commands.md); logs' timestamps it cannot.
  if (std::fabs(ahead) > 1000) {
    return warn_check(
        "clock", seen,
        "the nodes' logs disagree by that much (traces are realigned by analyze): sync the clocks "
        "(chronyc tracking, timedatectl)",
        data);
  }
  return ok_check("clock", seen, data);
}

namespace {

// The store host's word on hellos of other jobs: one fail check, however many came.
std::optional<Check> other_jobs_check(const Meeting& m, const std::string& job) {
  if (m.other_jobs.empty()) return std::nullopt;
  constexpr std::size_t kShown = 5;
  std::vector<std::string> who;
  nlohmann::json data = nlohmann::json::array();
  for (const OtherJob& o : m.other_jobs) {
    if (who.size() < kShown) who.push_back(fmt::format("{} ({}, job {})", o.host, o.address, job_words(o.job)));
    if (data.size() < 100) data.push_back({{"host", o.host}, {"address", o.address}, {"job", o.job}});
  }
  if (m.other_jobs.size() > kShown) who.push_back(fmt::format("{} more", m.other_jobs.size() - kShown));
  return fail_check(
      "job",
      fmt::format("two jobs share the rendezvous endpoint: this meeting is job {}, turned away "
                  "{} hello(s) of another job: {}",
                  job_words(job), m.other_jobs.size(), fmt::join(who, "; ")),
      kTwoJobsFix, {{"job", job}, {"other_jobs", data}});
}

// Who came to the meeting: every host that said hello (and this one), the addresses each
// said it from, and the names of the node list that none of them matches.
struct Attendance {
  std::set<std::string> came;
  std::map<std::string, std::vector<std::string>> addresses_of;
  std::vector<std::string> missing;
};

// A name of the list (Slurm's are short) stands for a host that said its full name too.
std::string short_host_name(const std::string& h) {
  std::string s = h.substr(0, h.find('.'));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> missing_nodes(const std::set<std::string>& came,
                                       const std::vector<std::string>& node_names) {
  std::set<std::string> came_short;
  for (const std::string& h : came) came_short.insert(short_host_name(h));
  std::vector<std::string> missing;
  for (const std::string& n : node_names) {
    if (!came.count(n) && !came_short.count(short_host_name(n))) missing.push_back(n);
  }
  return missing;
}

Attendance attendance_of(const Meeting& m, const std::string& self_host,
                         const std::vector<std::string>& node_names) {
  Attendance a;
  a.came.insert(self_host);
  for (const Peer& p : m.peers) {
    a.came.insert(p.host);
    a.addresses_of[p.host].push_back(p.address);
  }
  a.missing = missing_nodes(a.came, node_names);
  return a;
}

nlohmann::json peer_json(const Peer& p) {
  nlohmann::json failed = nlohmann::json::array();
  for (const Check& c : p.checks) {
    if (c.verdict != Verdict::Ok) failed.push_back(c.name);
  }
  return {{"host", p.host},
          {"address", p.address},
          {"node_ahead_ms",
           p.clock ? nlohmann::json(-p.clock->offset_ms()) : nlohmann::json(nullptr)},
          {"uncertainty_ms",
           p.clock ? nlohmann::json(p.clock->uncertainty_ms()) : nlohmann::json(nullptr)},
          {"not_ok", failed},
          {"node_rank", p.node_rank ? nlohmann::json(*p.node_rank) : nlohmann::json(nullptr)}};
}

nlohmann::json nodes_json(const Meeting& m, const Attendance& a, unsigned expected_nodes) {
  nlohmann::json peers = nlohmann::json::array();
  for (const Peer& p : m.peers) peers.push_back(peer_json(p));
  return {{"expected", expected_nodes},
          {"peers", peers},
          {"reported", std::vector<std::string>(a.came.begin(), a.came.end())},
          {"missing", a.missing},
          {"waited_s", m.waited_s}};
}

// Did every node come: ok, or fail naming the ones that never showed up.
Check nodes_check(const Meeting& m, const Attendance& a, unsigned expected_nodes,
                  double timeout_s) {
  nlohmann::json data = nodes_json(m, a, expected_nodes);
  const std::size_t reported = a.came.size();
  if (reported >= expected_nodes) {
    return ok_check(
        "nodes", fmt::format("all {} node(s) reported ({})", expected_nodes, fmt::join(a.came, ", ")),
        std::move(data));
  }
  const std::size_t absent = expected_nodes - reported;
  const std::string names =
      a.missing.empty()
          ? fmt::format("{} node(s) (give --nodes to have them named)", absent)
          : fmt::format("{}", fmt::join(a.missing, ", "));
  return fail_check(
      "nodes",
      fmt::format("{} of {} node(s) reported within {:.0f} s ({}); never showed up: {}", reported,
                  expected_nodes, timeout_s, fmt::join(a.came, ", "), names),
      "look at those nodes' own preflight output: a node that cannot resolve or reach the "
      "endpoint says why; a "
      "node with no output never started (scheduler, container, script); the job would wait for "
      "it the same way",
      std::move(data));
}

// A warning for each host name that more than one node said (this node's included).
void add_shared_host_name_checks(const Attendance& a, const std::string& self_host,
                                 std::vector<Check>& out) {
  for (const auto& [host, addrs] : a.addresses_of) {
    if (addrs.size() > 1 || host == self_host) {
      out.push_back(warn_check(
          "nodes",
          fmt::format("host name {} was reported by {} ({} connection(s))", host,
                      fmt::join(addrs, ", "), addrs.size() + (host == self_host)),
          "two nodes with one host name: torchrun and the analyzer tell nodes apart by name; "
          "give every node its own host name",
          {{"host", host}, {"addresses", addrs}}));
    }
  }
}

// What a node brought that is not ok: another --world-size, its own checks, its clock.
void add_peer_checks(const Peer& p, unsigned expected_nodes, std::vector<Check>& out) {
  if (p.world_size && p.world_size != expected_nodes) {
    out.push_back(
        fail_check("nodes",
                   fmt::format("{} was started with --world-size {}, this node with {}", p.host,
                               p.world_size, expected_nodes),
                   "give every node's preflight the same --world-size (the job's --nnodes)"));
  }
  for (const Check& c : p.checks) {
    if (c.verdict == Verdict::Ok) continue;
    Check peer = c;
    peer.name = p.host + ":" + c.name;
    out.push_back(std::move(peer));
  }
  if (p.clock) {
    Check c = clock_check(p.host, *p.clock, true);
    if (c.verdict != Verdict::Ok) c.name = p.host + ":clock";
    if (c.verdict != Verdict::Ok) out.push_back(std::move(c));
  }
}

// One line each, at most kShownProblems: a port scanner must not bury the report.
void add_problem_checks(const Meeting& m, std::vector<Check>& out) {
  constexpr std::size_t kShownProblems = 10;
  for (std::size_t i = 0; i < m.problems.size() && i < kShownProblems; ++i) {
    out.push_back(warn_check(
        "meeting", m.problems[i],
        "something other than a node's preflight connected to the port; if it is the job, it "
        "started before the preflights ended"));
  }
  if (m.problems.size() > kShownProblems) {
    out.push_back(warn_check("meeting",
                             fmt::format("and {} more such connection(s)",
                                         m.problems.size() - kShownProblems),
                             "see above"));
  }
}

}  // namespace

std::vector<Check> meeting_checks(const Meeting& m, unsigned expected_nodes,
                                  const std::string& self_host,
                                  const std::vector<std::string>& node_names, double timeout_s,
                                  const std::string& job) {
  const Attendance attendance = attendance_of(m, self_host, node_names);
  std::vector<Check> out;
  out.push_back(nodes_check(m, attendance, expected_nodes, timeout_s));
  add_shared_host_name_checks(attendance, self_host, out);
  for (const Peer& p : m.peers) add_peer_checks(p, expected_nodes, out);
  if (auto c = other_jobs_check(m, job)) out.push_back(std::move(*c));
  add_problem_checks(m, out);
  return out;
}

}  // namespace rdzvscope::preflight
