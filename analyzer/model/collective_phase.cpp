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

std::optional<CollectiveOutline> collective_outline(const Context& c) {
  if (!c.collective) return std::nullopt;
  const CollectivePhase& ph = *c.collective;
  CollectiveOutline out;
  out.completed_ns = ph.completed_ns;
  out.first_failure_ns = ph.first_failure_ns;
  if (ph.first_failed && ph.first_failed->proc->rank >= 0) out.first_failed_rank = ph.first_failed->proc->rank;
  out.timeout_ms = ph.timeout_ms;
  if (const auto w = first_logged_work(c.logs)) {
    out.op = w->op;
    out.sequence = w->sequence;
  }
  return out;
}

const char* part_name(CollectiveSpan::Part part) {
  switch (part) {
    case CollectiveSpan::Part::Waited: return "waited";
    case CollectiveSpan::Part::NeverEntered: return "never_entered";
    case CollectiveSpan::Part::EnteredLate: return "entered_late";
    case CollectiveSpan::Part::Dead: return "dead";
  }
  return "?";
}

const char* part_words(CollectiveSpan::Part part) {
  switch (part) {
    case CollectiveSpan::Part::Waited: return "waited in it";
    case CollectiveSpan::Part::NeverEntered: return "never entered";
    case CollectiveSpan::Part::EnteredLate: return "entered late";
    case CollectiveSpan::Part::Dead: return "dead";
  }
  return "?";
}

namespace {

bool has(const std::vector<int>& ranks, int rank) { return std::find(ranks.begin(), ranks.end(), rank) != ranks.end(); }

// Late means after the others had waited for it until one of them failed. A rank that entered
// after the first failure when that failure was a death entered as the others did: the dead
// rank kept them all from it.
CollectiveSpan::Part part_of(const CollectivePhase& ph, const RankCollective& r, const std::vector<int>& dead_ranks) {
  if (has(dead_ranks, r.f->proc->rank)) return CollectiveSpan::Part::Dead;
  if (!r.entered_ns) return CollectiveSpan::Part::NeverEntered;
  const bool first_failure_a_death = ph.first_failed && has(dead_ranks, ph.first_failed->proc->rank);
  return *r.entered_ns > ph.first_failure_ns && !first_failure_a_death ? CollectiveSpan::Part::EnteredLate
                                                                       : CollectiveSpan::Part::Waited;
}

}  // namespace

std::optional<CollectiveSpan> collective_span(const Context& c, const ProcessFacts& f, const std::vector<int>& dead_ranks) {
  if (!c.collective) return std::nullopt;
  const CollectivePhase& ph = *c.collective;
  const RankCollective* r = ph.of(f);
  if (!r || !r->pairs_done_ns) return std::nullopt;
  const Ending& e = c.ending(f);
  CollectiveSpan s;
  s.part = part_of(ph, *r, dead_ranks);
  const bool dead = s.part == CollectiveSpan::Part::Dead;
  // Its first pair connect is where it left the store's rendezvous (ProcessFacts::peer_connected_ns).
  s.begin_ns = f.peer_connected_ns.value_or(ph.completed_ns);
  s.pairs_done_ns = r->pairs_done_ns;
  s.entered_ns = r->entered_ns;
  // A dead rank was alive until its last record (or its exit); the others' part ended at their
  // failure in it (an error before it, such as a refused connect they survived, is not it).
  const std::int64_t last = f.proc->exit_ns.value_or(e.last_seen_ns);
  const auto failed = dead ? std::nullopt : c.failure_time(f);
  s.end_ns = std::max(s.begin_ns, failed && *failed >= s.begin_ns ? *failed : last);
  if (s.entered_ns && ph.timeout_ms) s.deadline_ns = *s.entered_ns + *ph.timeout_ms * 1'000'000;
  if (dead) {
    // Surely over only later than its last record (another rank read the end of its
    // connections, its parent reaped it); an exit record is its end itself.
    if (e.over_ns && *e.over_ns > s.end_ns) s.gone_ns = e.over_ns;
    s.ended = ending_short(c, f);
  }
  if (const auto w = f.proc->rank >= 0 ? first_logged_work(c.logs, f.proc->rank) : std::nullopt) {
    s.op = w->op;
    s.sequence = w->sequence;
  }
  return s;
}

}  // namespace rdzvscope
