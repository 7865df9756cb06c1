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

}  // namespace

std::optional<Candidate> rule_stale_peer_address(const Context& c) {
  const std::vector<StaleConnect> stale = find_stale_connects(c);
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
