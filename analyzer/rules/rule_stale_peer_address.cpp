// stale_peer_address: torchrun restarted the workers (--max-restarts), and a worker of the new
// attempt was refused at an address that a worker of an earlier attempt had listened on. The
// workers' store is the agent's and outlives the restart, and the process group's keys carry no
// attempt: a worker that reads a peer's address before that peer published its new one gets
// the dead process's (PyTorch 2.13: `Gloo connectFullMesh failed ... Connection refused`).
#include <algorithm>
#include <cerrno>
#include <map>
#include <sys/socket.h>

#include <fmt/format.h>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// A listener on `local` takes connections to `dest`: the same port, and its own address or
// any address (a wildcard bind).
bool listened_at(const rdzv_sockaddr& local, const rdzv_sockaddr& dest) {
  if (local.port != dest.port) return false;
  return is_unspecified(local) || ipv6_form(local) == ipv6_form(dest);
}

// Where workers of earlier attempts listened outside the store, by port: gathered once, so
// that a job with many refused connects is not a scan of every process for each.
struct EarlierListen {
  const Process* proc;
  rdzv_sockaddr local;
};
using EarlierListens = std::multimap<std::uint16_t, EarlierListen>;

EarlierListens earlier_listens(const Context& c) {
  EarlierListens out;
  for (const Process& p : c.traces.processes) {
    if (p.role != Role::EarlierAttempt) continue;
    for (const Event& e : p.events)
      if (e.kind == RDZV_EV_LISTEN && e.ret == 0 && !e.on_store_socket())
        out.emplace(e.local().port, EarlierListen{&p, e.local()});
  }
  return out;
}

// A worker of an earlier attempt of the client's job that listened at the refused connect's
// destination and had ended before it.
const Process* earlier_listener(const EarlierListens& listens, const Process& client, const Event& refused) {
  const rdzv_sockaddr& dest = refused.peer();
  auto [from, to] = listens.equal_range(dest.port);
  for (auto it = from; it != to; ++it) {
    const Process& p = *it->second.proc;
    if (p.job_key != client.job_key || !listened_at(it->second.local, dest)) continue;
    if (is_loopback(dest) && loopback_scope(p) != loopback_scope(client)) continue;
    if (p.last_event_ns() > refused.wall_ns) continue;  // still alive then: not a dead address
    return &p;
  }
  return nullptr;
}

struct StaleConnect {
  const ProcessFacts* client = nullptr;
  const Event* refused = nullptr;
  const Process* earlier = nullptr;  // the worker of the earlier attempt that listened there
};

// Per worker of the attempt diagnosed, its first connect refused at an earlier attempt's
// address.
std::vector<StaleConnect> find_stale_connects(const Context& c) {
  std::vector<StaleConnect> out;
  const EarlierListens listens = earlier_listens(c);
  if (listens.empty()) return out;
  for (const auto& f : c.facts) {
    if (f.proc->rank < 0 || f.proc->restart_count <= 0) continue;
    for (const Event* e : f.peer_refused)
      if (const Process* p = earlier_listener(listens, *f.proc, *e)) {
        out.push_back({&f, e, p});
        break;
      }
  }
  std::sort(out.begin(), out.end(),
            [](const StaleConnect& a, const StaleConnect& b) { return a.refused->wall_ns < b.refused->wall_ns; });
  return out;
}

std::string stale_summary(const StaleConnect& first, std::size_t clients) {
  const std::string dest = format_sockaddr(first.refused->peer()).value_or("?");
  return fmt::format(
      "after torchrun restarted the workers, {} was refused at {}: the address that {} of attempt {} had "
      "listened on, a process that had ended; the workers' store outlived the restart and still held the "
      "earlier attempt's addresses{}",
      first.client->proc->label(), dest, first.earlier->label(), first.earlier->restart_count + 1,
      clients > 1 ? fmt::format(" ({} workers were sent to such addresses)", clients) : std::string());
}

std::string stale_next_step() {
  return "restart the whole job (new agents, a new store) rather than rely on torchrun --max-restarts, or give "
         "each attempt keys of its own: pass init_process_group a dist.PrefixStore named after "
         "TORCHELASTIC_RESTART_COUNT";
}

