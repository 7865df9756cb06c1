// connect_timeout: store connects that timed out (ETIMEDOUT, or given up with the SYN still
// unanswered): the destination was blocked or unreachable. The initiating rank is the one
// that owns the unreachable endpoint, and what it was doing then is the lead; unless the
// endpoint was reachable from other hosts: then the path from the failing host(s) is to
// blame, and the earliest rank that timed out there initiated it.
#include <algorithm>
#include <cerrno>
#include <set>
#include <string_view>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// Hosts other than the store's own whose processes reached `port`, and the hosts whose
// connects to it timed out. A loopback connect on the store host proves nothing about the
// network, so that host never counts as reaching.
struct Reachability {
  std::set<std::string> reached, timed_out;
  // Only some hosts failed while others got through: a host-local cause.
  bool host_local() const {
    if (reached.empty() || timed_out.empty()) return false;
    for (const auto& h : timed_out)
      if (reached.count(h)) return false;
    return true;
  }
};

Reachability reachability(const Context& c, std::uint16_t port, const std::string& store_host,
                          const std::vector<const ProcessFacts*>& failing) {
  Reachability r;
  for (const ProcessFacts* f : failing) r.timed_out.insert(f->proc->host);
  for (const auto& f : c.facts)
    if (f.store_port == port && f.connected_ns && f.proc->host != store_host) r.reached.insert(f.proc->host);
  return r;
}

std::string host_list(const std::set<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : ", ") + h;
  return out;
}

// The processes whose store connects timed out, the earliest first among them.
struct TimedOut {
  const ProcessFacts* first = nullptr;
  std::vector<const ProcessFacts*> failing;
  std::vector<std::string> others;  // processes without a rank (a torchrun agent)
  std::vector<int> ranks;
  // Who timed out, in words: "rank(s) 2, 3", or the processes without a rank.
  std::string who() const {
    std::string w = ranks.empty() ? std::string() : "rank(s) " + rank_list(ranks);
    for (const std::string& o : others) w += (w.empty() ? "" : ", ") + o;
    return w;
  }
};

TimedOut timed_out_connects(const Context& c, Candidate& out) {
  TimedOut t;
  for (const auto& f : c.facts) {
    if (f.connect_timeouts.empty()) continue;
    // A socket given up while others connected fine is a retry, not the failure.
    if (!f.failed() && f.connected_ns) continue;
    // Its lookup sent it to an address where no process reached the store: its SYNs say
    // nothing of the store's (store_unreachable, resolved_elsewhere).
    if (c.misdirected_of(f)) continue;
    const Event* e = f.connect_timeouts.front();
    if (!t.first || e->wall_ns < t.first->connect_timeouts.front()->wall_ns) t.first = &f;
    t.failing.push_back(&f);
    if (f.proc->rank >= 0) t.ranks.push_back(f.proc->rank);
    else t.others.push_back(f.proc->label());
    Finding fd = finding_for(FailureClass::ConnectTimeout, f, e->wall_ns);
    fd.evidence.push_back(f.proc->label() + ": " + describe(*e) + " at " + rel(c, e->wall_ns) + " (" +
                          std::to_string(f.connect_timeouts.size()) + " timed-out attempt(s))");
    out.findings.push_back(fd);
  }
  return t;
}

// Where a bare "Connection timed out" was an established store connection's, not a connect's:
// the file's c10d line of a store send/recv that failed with it (2.x: `recvValueWithTimeout
// failed on SocketImpl(...): Connection timed out`, the kernel giving up an unacknowledged
// connection), or the rank's traces showing ETIMEDOUT on its store I/O and no connect that
// timed out.
bool store_io_timed_out(const Context& c, const LogEvent& line) {
  constexpr std::string_view kStoreIo = " failed on SocketImpl", kTimedOut = "Connection timed out";
  if (line.text.find(kStoreIo) != std::string::npos) return true;
  for (const LogEvent* io : c.logs.of({LogFamily::SendRecvFailed}))
    if (io->file == line.file && io->text.find(kTimedOut) != std::string::npos) return true;
  const ProcessFacts* f = line.rank >= 0 ? c.rank(line.rank) : nullptr;
  if (!f || !f->connect_timeouts.empty()) return false;
  return std::any_of(f->io_failures.begin(), f->io_failures.end(), [](const Event* e) { return e->err == ETIMEDOUT; });
}

