// store_unreachable: connects to a store that was listening were refused (ECONNREFUSED: a
// firewall REJECT, a TCP reset) or found no route (EHOSTUNREACH, ENETUNREACH) from some hosts
// or ranks for their whole wait, while others connected to the same store port. The store was
// up: not store_not_ready (refused before it listened); the path answered: not
// connect_timeout (SYNs never answered). The first rank refused so initiated it.
//
// Cause resolved_elsewhere, first: the store's name resolved to another address for some
// processes than for those that reached the store through it (model/name_answers.h), and
// their connects went there and failed, whatever they met (refused, timed out, no route). The
// resolver, not the network, sent them where no process reached the store: the rank whose
// lookup differs initiated it, and both answers are the words. This class rather than
// name_resolution: no lookup failed (name_resolution's own fact is a lookup that returned an
// error), and the class's fact holds (the store listened, others reached it, these never did
// for their whole wait); above connect_timeout and store_not_ready, whose facts (the store's
// SYNs unanswered, the store not listening) these connects do not show.
#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "model/address.h"
#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

bool unreachable_errno(int err) { return err == EHOSTUNREACH || err == ENETUNREACH; }

// A process that never got through to `port`, with its connects that failed while the store
// was listening and alive.
struct Blocked {
  const ProcessFacts* f = nullptr;
  std::uint16_t port = 0;
  std::vector<const Event*> attempts;  // refused / unreachable, store listening
};

