#include "name_answers.h"

#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <set>

#include "address.h"
#include "context.h"

namespace rdzvscope {

namespace {

// An address as the store's clients can compare it: its 16 bytes and, for a loopback
// address, the network namespace it leads into (another namespace's 127.0.0.1 is another host).
using Where = std::pair<std::array<std::uint8_t, 16>, std::string>;

Where where(const rdzv_sockaddr& a, const Process& p) {
  return {ipv6_form(a), is_loopback(a) ? loopback_scope(p) : std::string()};
}

bool same_address(const rdzv_sockaddr& a, const rdzv_sockaddr& b) {
  return (a.family == AF_INET || a.family == AF_INET6) && ipv6_form(a) == ipv6_form(b);
}

bool has_address(const rdzv_sockaddr& a) {
  return (a.family == AF_INET || a.family == AF_INET6) && !is_unspecified(a);
}

// The addresses at which some process reached the store, by store port; and, by name and
// port, the ones its lookup of that name gave (the name led it there).
struct Reached {
  std::map<std::uint16_t, std::set<Where>> at;
  std::map<std::pair<std::string, std::uint16_t>, std::set<Where>> by_name;
  bool anywhere(std::uint16_t port, const Where& w) const {
    auto it = at.find(port);
    return it != at.end() && it->second.count(w);
  }
  // A place that the process at `scope` could compare with its own answer: a network address,
  // or a loopback one of its own namespace.
  bool comparable(const std::string& name, std::uint16_t port, const std::string& scope) const {
    auto it = by_name.find({name, port});
    if (it == by_name.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const Where& w) { return w.second.empty() || w.second == scope; });
  }
};

// Its store connects that succeeded, with the store port.
void note_reached(const ProcessFacts& f, Reached& r) {
  for (const Event& e : f.proc->events) {
    if (!e.is_connect() || !e.on_store_socket() || !e.succeeded() || e.has(RDZV_F_PREEXISTING))
      continue;
    const rdzv_sockaddr& peer = e.peer();
    if (!has_address(peer)) continue;
    r.at[peer.port].insert(where(peer, *f.proc));
    for (const Event* l : f.resolves)
      if (l->ret == 0 && same_address(l->resolve().first, peer))
        r.by_name[{l->resolve().host, peer.port}].insert(where(peer, *f.proc));
  }
  // A store that listened on one address (not the wildcard) is at that address.
  for (const Event& e : f.proc->events)
    if (e.kind == RDZV_EV_LISTEN && e.on_store_socket() && e.ret == 0 && has_address(e.local()))
      r.at[e.local().port].insert(where(e.local(), *f.proc));
}

// Its failed store connects (refused, timed out, unreachable), in time order.
std::vector<const Event*> failed_connects(const ProcessFacts& f) {
  std::vector<const Event*> out = f.refused;
  out.insert(out.end(), f.connect_timeouts.begin(), f.connect_timeouts.end());
  out.insert(out.end(), f.connect_other_failures.begin(), f.connect_other_failures.end());
  std::sort(out.begin(), out.end(),
            [](const Event* a, const Event* b) { return a->wall_ns < b->wall_ns; });
  return out;
}

std::optional<Misdirected> misdirected(const ProcessFacts& f, const Reached& reached) {
  if (f.connected_ns || f.proc->role == Role::Helper) return std::nullopt;
  const std::vector<const Event*> failed = failed_connects(f);
  for (const Event* l : f.resolves) {
    if (l->ret != 0 || !has_address(l->resolve().first)) continue;
    Misdirected m;
    m.f = &f;
    m.name = l->resolve().host;
    m.answer = l->resolve().first;
    m.lookup = l;
    for (const Event* e : failed)
      if (same_address(e->peer(), m.answer) && (!m.port || e->peer().port == m.port)) {
        m.port = e->peer().port;
        m.attempts.push_back(e);
      }
    if (m.attempts.empty()) continue;
    for (const Event& e : f.proc->events)
      m.connects += e.kind == RDZV_EV_CONNECT && e.on_store_socket() &&
                    same_address(e.peer(), m.answer) && e.peer().port == m.port;
    const Where w = where(m.answer, *f.proc);
    if (reached.anywhere(m.port, w)) continue;  // the store was there: the path failed
    if (!reached.comparable(m.name, m.port, loopback_scope(*f.proc))) continue;
    return m;
  }
  return std::nullopt;
}

}  // namespace

std::vector<Misdirected> find_misdirected(const std::vector<ProcessFacts>& facts) {
  Reached reached;
  for (const ProcessFacts& f : facts)
    if (f.connected_ns && f.proc->role != Role::Helper) note_reached(f, reached);
  if (reached.by_name.empty()) return {};
  std::vector<Misdirected> out;
  for (const ProcessFacts& f : facts)
    if (auto m = misdirected(f, reached)) out.push_back(std::move(*m));
  std::stable_sort(out.begin(), out.end(), [](const Misdirected& a, const Misdirected& b) {
    return a.attempts.front()->wall_ns < b.attempts.front()->wall_ns;
  });
  return out;
}

std::vector<ReachedThrough> reached_through(const std::vector<ProcessFacts>& facts,
                                            const std::string& name, std::uint16_t port) {
  std::vector<ReachedThrough> out;
  for (const ProcessFacts& f : facts) {
    if (!f.connected_ns || f.proc->role == Role::Helper) continue;
    for (const Event& e : f.proc->events) {
      if (!e.is_connect() || !e.on_store_socket() || !e.succeeded() || e.peer().port != port)
        continue;
      const auto l = std::find_if(f.resolves.begin(), f.resolves.end(), [&](const Event* x) {
        return x->ret == 0 && x->resolve().host == name &&
               same_address(x->resolve().first, e.peer());
      });
      if (l == f.resolves.end()) continue;
      out.push_back({&f, e.peer()});
      break;
    }
  }
  return out;
}

}  // namespace rdzvscope