// Log lines of connects that timed out (a connect failure counts only with errno 110).
std::vector<const LogEvent*> timed_out_lines(const Context& c) {
  auto hits = c.logs.of({LogFamily::ConnectFailed, LogFamily::ConnectionTimedOutErrno, LogFamily::ServerTimedOutRetry});
  std::erase_if(hits, [&](const LogEvent* e) {
    if (e->family == LogFamily::ConnectFailed) return !e->err || *e->err != ETIMEDOUT;
    return !e->has(LogFamily::ServerTimedOutRetry) && store_io_timed_out(c, *e);
  });
  return hits;
}

// Log lines of connects that found no route (EHOSTUNREACH, ENETUNREACH): a c10d connect line
// with that errno, or a bare "No route to host" that no c10d line words.
std::vector<const LogEvent*> unreachable_lines(const Context& c) {
  auto hits = c.logs.of({LogFamily::ConnectFailed, LogFamily::NoRouteToHost});
  std::erase_if(hits, [](const LogEvent* e) {
    return e->family == LogFamily::ConnectFailed && (!e->err || (*e->err != EHOSTUNREACH && *e->err != ENETUNREACH));
  });
  return hits;
}

// What the store's owner was doing when the connects timed out: its last events before then.
Finding owner_finding(const Context& c, const ProcessFacts& owner, const Event& e, const std::string& dest) {
  std::vector<std::string> last;
  for (const Event& x : owner.proc->events)
    if (x.wall_ns <= e.wall_ns) last.push_back(rel(c, x.wall_ns) + " " + describe(x));
  Finding fd = finding_for(FailureClass::ConnectTimeout, owner, e.wall_ns);
  fd.evidence.push_back(owner.proc->label() + " owns " + dest + " (listening since " + rel(c, *owner.listen_ns) + ", " +
                        std::to_string(owner.accepts) + " connections accepted)");
  for (std::size_t i = last.size() > 3 ? last.size() - 3 : 0; i < last.size(); ++i)
    fd.evidence.push_back("  its last events: " + last[i]);
  return fd;
}

// Only some hosts timed out while others reached the same store: the path from them is to
// blame, and the earliest rank that timed out there initiated it.
void word_host_local(const TimedOut& t, const ProcessFacts& owner, const Reachability& reach, const std::string& dest,
                     std::uint16_t port, Candidate& out) {
  Verdict& v = out.verdict;
  v.initiating_rank = rank_of(*t.first);
  v.initiating_host = t.first->proc->host;
  v.summary = "connects to " + dest + ", the store of " + owner.proc->label() + ", timed out from " +
              host_list(reach.timed_out) + " only (" + t.who() + "), while " + host_list(reach.reached) +
              " reached the same store: the path from " + host_list(reach.timed_out) +
              " drops the SYNs (a firewall rule or a route there, or a rule on the store host against that address)";
  v.next_step = "on " + t.first->proc->host + ": nc -vz -w 5 " + owner.proc->host + " " + std::to_string(port) +
                " ; iptables -S ; ip route get <the store's address> ; compare with " + *reach.reached.begin() +
                ", which got through";
  out.discriminators.set("hosts_timed_out", NameList{{reach.timed_out.begin(), reach.timed_out.end()}});
  out.discriminators.set("hosts_that_reached_the_store", NameList{{reach.reached.begin(), reach.reached.end()}});
}