// One store port that some processes never got through to while others did.
struct UnreachableStore {
  std::uint16_t port = 0;
  const ProcessFacts* server = nullptr;
  std::vector<Blocked> blocked;  // by their first failed attempt; front() initiated it
  std::vector<const ProcessFacts*> failing, through;
  std::set<std::string> failing_hosts, through_hosts;
  int attempts = 0;          // failed connects while the store listened, all blocked together
  bool any_refused = false;  // else all were unreachable (no route)
  bool per_host = true;      // no host has processes on both sides
  std::string dest;          // where the first blocked process connected
  std::string through_dest;  // where the first process that got through connected; may be empty
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

// The failed connects of a process that never connected, to one store port while that store
// was listening and alive; nullopt when they do not amount to its whole wait.
std::optional<Blocked> find_blocked_process(const Context& c, const ProcessFacts& f) {
  Blocked b;
  b.f = &f;
  std::vector<const Event*> failed = f.refused;
  for (const Event* e : f.connect_other_failures)
    if (unreachable_errno(e->err)) failed.push_back(e);
  for (const Event* e : failed) {
    const std::uint16_t p = e->peer().port;
    const ProcessFacts* server = c.store_reached(f, *e);
    if (!server || server == &f || !store_alive_at(*server, e->wall_ns)) continue;
    if (b.port && p != b.port) continue;
    b.port = p;
    b.attempts.push_back(e);
  }
  if (b.attempts.empty()) return std::nullopt;
  // One refused connect is the start-up race or a retry; the whole wait is several, or the
  // end of the process.
  if (b.attempts.size() < 2 && !f.failed()) return std::nullopt;
  std::sort(b.attempts.begin(), b.attempts.end(),
            [](const Event* a, const Event* x) { return a->wall_ns < x->wall_ns; });
  return b;
}

// By store port: who never got through although the store listened.
std::map<std::uint16_t, std::vector<Blocked>> find_blocked_by_port(const Context& c) {
  std::map<std::uint16_t, std::vector<Blocked>> blocked;
  for (const auto& f : c.facts) {
    // Sent elsewhere by its lookup: its connects never went to the store (resolved_elsewhere).
    if (f.proc->role == Role::Helper || f.connected_ns || c.misdirected_of(f)) continue;
    if (auto b = find_blocked_process(c, f)) blocked[b->port].push_back(std::move(*b));
  }
  return blocked;
}

// Those that connected to the same store: the store host's own client counts too (the store
// answered), but a host is "through" only when a process of it connected.
std::vector<const ProcessFacts*> processes_through_to(const Context& c, std::uint16_t port) {
  std::vector<const ProcessFacts*> through;
  for (const auto& f : c.facts)
    if (f.connected_ns && f.store_port == port && f.proc->role != Role::Helper)
      through.push_back(&f);
  return through;
}

// Where the first of those that got through connected to, "" when no connect shows it.
std::string through_destination(const std::vector<const ProcessFacts*>& through, std::uint16_t port) {
  std::string through_dest;
  for (const ProcessFacts* f : through)
    for (const Event& e : f->proc->events)
      if (e.is_connect() && e.succeeded() && e.peer().port == port && through_dest.empty())
        through_dest = format_sockaddr(e.peer()).value_or("");
  return through_dest;
}

// The processes and hosts on each side of one store port, and how they failed.
UnreachableStore sides_of_store(const Context& c, std::uint16_t port, std::vector<Blocked> bs,
                                std::vector<const ProcessFacts*> through) {
  UnreachableStore s;
  s.port = port;
  s.server = c.store_server(port);
  std::sort(bs.begin(), bs.end(), [](const Blocked& a, const Blocked& b) {
    return a.attempts.front()->wall_ns < b.attempts.front()->wall_ns;
  });
  for (const Blocked& b : bs) {
    s.failing.push_back(b.f);
    s.failing_hosts.insert(b.f->proc->host);
    s.attempts += static_cast<int>(b.attempts.size());
    for (const Event* e : b.attempts) s.any_refused |= e->err == ECONNREFUSED;
  }
  for (const ProcessFacts* f : through) s.through_hosts.insert(f->proc->host);
  // Hosts of which some processes got through and others not: the failure is per process.
  for (const auto& h : s.failing_hosts)
    if (s.through_hosts.count(h)) s.per_host = false;
  s.dest = format_sockaddr(bs.front().attempts.front()->peer())
               .value_or("port " + std::to_string(port));
  s.through_dest = through_destination(through, port);
  s.blocked = std::move(bs);
  s.through = std::move(through);
  return s;
}

// The first store port (in port order) that some never got through to while others did.
std::optional<UnreachableStore> find_unreachable_store(const Context& c) {
  for (auto& [port, bs] : find_blocked_by_port(c)) {
    std::vector<const ProcessFacts*> through = processes_through_to(c, port);
    if (through.empty()) continue;
    return sides_of_store(c, port, std::move(bs), std::move(through));
  }
  return std::nullopt;
}

// The store listening, each blocked process's failed connects, and the two sides.
void unreachable_findings(const Context& c, const UnreachableStore& s, Candidate& out) {
  const ProcessFacts& server = *s.server;
  Finding sfd = finding_for(FailureClass::StoreUnreachable, server, server.listen_ns);
  sfd.evidence.push_back(server.proc->label() + " listened on port " + std::to_string(s.port) +
                         " from " + rel(c, *server.listen_ns) + " and accepted " +
                         std::to_string(server.accepts) + " connection(s)");
  out.findings.push_back(sfd);
  for (const Blocked& b : s.blocked) {
    Finding fd = finding_for(FailureClass::StoreUnreachable, *b.f, b.attempts.front()->wall_ns);
    fd.evidence.push_back(
        b.f->proc->label() + ": " + std::to_string(b.attempts.size()) + " connect(s) to " +
        format_sockaddr(b.attempts.front()->peer()).value_or(s.dest) + " failed between " +
        rel(c, b.attempts.front()->wall_ns) + " and " + rel(c, b.attempts.back()->wall_ns) +
        " (" + describe(*b.attempts.back()) + "), the store listening; never connected");
    out.findings.push_back(fd);
  }
  Finding tfd;
  tfd.cls = FailureClass::StoreUnreachable;
  tfd.evidence.push_back("got through: " + processes_words(s.through) + " on " +
                         join(s.through_hosts) +
                         (s.through_dest.empty() ? "" : " (to " + s.through_dest + ")") +
                         "; did not: " + processes_words(s.failing) + " on " + join(s.failing_hosts) +
                         " (to " + s.dest + ")");
  out.findings.push_back(tfd);
}

std::string unreachable_summary(const UnreachableStore& s) {
  const std::string what = s.any_refused ? "refused" : "unreachable (no route)";
  const bool one = s.blocked.size() == 1;
  if (s.per_host)
    return "connects to " + s.dest + ", the store of " + s.server->proc->label() + ", were " +
           what + " from " + join(s.failing_hosts) + " (" + processes_words(s.failing) +
           ") for " + (one ? "its" : "their") + " whole wait (" + std::to_string(s.attempts) +
           " attempt(s)) while " + join(s.through_hosts) + " (" + processes_words(s.through) +
           ") connected to it: something between " + join(s.failing_hosts) + " and " +
           s.server->proc->host +
           " rejects the connections (a firewall REJECT rule, a route), or the store's name "
           "resolves to another address there";
  return "connects to " + s.dest + ", the store of " + s.server->proc->label() + ", were " +
         what + " for " + processes_words(s.failing) + " for " + (one ? "its" : "their") +
         " whole wait (" + std::to_string(s.attempts) + " attempt(s)) while " +
         processes_words(s.through) +
         " on the same host connected to it: a rule that rejects these processes' "
         "connections "
         "(by owner, cgroup or source port), or a store address that differs for them";
}

std::string unreachable_next_step(const UnreachableStore& s) {
  const Process& first = *s.blocked.front().f->proc;
  // The name the failing process was told (MASTER_ADDR), else the store's host name.
  std::string store_name = bounded_string(first.header.ident.master_addr);
  if (store_name.empty()) store_name = s.server->proc->host;
  return "on " + first.host + ": `nc -vz " + store_name + " " +
         std::to_string(s.port) + "`, `getent hosts " + store_name +
         "` (compare with the address the others reached" +
         (s.through_dest.empty() ? std::string() : ": " + s.through_dest) +
         "), `ip route get <that address>`, and `iptables -S` there and on " + s.server->proc->host +
         " (a REJECT rule on the store port); compare with " + *s.through_hosts.begin() +
         ", which got through";
}

void unreachable_discriminators(const UnreachableStore& s, Candidate& out) {
  out.discriminators.set("destination", s.dest);
  out.discriminators.set("hosts_refused", NameList{{s.failing_hosts.begin(), s.failing_hosts.end()}});
  out.discriminators.set("hosts_that_reached_the_store", NameList{{s.through_hosts.begin(), s.through_hosts.end()}});
  std::vector<int> rs;
  for (const ProcessFacts* f : s.failing)
    if (f->proc->rank >= 0) rs.push_back(f->proc->rank);
  std::sort(rs.begin(), rs.end());
  out.discriminators.set("ranks_refused", RankSet{rs});
  out.discriminators.set("failed_connects_while_listening", std::int64_t{s.attempts});
}

// ---- resolved_elsewhere ----

// The hosts of some processes, "node1" or "node0, node1".
std::string hosts_of(const std::vector<const ProcessFacts*>& ps) {
  std::set<std::string> hosts;
  for (const ProcessFacts* f : ps) hosts.insert(f->proc->host);
  return join(hosts);
}

bool timed_out_connect(const Event& e) {
  return e.err == ETIMEDOUT || e.has(RDZV_F_ABANDONED) || e.kind == RDZV_EV_POLL;
}

// What the connects to the other address met, as the kernel reported it.
std::string what_they_met(const std::vector<const Event*>& attempts) {
  bool timed = false, refused = false, unreachable = false, other = false;
  for (const Event* e : attempts) {
    if (e->err == ECONNREFUSED)
      refused = true;
    else if (unreachable_errno(e->err))
      unreachable = true;
    else if (timed_out_connect(*e))
      timed = true;
    else
      other = true;
  }
  if (timed && !refused && !unreachable && !other)
    return "timed out: nothing answered the SYNs there";
  if (refused && !timed && !unreachable && !other)
    return "were refused: a reset answered each SYN (nothing listening on that port there)";
  if (unreachable && !timed && !refused && !other)
    return "found no route or no host there (EHOSTUNREACH)";
  std::string out;
  if (timed) out += "timed out";
  if (refused) out += std::string(out.empty() ? "" : ", ") + "were refused";
  if (unreachable) out += std::string(out.empty() ? "" : ", ") + "found no route";
  if (other) out += std::string(out.empty() ? "" : ", ") + "failed otherwise";
  return out;
}

// The misdirected processes of one name and store port, by the address their lookup gave.
struct Elsewhere {
  const Misdirected* first = nullptr;
  std::map<std::string, std::vector<const Misdirected*>> by_answer;
  std::vector<const ProcessFacts*> odd;  // all of them, first one first
  std::vector<const Event*> attempts;    // all their failed connects there
  int connects = 0;                      // the connect calls they made there
  std::map<std::string, std::vector<const ProcessFacts*>>
      through;  // by the answer that reached the store
  std::vector<const ProcessFacts*> all_through;
};

Elsewhere find_elsewhere(const Context& c) {
  Elsewhere e;
  e.first = &c.misdirected.front();
  for (const Misdirected& m : c.misdirected) {
    if (m.name != e.first->name || m.port != e.first->port) continue;
    e.by_answer[address_words(m.answer)].push_back(&m);
    e.odd.push_back(m.f);
    e.attempts.insert(e.attempts.end(), m.attempts.begin(), m.attempts.end());
    e.connects += m.connects;
  }
  for (const ReachedThrough& r : reached_through(c.facts, e.first->name, e.first->port)) {
    e.through[address_words(r.answer)].push_back(r.f);
    e.all_through.push_back(r.f);
  }
  return e;
}

std::string elsewhere_summary(const Elsewhere& e, const ProcessFacts* server) {
  const std::string& name = e.first->name;
  std::string s;
  for (const auto& [addr, ms] : e.by_answer) {
    std::vector<const ProcessFacts*> ps;
    for (const Misdirected* m : ms) ps.push_back(m->f);
    s += (s.empty() ? "" : ", ") + processes_words(ps) + " resolved " + name + " to " + addr +
         " on " + hosts_of(ps);
  }
  for (const auto& [addr, ps] : e.through)
    s += ", " + processes_words(ps) + " to " + addr + " on " + hosts_of(ps);
  s += ", where " + std::string(e.all_through.size() == 1 ? "it" : "they") + " reached the store" +
       (server ? " of " + server->proc->label() : std::string());
  const bool one = e.odd.size() == 1;
  rdzv_sockaddr dest = e.first->answer;
  dest.port = e.first->port;
  s += "; " + std::string(one ? "its " : "their ") + std::to_string(e.connects) +
       " store connect(s) to " +
       (e.by_answer.size() == 1 ? endpoint_words(dest) : "those addresses") + " " +
       what_they_met(e.attempts) + ", and " + (one ? "it" : "they") +
       " never reached the store: " + name + " resolves elsewhere on " + hosts_of(e.odd) +
       " (a stale /etc/hosts line, a DNS record or a search domain of " +
       (one ? "that node" : "those nodes") + ")";
  return s;
}

std::string elsewhere_next_step(const Elsewhere& e, std::uint16_t port) {
  const std::string& name = e.first->name;
  const std::string good = e.through.empty() ? std::string("the store's address")
                                             : e.through.begin()->first;
  const std::string odd_host = e.first->f->proc->host;
  std::string there;
  for (const auto& [addr, ms] : e.by_answer) there += (there.empty() ? "" : ", ") + addr;
  return "on " + odd_host + ": `getent hosts " + name + "` (it gives " + there + " there, " + good +
         " on " + hosts_of(e.all_through) + "); correct " + odd_host +
         "'s /etc/hosts line or DNS record for " + name + " (or put " + good +
         " in MASTER_ADDR), then `nc -vz " + good + " " + std::to_string(port) + "` from " +
         odd_host + " to check that it reaches the store";
}

void elsewhere_findings(const Context& c, const Elsewhere& e, const ProcessFacts* server,
                        Candidate& out) {
  for (const auto& [addr, ms] : e.by_answer)
    for (const Misdirected* m : ms) {
      Finding fd = finding_for(FailureClass::StoreUnreachable, *m->f, m->attempts.front()->wall_ns);
      rdzv_sockaddr dest = m->answer;
      dest.port = m->port;
      fd.evidence.push_back(
          m->f->proc->label() + ": lookup of \"" + m->name + "\" at " + rel(c, m->lookup->wall_ns) +
          " gave " + addr + "; " + std::to_string(m->connects) + " store connect(s) to " +
          endpoint_words(dest) + " between " + rel(c, m->attempts.front()->wall_ns) + " and " +
          rel(c, end_ns(*m->attempts.back())) + " (" + describe(*m->attempts.back()) +
          "); never connected");
      out.findings.push_back(fd);
    }
  for (const auto& [addr, ps] : e.through) {
    Finding fd;
    fd.cls = FailureClass::StoreUnreachable;
    fd.evidence.push_back(processes_words(ps) + " on " + hosts_of(ps) + ": lookup of \"" +
                          e.first->name + "\" gave " + addr +
                          ", and connected to the store there (port " +
                          std::to_string(e.first->port) + ")");
    out.findings.push_back(fd);
  }
  if (server && server->listen_ns) {
    Finding fd = finding_for(FailureClass::StoreUnreachable, *server, server->listen_ns);
    fd.evidence.push_back(server->proc->label() + " listened on port " +
                          std::to_string(e.first->port) + " from " + rel(c, *server->listen_ns) +
                          " and accepted " + std::to_string(server->accepts) + " connection(s)");
    out.findings.push_back(fd);
  }
}

std::optional<Candidate> resolved_elsewhere(const Context& c) {
  if (c.misdirected.empty()) return std::nullopt;
  const Elsewhere e = find_elsewhere(c);
  const ProcessFacts* server = c.store_server(e.first->port);
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StoreUnreachable;
  v.cause = "resolved_elsewhere";
  v.confidence = "high";
  v.initiating_rank = rank_of(*e.first->f);
  v.initiating_host = e.first->f->proc->host;
  v.summary = elsewhere_summary(e, server);
  v.next_step = elsewhere_next_step(e, e.first->port);
  elsewhere_findings(c, e, server, out);
  rdzv_sockaddr dest = e.first->answer;
  dest.port = e.first->port;
  out.discriminators.set("destination", endpoint_words(dest));
  out.discriminators.set("host_name", e.first->name);
  std::vector<int> odd_ranks, through_ranks;
  for (const ProcessFacts* f : e.odd)
    if (f->proc->rank >= 0) odd_ranks.push_back(f->proc->rank);
  for (const ProcessFacts* f : e.all_through)
    if (f->proc->rank >= 0) through_ranks.push_back(f->proc->rank);
  std::sort(odd_ranks.begin(), odd_ranks.end());
  std::sort(through_ranks.begin(), through_ranks.end());
  std::vector<std::string> elsewhere, reached;
  for (const auto& [addr, ms] : e.by_answer) elsewhere.push_back(addr);
  for (const auto& [addr, ps] : e.through) reached.push_back(addr);
  out.discriminators.set("ranks_resolved_elsewhere", RankSet{odd_ranks});
  out.discriminators.set("resolved_elsewhere_to", NameList{elsewhere});
  out.discriminators.set("ranks_that_reached_the_store", RankSet{through_ranks});
  out.discriminators.set("resolved_where_the_store_was_reached", NameList{reached});
  std::set<std::string> odd_hosts;
  for (const ProcessFacts* f : e.odd) odd_hosts.insert(f->proc->host);
  out.discriminators.set("hosts_resolved_elsewhere",
                         NameList{{odd_hosts.begin(), odd_hosts.end()}});
  return out;
}

// Log-only, cause peer_address (issue 29): a rank's gloo (or NCCL) connection to the address a
// peer published went unanswered (log_facts.h, peer_unanswered). gloo's connectFullMesh starts
// once every rank has published its address through the store and read the others' (the
// store's get returns only once the key is there): the peer was up and listening. SYNs that
// nobody answers, or no route, to that address, and on the passive side no connect arriving in
// time, say the address is not reachable from the other node: without GLOO_SOCKET_IFNAME a rank
// publishes what its host name resolves to, an interface the other nodes may have no path to (a
// management network, a VPN's far side, a container's bridge). A refused connect is not this
// (the host answered, nothing listened: a peer gone, or the loopback trap of
// rule_stale_peer_address). Only with no store error in the logs: the store was reached.
std::vector<PeerUnanswered> unanswered_peer_lines(const LogFacts& logs) {
  std::vector<PeerUnanswered> out;
  for (const LogEvent& e : logs.other_errors)
    if (auto u = peer_unanswered(e)) out.push_back(*u);
  return out;
}

std::string peer_address_words(const PeerUnanswered& u) {
  const LogEvent& e = *u.line;
  const std::string where = e.file + ":" + std::to_string(e.line);
  const std::string who = e.rank >= 0 ? "rank " + std::to_string(e.rank) : std::string("a rank");
  if (u.active)
    return who + "'s connect to the address a peer published through the store, " + e.host +
           (e.port ? ":" + std::to_string(*e.port) : std::string()) + ", went unanswered (" + where +
           ", SYNs unanswered or no route)";
  return who + " waited in vain for a peer to connect to the address it had published through the store (" + where +
         ": gloo's full mesh timed out)";
}

// What the peer had done through the store before the connect.
std::string after_the_store(const LogEvent& e) {
  if (e.text.find("NCCL") != std::string::npos)
    return "the peer had published its bootstrap address through it (NCCL connects only to addresses read there)";
  return "every rank had published its address through it (gloo's full mesh starts only then)";
}

std::optional<Candidate> peer_address_from_logs(const Context& c) {
  if (c.has_traces() || c.logs.any_rendezvous_error()) return std::nullopt;
  const std::vector<PeerUnanswered> lines = unanswered_peer_lines(c.logs);
  if (lines.empty()) return std::nullopt;
  const auto active = std::find_if(lines.begin(), lines.end(), [](const PeerUnanswered& u) { return u.active; });
  const PeerUnanswered& shown = active != lines.end() ? *active : lines.front();
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StoreUnreachable;
  v.cause = "peer_address";
  v.confidence = active != lines.end() ? "medium" : "low";
  v.summary = peer_address_words(shown) + ": the store worked and " + after_the_store(*shown.line) +
              ", so the peer was up; the address it published is not reachable from the other node (without "
              "GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME a rank publishes what its host name resolves to, or the first "
              "interface it finds, which may be one the other nodes have no path to)";
  v.next_step = "set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) on every node to the interface the nodes share "
                "(`ip -br addr`); check what each node's host name resolves to (`getent hosts $(hostname)`) and that "
                "each node reaches the others' address on it (`nc -vz ADDR PORT`, `rdzvscope preflight`)";
  out.findings.push_back(log_finding(FailureClass::StoreUnreachable, *shown.line));
  out.alternatives.push_back({FailureClass::RankDied, std::nullopt,
                              "the peer's node went down after the peer published its address: a dead host answers "
                              "no SYN either",
                              "the peer's own log (did it go on to its collective, or end?) and its node's uptime"});
  return out;
}

}  // namespace

std::optional<Candidate> rule_store_unreachable(const Context& c) {
  if (auto elsewhere = resolved_elsewhere(c)) return elsewhere;
  const std::optional<UnreachableStore> s = find_unreachable_store(c);
  if (!s) {
    if (auto peer = peer_address_from_logs(c)) return peer;
    return store_unreachable_from_calls_in_flight(c);
  }
  const ProcessFacts& first = *s->blocked.front().f;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StoreUnreachable;
  v.cause = s->any_refused ? "refused" : "unreachable";
  v.confidence = "high";
  v.initiating_rank = rank_of(first);
  v.initiating_host = first.proc->host;
  unreachable_findings(c, *s, out);
  v.summary = unreachable_summary(*s);
  v.next_step = unreachable_next_step(*s);
  unreachable_discriminators(*s, out);
  return out;
}

}  // namespace rdzvscope
