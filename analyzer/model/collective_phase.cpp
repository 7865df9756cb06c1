#include "collective_phase.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <sys/socket.h>

#include "address.h"
#include "context.h"

namespace rdzvscope {

namespace {

// gloo 2.x's opening exchange on a pair: the connecting side writes the pair's 8-byte number
// right after its connect, the accepting side reads it (c10d-notes.md). A collective's
// messages are longer (a 48-byte header at least).
constexpr std::int64_t kOpeningBytes = 8;

bool is_peer_connection(const Event& e) {
  return e.has(RDZV_F_PEER) && e.ret >= 0 && e.err == 0 &&
         (e.kind == RDZV_EV_CONNECT || e.kind == RDZV_EV_CONNECT_DONE || e.kind == RDZV_EV_ACCEPT);
}

bool reads_peer_end(const Event& e) {
  if (!e.has(RDZV_F_PEER)) return false;
  if (e.kind == RDZV_EV_RECV && e.has(RDZV_F_ZERO_READ)) return true;
  return (e.kind == RDZV_EV_RECV || e.kind == RDZV_EV_SEND) && e.ret < 0 && (e.err == ECONNRESET || e.err == EPIPE);
}

// Whether the process's trace records its pairs at all (a shim that knows peer sockets).
bool records_pairs(const Process& p) {
  return std::any_of(p.events.begin(), p.events.end(), [](const Event& e) { return e.has(RDZV_F_PEER); });
}

RankCollective rank_collective(const ProcessFacts& f) {
  RankCollective r;
  r.f = &f;
  // Per descriptor: whether this side connected the pair, and whether a send was seen on it.
  struct Pair {
    bool connected_here = false;
    bool sent = false;
  };
  std::map<int, Pair> pairs;
  for (const Event& e : f.proc->events) {
    if (is_peer_connection(e)) {
      const int fd = e.kind == RDZV_EV_ACCEPT ? static_cast<int>(e.ret) : e.fd;
      pairs[fd] = Pair{e.kind != RDZV_EV_ACCEPT, false};
      ++r.pairs;
      r.pairs_done_ns = std::max(r.pairs_done_ns.value_or(0), end_ns(e));
      continue;
    }
    if (reads_peer_end(e) && !r.peer_gone_ns) r.peer_gone_ns = end_ns(e);
    if (!e.has(RDZV_F_PEER) || e.kind != RDZV_EV_SEND || e.ret <= 0) continue;
    Pair& p = pairs[e.fd];
    const bool opening = p.connected_here && !p.sent && e.ret <= kOpeningBytes;
    p.sent = true;
    if (opening) continue;
    if (!r.entered_ns) r.entered_ns = e.wall_ns;
    r.last_sent_ns = e.wall_ns;
  }
  return r;
}

// The timeout gloo set on the pairs: a socket timeout set on a socket that is not the store's
// once the process had reached the store (gloo sets it as it makes each pair).
std::optional<std::int64_t> pair_timeout(const RankCollective& r) {
  if (!r.f->connected_ns) return std::nullopt;
  for (const Event& e : r.f->proc->events)
    if (e.kind == RDZV_EV_SOCKOPT && !e.on_store_socket() && e.wall_ns >= *r.f->connected_ns &&
        (e.socket().size == SO_RCVTIMEO || e.socket().size == SO_SNDTIMEO) && plausible_timeout_ms(e.socket().timeout_ms))
      return e.socket().timeout_ms;
  return std::nullopt;
}

// The ranks' pairs as each side sees them (own end, other end), each with its rank.
std::map<Connection, const ProcessFacts*> pairs_by_connection(const std::vector<const ProcessFacts*>& ranks) {
  std::map<Connection, const ProcessFacts*> out;
  for (const ProcessFacts* f : ranks)
    for (const Event& e : f->proc->events)
      if (is_peer_connection(e) && e.local().port && e.peer().port)
        out.emplace(Connection{connection_end(e.local()), connection_end(e.peer())}, f);
  return out;
}

// Over loopback the other end is in the reader's own network namespace.
std::vector<CollectivePhase::EndRead> find_ends_read(const std::vector<const ProcessFacts*>& ranks) {
  const auto pairs = pairs_by_connection(ranks);
  std::vector<CollectivePhase::EndRead> out;
  for (const ProcessFacts* f : ranks)
    for (const Event& e : f->proc->events) {
      if (!reads_peer_end(e)) continue;
      CollectivePhase::EndRead r{f, nullptr, end_ns(e)};
      const auto it = pairs.find(Connection{connection_end(e.peer()), connection_end(e.local())});
      if (it != pairs.end() && it->second != f &&
          (!is_loopback(e.peer()) || loopback_scope(*it->second->proc) == loopback_scope(*f->proc)))
        r.other = it->second;
      out.push_back(r);
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.at_ns < b.at_ns; });
  return out;
}

}  // namespace

std::optional<std::int64_t> CollectivePhase::end_read_of(const ProcessFacts& f) const {
  for (const EndRead& r : ends_read)
    if (r.other == &f) return r.at_ns;
  return std::nullopt;
}

bool CollectivePhase::pairs_open_at(const ProcessFacts& f, std::int64_t t) const {
  return std::none_of(ends_read.begin(), ends_read.end(),
                      [&](const EndRead& r) { return r.at_ns < t && (!r.other || r.other == &f); });
}

const RankCollective* CollectivePhase::of(const ProcessFacts& f) const {
  for (const RankCollective& r : ranks)
    if (r.f == &f) return &r;
  return nullptr;
}

std::optional<CollectivePhase> find_collective_phase(const Context& c) {
  const auto completed = c.rendezvous_completed_ns();
  if (!completed) return std::nullopt;
  CollectivePhase out;
  out.completed_ns = *completed;
  for (const ProcessFacts* f : c.ranks()) {
    if (!records_pairs(*f->proc)) return std::nullopt;
    out.ranks.push_back(rank_collective(*f));
    if (!out.timeout_ms) out.timeout_ms = pair_timeout(out.ranks.back());
  }
  for (const RankCollective& r : out.ranks) {
    // A rank that vanished with nothing to say when (no exit, no launcher's signal, no end of
    // its connections read) may have failed any time after its last record, or much later (a
    // frozen rank killed at the end): it does not date the first failure.
    const Ending& e = c.ending(*r.f);
    if (e.how == Ending::How::Vanished && !e.stopped() && !e.over_ns) continue;
    const auto t = c.failure_time(*r.f);
    if (t && *t >= *completed && (!out.first_failed || *t < out.first_failure_ns)) {
      out.first_failed = r.f;
      out.first_failure_ns = *t;
    }
  }
  if (!out.first_failed) return std::nullopt;
  out.ends_read = find_ends_read(c.ranks());
  for (const RankCollective& r : out.ranks)
    (r.entered_ns && *r.entered_ns <= out.first_failure_ns ? out.entered : out.not_entered).push_back(&r);
  return out;
}

}  // namespace rdzvscope