// The store's owner is traced: it initiated it, unless the path from some hosts is to blame.
void word_owner(const Context& c, const TimedOut& t, const ProcessFacts& owner, const Event& e,
                const std::string& dest, std::uint16_t port, Candidate& out) {
  Verdict& v = out.verdict;
  v.initiating_rank = rank_of(owner);
  v.initiating_host = owner.proc->host;
  out.findings.insert(out.findings.begin(), owner_finding(c, owner, e, dest));
  v.summary = "connects to " + dest + ", the store of " + owner.proc->label() + ", timed out on " + t.who() +
              ": SYNs went unanswered while the store was listening (a firewall, a dropped route, or a host too "
              "busy to answer)";
  v.next_step = "from a failing node: nc -vz -w 5 " + owner.proc->host + " " + std::to_string(port) +
                " ; then check firewall rules (iptables -S) and routes on both ends";
  const Reachability reach = reachability(c, port, owner.proc->host, t.failing);
  if (reach.host_local()) word_host_local(t, owner, reach, dest, port, out);
}

// From the traces; returns the destination in words.
std::string from_traces(const Context& c, const TimedOut& t, Candidate& out) {
  Verdict& v = out.verdict;
  const Event* e = t.first->connect_timeouts.front();
  std::uint16_t port = e->peer().port ? e->peer().port : t.first->store_port;
  const std::string dest = format_sockaddr(e->peer()).value_or("port " + std::to_string(port));
  v.confidence = "high";
  if (const ProcessFacts* owner = c.store_server(port)) {
    word_owner(c, t, *owner, *e, dest, port, out);
  } else {
    v.summary = "connects to " + dest + " timed out on " + t.who() + "; the process owning that endpoint was not traced";
    v.next_step = "check that the store host is up and reachable: nc -vz -w 5 <host> " + std::to_string(port) +
                  " from a failing node; trace the store host too";
  }
  return dest;
}

// The first line that names the endpoint, else the first. Not "The server socket on [...] has
// timed out, will retry": 2.13 printed uninitialised memory there ([c440:0:1193:0:5655::]:3175
// for 127.0.0.1), where 2.6 printed the address.
const LogEvent* endpoint_line(const std::vector<const LogEvent*>& log_hits) {
  for (const LogEvent* x : log_hits)
    if (!x->host.empty() && x->family != LogFamily::ServerTimedOutRetry) return x;
  return log_hits.front();
}

// The line of the same file that names the endpoint as the job gave it, "(HOST, PORT)": c10d's
// per-address lines name what the lookup returned (and 2.13 prints uninitialised memory
// there), its summary lines the host and port asked for.
const LogEvent* named_endpoint(const Context& c, const LogEvent& near) {
  for (const LogEvent& e : c.logs.events)
    if (e.file == near.file && !e.host.empty() && e.port &&
        (e.has(LogFamily::ClientConnectTimeout) || e.has(LogFamily::ConnectValidate) ||
         (e.has(LogFamily::ConnectFailed) && e.text.find("any network address of") != std::string::npos)))
      return &e;
  return nullptr;
}

// A log shows one node's side of the path: whether the other nodes reached the store is not in
// it. A store host that does not answer anyone and a path blocked from some nodes only print
// the same lines on the nodes that fail.
Alternative path_from_this_node_only(const std::string& host, const std::string& how) {
  const std::string dest = host.empty() ? std::string("the store host") : host;
  const std::string nc_host = host.empty() ? std::string("<store host>") : host;
  return {FailureClass::StoreUnreachable, how == "timed out" ? std::nullopt : std::optional<std::string>("unreachable"),
          "the store was up and other nodes reached it; only the path from this node to " + dest + " " + how +
              " (a firewall rule or a route on this node's side)",
          "`rdzvscope preflight` (or `nc -vz " + nc_host + " PORT`) from this node and from a node that got through; "
          "the logs of a rank on another node (did it connect?)"};
}