// gloo's own connection to a peer refused at a loopback address (gloo's "connect
// [127.0.1.1]:PORT: Connection refused"). Each rank publishes, through the store, the address
// its gloo device bound: without GLOO_SOCKET_IFNAME, what the node's own host name resolves to.
// Debian and Ubuntu map the host name to 127.0.1.1 in /etc/hosts, so a rank publishes a
// loopback address; a rank on another node connects to its own loopback there, where nothing
// listens on that port: refused. The peer was sent to an address where its peer is not, as
// with stale keys, but the address was wrong from the start. Not 127.0.0.1: that is localhost's
// own, which gloo binds on purpose for a job on one node (its fallback); a host name resolves
// to another loopback address (Debian's 127.0.1.1, nss-myhostname's 127.0.0.2). A refusal at
// 127.0.0.1 is a peer gone on the same node (a stale key, a dead rank), not this trap, unless
// gloo says it bound loopback for want of an address (its fallback warning, LogFacts::
// gloo_loopback_fallbacks): a host name that resolves to nothing publishes 127.0.0.1.
bool host_name_loopback(const std::string& host) { return host.rfind("127.", 0) == 0 && host != "127.0.0.1"; }

bool published_loopback(const LogFacts& logs, const std::string& host) {
  return host_name_loopback(host) || (host == "127.0.0.1" && !logs.gloo_loopback_fallbacks.empty());
}

const LogEvent* loopback_peer_refused(const LogFacts& logs) {
  for (const LogEvent& e : logs.other_errors)
    if (e.family == LogFamily::TransportError && e.err && *e.err == ECONNREFUSED && published_loopback(logs, e.host))
      return &e;
  return nullptr;
}

// Why the peer published a loopback address.
std::string loopback_reason(const LogFacts& logs, const std::string& host) {
  if (host == "127.0.1.1") return "its host name resolves to 127.0.1.1, as Debian and Ubuntu write it in /etc/hosts";
  if (host == "127.0.0.1") {
    const LogEvent& w = logs.gloo_loopback_fallbacks.front();
    return "its host name resolves to no address, so gloo bound loopback, as its warning at " + w.file + ":" +
           std::to_string(w.line) + " says";
  }
  return "its host name resolves to a loopback address";
}

std::optional<Candidate> loopback_peer_from_logs(const Context& c) {
  const LogEvent* e = loopback_peer_refused(c.logs);
  if (!e) return std::nullopt;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StalePeerAddress;
  v.cause = "loopback_peer_address";
  v.confidence = "low";
  // No initiating rank: every rank of such a node publishes the same loopback address.
  const std::optional<int> refused = rank_of(*e);
  v.summary = (refused ? "rank " + std::to_string(*refused) + "'s" : std::string("a rank's")) + " gloo connection to a peer was refused at the loopback address " + e->host +
              (e->port ? ":" + std::to_string(*e->port) : std::string()) +
              ": that peer published a loopback address as its own (" + loopback_reason(c.logs, e->host) +
              "), and a rank on another node reached its own loopback instead, where nothing listens";
  v.next_step = "`rdzvscope preflight` on each node (its own-name check), or `getent hosts $(hostname)`: map the "
                "host name to the node's network address in /etc/hosts, or set GLOO_SOCKET_IFNAME (and "
                "NCCL_SOCKET_IFNAME) to the interface the nodes share";
  out.findings.push_back(log_finding(FailureClass::StalePeerAddress, *e));
  out.alternatives.push_back(
      {FailureClass::RankDied, std::nullopt,
       "every rank ran on one node: the loopback address was right, and the peer that had listened there had ended "
       "before the connect",
       "whether the job spans nodes, and the peer's own log (did it die first?); `rdzvscope preflight` shows the "
       "own-name trap on a node that has it"});
  return out;
}

}  // namespace

std::optional<Candidate> rule_stale_peer_address(const Context& c) {
  const std::vector<StaleConnect> stale = find_stale_connects(c);
  if (stale.empty() && !c.has_traces()) return loopback_peer_from_logs(c);
  if (stale.empty()) return std::nullopt;
  Candidate out;
  for (const StaleConnect& s : stale) {
    Finding fd = finding_for(FailureClass::StalePeerAddress, *s.client, s.refused->wall_ns);
    fd.evidence.push_back(s.client->proc->label() + ": " + describe(*s.refused) + " at " + rel(c, s.refused->wall_ns) +
                          ", where " + s.earlier->label() + " of attempt " +
                          std::to_string(s.earlier->restart_count + 1) + " had listened (ended by " +
                          rel(c, s.earlier->last_event_ns()) + ")");
    out.findings.push_back(fd);
  }
  const StaleConnect& first = stale.front();
  Verdict& v = out.verdict;
  v.cls = FailureClass::StalePeerAddress;
  v.confidence = "high";
  v.summary = stale_summary(first, stale.size());
  v.next_step = stale_next_step();
  std::vector<int> ranks;
  for (const StaleConnect& s : stale) ranks.push_back(s.client->proc->rank);
  out.discriminators.set("refused_ranks", RankSet{ranks});
  out.discriminators.set("stale_address", format_sockaddr(first.refused->peer()).value_or("?"));
  out.discriminators.set("attempt", std::int64_t{first.client->proc->restart_count + 1});
  return out;
}

}  // namespace rdzvscope
