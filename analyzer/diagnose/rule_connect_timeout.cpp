// connect_timeout: store connects that timed out (ETIMEDOUT, or given up with the SYN still
// unanswered): the destination was blocked or unreachable. The initiating rank is the one
// that owns the unreachable endpoint, and what it was doing then is the lead.
#include <cerrno>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

std::optional<Candidate> rule_connect_timeout(const Context& c) {
  const ProcessFacts* first = nullptr;
  std::vector<int> ranks;
  Candidate out;
  out.priority = priority::kConnectTimeout;
  for (const auto& f : c.facts) {
    if (f.connect_timeouts.empty()) continue;
    // A socket given up while others connected fine is a retry, not the failure.
    if (!f.failed() && f.connected_ns) continue;
    const Event* e = f.connect_timeouts.front();
    if (!first || e->wall_ns < first->connect_timeouts.front()->wall_ns) first = &f;
    if (f.proc->rank >= 0) ranks.push_back(f.proc->rank);
    Finding fd = finding_for("connect_timeout", f, e->wall_ns);
    fd.evidence.push_back(f.proc->label() + ": " + describe(*e) + " at " + rel(c, e->wall_ns) + " (" +
                          std::to_string(f.connect_timeouts.size()) + " timed-out attempt(s))");
    out.findings.push_back(fd);
  }
  auto log_hits = c.logs.of({LogFamily::ConnectFailed, LogFamily::ConnectionTimedOutErrno,
                             LogFamily::ServerTimedOutRetry});
  std::erase_if(log_hits, [](const LogEvent* e) {
    return e->family == LogFamily::ConnectFailed && (!e->err || *e->err != ETIMEDOUT);
  });
  if (!first && log_hits.empty()) return std::nullopt;

  Verdict& v = out.verdict;
  v.cls = "connect_timeout";
  std::string dest;
  if (first) {
    const Event* e = first->connect_timeouts.front();
    std::uint16_t port = e->rec.u.net.peer.port ? e->rec.u.net.peer.port : first->store_port;
    dest = format_sockaddr(e->rec.u.net.peer).value_or("port " + std::to_string(port));
    v.confidence = "high";
    if (const ProcessFacts* owner = c.store_server(port)) {
      v.initiating_rank = rank_of(*owner);
      v.initiating_host = owner->proc->host;
      // What the owner was doing when the connects timed out: its last events before then.
      std::vector<std::string> last;
      for (const Event& x : owner->proc->events)
        if (x.wall_ns <= e->wall_ns) last.push_back(rel(c, x.wall_ns) + " " + describe(x));
      Finding fd = finding_for("connect_timeout", *owner, e->wall_ns);
      fd.evidence.push_back(owner->proc->label() + " owns " + dest + " (listening since " +
                            rel(c, *owner->listen_ns) + ", " + std::to_string(owner->accepts) +
                            " connections accepted)");
      for (std::size_t i = last.size() > 3 ? last.size() - 3 : 0; i < last.size(); ++i)
        fd.evidence.push_back("  its last events: " + last[i]);
      out.findings.insert(out.findings.begin(), fd);
      v.summary = "connects to " + dest + ", the store of " + owner->proc->label() + ", timed out on rank(s) " +
                  rank_list(ranks) + ": SYNs went unanswered while the store was listening (a firewall, a "
                  "dropped route, or a host too busy to answer)";
      v.next_step = "from a failing node: nc -vz -w 5 " + owner->proc->host + " " + std::to_string(port) +
                    " ; then check firewall rules (iptables -S) and routes on both ends";
    } else {
      v.summary = "connects to " + dest + " timed out on rank(s) " + rank_list(ranks) +
                  "; the process owning that endpoint was not traced";
      v.next_step = "check that the store host is up and reachable: nc -vz -w 5 <host> " + std::to_string(port) +
                    " from a failing node; trace the store host too";
    }
  } else {
    const LogEvent* e = log_hits.front();
    dest = e->host + (e->port ? ":" + std::to_string(*e->port) : "");
    v.confidence = "medium";
    v.summary = "connects to " + dest + " timed out (errno 110), from the logs";
    v.next_step = "nc -vz -w 5 " + (e->host.empty() ? std::string("<host>") : e->host) + " " +
                  (e->port ? std::to_string(*e->port) : std::string("<port>")) +
                  " from the failing node; check firewall rules and routes";
    out.findings.push_back(log_finding("connect_timeout", *e));
  }
  out.discriminators["destination"] = dest;
  out.discriminators["ranks_timed_out"] = ranks;
  return out;
}

}  // namespace rdzvscope