// The first error of a process outranks its follow-on lines: a connect that found no route,
// retried until the store timeout, ends in a timeout line of its own (2.x words the deadline
// as "timed out"); the EHOSTUNREACH before it is why.
bool no_route_came_first(const std::vector<const LogEvent*>& no_route, const std::vector<const LogEvent*>& timed_out) {
  if (no_route.empty()) return false;
  if (timed_out.empty()) return true;
  const LogEvent& u = *no_route.front();
  const LogEvent& t = *timed_out.front();
  return u.file == t.file && u.line < t.line;
}

// From the logs alone; returns the destination in words.
std::string from_logs(const std::vector<const LogEvent*>& log_hits, Candidate& out) {
  Verdict& v = out.verdict;
  const LogEvent* e = endpoint_line(log_hits);
  const bool named = !e->host.empty() && e->family != LogFamily::ServerTimedOutRetry;
  const std::string dest = named ? e->host + (e->port ? ":" + std::to_string(*e->port) : "") : std::string("the store");
  v.confidence = "medium";
  v.summary = "connects to " + dest + " timed out (errno 110), from the logs";
  v.next_step = "nc -vz -w 5 " + (named ? e->host : std::string("<host>")) + " " +
                (named && e->port ? std::to_string(*e->port) : std::string("<port>")) +
                " from the failing node; check firewall rules and routes";
  out.findings.push_back(log_finding(FailureClass::ConnectTimeout, *e));
  out.alternatives.push_back(path_from_this_node_only(named ? e->host : std::string(), "timed out"));
  return dest;
}

// EHOSTUNREACH from the logs alone: the kernel or a router said there is no way to the host (an
// ICMP host-unreachable: a route, the host down on its own segment, or a REJECT rule such as
// firewalld's default icmp-host-prohibited). Which of these, and whether for this node only, a
// log does not say: low confidence.
std::string unreachable_from_logs(const Context& c, const std::vector<const LogEvent*>& log_hits, Candidate& out) {
  Verdict& v = out.verdict;
  const LogEvent* e = named_endpoint(c, *log_hits.front());
  if (!e) e = endpoint_line(log_hits);
  const bool named = !e->host.empty();
  const std::string dest = named ? e->host + (e->port ? ":" + std::to_string(*e->port) : "") : std::string("the store host");
  v.confidence = "low";
  v.cause = "host_unreachable";
  v.summary = "a connect to " + dest + " found no route (EHOSTUNREACH, \"No route to host\"), from the logs: the "
              "host is down or unreachable from this node (a route, or a firewall REJECT answered with "
              "host-unreachable, as firewalld does by default)";
  v.next_step = "from the failing node: `nc -vz " + (named ? e->host : std::string("<store host>")) + " " +
                (named && e->port ? std::to_string(*e->port) : std::string("<port>")) +
                "`, `ip route get <store address>`; on the store host: `iptables -S` / `firewall-cmd --list-all` "
                "(open the store port)";
  out.findings.push_back(log_finding(FailureClass::ConnectTimeout, *e));
  out.alternatives.push_back(path_from_this_node_only(named ? e->host : std::string(), "has no route"));
  return dest;
}

}  // namespace

std::optional<Candidate> rule_connect_timeout(const Context& c) {
  Candidate out;
  const TimedOut t = timed_out_connects(c, out);
  const std::vector<const LogEvent*> log_hits = timed_out_lines(c);
  // With traces, their own EHOSTUNREACH connects speak (store_unreachable, cause unreachable).
  const std::vector<const LogEvent*> no_route = c.has_traces() ? std::vector<const LogEvent*>{} : unreachable_lines(c);
  if (!t.first && log_hits.empty() && no_route.empty()) return connect_timeout_from_calls_in_flight(c);
  out.verdict.cls = FailureClass::ConnectTimeout;
  const std::string dest = t.first                               ? from_traces(c, t, out)
                           : no_route_came_first(no_route, log_hits) ? unreachable_from_logs(c, no_route, out)
                                                                    : from_logs(log_hits, out);
  out.discriminators.set("destination", dest);
  out.discriminators.set("ranks_timed_out", RankSet{t.ranks});
  return out;
}

}  // namespace rdzvscope
