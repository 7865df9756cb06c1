// store_unreachable: connects to a store that was listening were refused (ECONNREFUSED: a
// firewall REJECT, a TCP reset) or found no route (EHOSTUNREACH, ENETUNREACH) from some hosts
// or ranks for their whole wait, while others connected to the same store port. The store was
// up: not store_not_ready (refused before it listened); the path answered: not
// connect_timeout (SYNs never answered). The first rank refused so initiated it.
#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

bool unreachable_errno(int err) { return err == EHOSTUNREACH || err == ENETUNREACH; }

// A process that never got through to `port`, with its connects that failed while the store
// was listening and alive.
struct Blocked {
  const ProcessFacts* f = nullptr;
  std::vector<const Event*> attempts;  // refused / unreachable, store listening
};

bool store_alive_at(const ProcessFacts& server, std::int64_t t) {
  if (!server.listen_ns || t < *server.listen_ns) return false;
  if (server.proc->exit_ns && t > *server.proc->exit_ns) return false;
  if (server.proc->vanished() && t > server.proc->last_event_ns()) return false;
  return true;
}

std::string join(const std::set<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ", ") + x;
  return out;
}

}  // namespace

std::optional<Candidate> rule_store_unreachable(const Context& c) {
  // By store port: who never got through although the store listened, who got through.
  std::map<std::uint16_t, std::vector<Blocked>> blocked;
  for (const auto& f : c.facts) {
    if (f.proc->role == Role::Helper || f.connected_ns) continue;
    Blocked b;
    b.f = &f;
    std::vector<const Event*> failed = f.refused;
    for (const Event* e : f.connect_other_failures)
      if (unreachable_errno(e->err)) failed.push_back(e);
    std::uint16_t port = 0;
    for (const Event* e : failed) {
      const std::uint16_t p = e->peer().port;
      const ProcessFacts* server = c.store_reached(f, *e);
      if (!server || server == &f || !store_alive_at(*server, e->wall_ns)) continue;
      if (port && p != port) continue;
      port = p;
      b.attempts.push_back(e);
    }
    if (b.attempts.empty()) continue;
    // One refused connect is the start-up race or a retry; the whole wait is several, or the
    // end of the process.
    if (b.attempts.size() < 2 && !f.failed()) continue;
    std::sort(b.attempts.begin(), b.attempts.end(),
              [](const Event* a, const Event* x) { return a->wall_ns < x->wall_ns; });
    blocked[port].push_back(b);
  }
  for (auto& [port, bs] : blocked) {
    const ProcessFacts* server = c.store_server(port);
    // Those that connected to the same store: the store host's own client counts too (the
    // store answered), but a host is "through" only when a process of it connected.
    std::vector<const ProcessFacts*> through;
    for (const auto& f : c.facts)
      if (f.connected_ns && f.store_port == port && f.proc->role != Role::Helper)
        through.push_back(&f);
    if (through.empty()) continue;

    std::sort(bs.begin(), bs.end(), [](const Blocked& a, const Blocked& b) {
      return a.attempts.front()->wall_ns < b.attempts.front()->wall_ns;
    });
    const Blocked& first = bs.front();
    bool any_refused = false;
    std::vector<const ProcessFacts*> failing;
    std::set<std::string> failing_hosts, through_hosts;
    int attempts = 0;
    for (const Blocked& b : bs) {
      failing.push_back(b.f);
      failing_hosts.insert(b.f->proc->host);
      attempts += static_cast<int>(b.attempts.size());
      for (const Event* e : b.attempts) any_refused |= e->err == ECONNREFUSED;
    }
    for (const ProcessFacts* f : through) through_hosts.insert(f->proc->host);
    // Hosts of which some processes got through and others not: the failure is per process.
    std::set<std::string> mixed;
    for (const auto& h : failing_hosts)
      if (through_hosts.count(h)) mixed.insert(h);

    Candidate out;
    Verdict& v = out.verdict;
    v.cls = FailureClass::StoreUnreachable;
    v.cause = any_refused ? "refused" : "unreachable";
    v.confidence = "high";
    v.initiating_rank = rank_of(*first.f);
    v.initiating_host = first.f->proc->host;

    const Event* e0 = first.attempts.front();
    const std::string dest = format_sockaddr(e0->peer())
                                 .value_or("port " + std::to_string(port));
    std::string through_dest;
    for (const ProcessFacts* f : through)
      for (const Event& e : f->proc->events)
        if (e.is_connect() &&
            e.succeeded() && e.peer().port == port &&
            through_dest.empty())
          through_dest = format_sockaddr(e.peer()).value_or("");

    Finding sfd = finding_for(FailureClass::StoreUnreachable, *server, server->listen_ns);
    sfd.evidence.push_back(server->proc->label() + " listened on port " + std::to_string(port) +
                           " from " + rel(c, *server->listen_ns) + " and accepted " +
                           std::to_string(server->accepts) + " connection(s)");
    out.findings.push_back(sfd);
    for (const Blocked& b : bs) {
      Finding fd = finding_for(FailureClass::StoreUnreachable, *b.f, b.attempts.front()->wall_ns);
      fd.evidence.push_back(
          b.f->proc->label() + ": " + std::to_string(b.attempts.size()) + " connect(s) to " +
          format_sockaddr(b.attempts.front()->peer()).value_or(dest) + " failed between " +
          rel(c, b.attempts.front()->wall_ns) + " and " + rel(c, b.attempts.back()->wall_ns) +
          " (" + describe(*b.attempts.back()) + "), the store listening; never connected");
      out.findings.push_back(fd);
    }
    Finding tfd;
    tfd.cls = FailureClass::StoreUnreachable;
    tfd.evidence.push_back("got through: " + processes_words(through) + " on " +
                           join(through_hosts) +
                           (through_dest.empty() ? "" : " (to " + through_dest + ")") +
                           "; did not: " + processes_words(failing) + " on " + join(failing_hosts) +
                           " (to " + dest + ")");
    out.findings.push_back(tfd);

    const std::string what = any_refused ? "refused" : "unreachable (no route)";
    const std::string store_host = server->proc->host;
    // The name the failing process was told (MASTER_ADDR), else the store's host name.
    std::string store_name = bounded_string(first.f->proc->header.ident.master_addr);
    if (store_name.empty()) store_name = store_host;
    const bool one = bs.size() == 1;
    const bool per_host = mixed.empty();
    if (per_host) {
      v.summary = "connects to " + dest + ", the store of " + server->proc->label() + ", were " +
                  what + " from " + join(failing_hosts) + " (" + processes_words(failing) +
                  ") for " + (one ? "its" : "their") + " whole wait (" + std::to_string(attempts) +
                  " attempt(s)) while " + join(through_hosts) + " (" + processes_words(through) +
                  ") connected to it: something between " + join(failing_hosts) + " and " +
                  store_host +
                  " rejects the connections (a firewall REJECT rule, a route), or the store's name "
                  "resolves to another address there";
    } else {
      v.summary = "connects to " + dest + ", the store of " + server->proc->label() + ", were " +
                  what + " for " + processes_words(failing) + " for " + (one ? "its" : "their") +
                  " whole wait (" + std::to_string(attempts) + " attempt(s)) while " +
                  processes_words(through) +
                  " on the same host connected to it: a rule that rejects these processes' "
                  "connections "
                  "(by owner, cgroup or source port), or a store address that differs for them";
    }
    v.next_step = "on " + first.f->proc->host + ": `nc -vz " + store_name + " " +
                  std::to_string(port) + "`, `getent hosts " + store_name +
                  "` (compare with the address the others reached" +
                  (through_dest.empty() ? std::string() : ": " + through_dest) +
                  "), `ip route get <that address>`, and `iptables -S` there and on " + store_host +
                  " (a REJECT rule on the store port); compare with " + *through_hosts.begin() +
                  ", which got through";
    out.discriminators.set("destination", dest);
    out.discriminators.set("hosts_refused", NameList{{failing_hosts.begin(), failing_hosts.end()}});
    out.discriminators.set("hosts_that_reached_the_store", NameList{{through_hosts.begin(), through_hosts.end()}});
    std::vector<int> rs;
    for (const ProcessFacts* f : failing)
      if (f->proc->rank >= 0) rs.push_back(f->proc->rank);
    std::sort(rs.begin(), rs.end());
    out.discriminators.set("ranks_refused", RankSet{rs});
    out.discriminators.set("failed_connects_while_listening", std::int64_t{attempts});
    return out;
  }
  return std::nullopt;
}

}  // namespace rdzvscope
