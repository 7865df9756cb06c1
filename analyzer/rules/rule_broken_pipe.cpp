// broken_pipe: EPIPE/ECONNRESET (or a 0-byte read) on a store socket of a rank that failed.
// Cause peer_died when the process at the other end (usually the store host) ended before
// the error; otherwise, with the store still up, the TCPStore bug of PyTorch <= 2.7.
#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// The process on the other end of a store socket: the store host for a client socket, the
// client (matched by its local port) for a socket the server accepted. Over loopback the
// other end is in the same network namespace: another namespace's 127.0.0.1 is another host.
const ProcessFacts* peer_of(const Context& c, const ProcessFacts& self, const Event& e) {
  const std::uint16_t peer_port = e.peer().port;
  const bool over_loopback = is_loopback(e.peer());
  for (const auto& f : c.facts) {
    if (&f == &self) continue;
    if (over_loopback && loopback_scope(*f.proc) != loopback_scope(*self.proc)) continue;
    if (f.listens_on(peer_port)) return &f;
    for (const Event& x : f.proc->events)
      if (x.is_connect() &&
          x.local().port == peer_port && x.peer().port == e.local().port)
        return &f;
  }
  return nullptr;
}

// How a peer's death stands to the first broken pipe, in words that match the times: a
// process's exit is recorded after its sockets were closed, so a death a few ms after the
// first error seen by another rank still came first, but is not written as "before" it.
std::string death_before_pipe_words(const Context& c, std::int64_t died_at, std::int64_t first_pipe_ns) {
  if (died_at <= first_pipe_ns) return ", before the first broken pipe at " + rel(c, first_pipe_ns);
  return fmt::format(", {:.0f} ms after the first broken pipe at {} (its exit is recorded after its "
                     "sockets were closed: the close came first)",
                     (died_at - first_pipe_ns) / 1e6, rel(c, first_pipe_ns));
}

// A failed rank's first broken store connection, and the process at its other end.
struct PipeHit {
  const ProcessFacts* f;
  const Event* e;
  const ProcessFacts* peer;
};

// The broken store connections, traced and logged, and the other end that died first.
struct BrokenPipes {
  std::vector<PipeHit> hits;
  std::vector<const LogEvent*> log_hits;
  const ProcessFacts* dead = nullptr;  // the earliest unexplained death at the other end
  std::int64_t died_at = 0;
  bool store_closed = false;  // logs only: 0-byte reads after the store's constructor
  bool keep_alive = false;    // logs only: a torchrun agent's keep-alive to the store failed
};

std::optional<PipeHit> first_pipe_failure(const Context& c, const ProcessFacts& f) {
  const Event* first = nullptr;
  for (const Event* e : f.io_failures)
    if (e->err == EPIPE || e->err == ECONNRESET) {
      first = e;
      break;
    }
  for (const Event* e : f.zero_reads)
    if (!first || e->wall_ns < first->wall_ns) {
      first = e;
      break;
    }
  if (!first) return std::nullopt;
  return PipeHit{&f, first, peer_of(c, f, *first)};
}

const ProcessFacts* facts_of(const Context& c, const Process* p) {
  for (const auto& f : c.facts)
    if (f.proc == p) return &f;
  return nullptr;
}

std::vector<PipeHit> find_pipe_hits(const Context& c) {
  std::vector<PipeHit> hits;
  for (const auto& f : c.facts) {
    if (!f.failed()) continue;  // a pipe that breaks at a clean shutdown is no failure
    if (auto h = first_pipe_failure(c, f)) hits.push_back(*h);
  }
  // The other side of a dead rank's store connection: the store host reads its end (0 bytes,
  // or a reset) when the kernel closes the sockets of the rank that died, which never closed
  // that socket itself. A read that only the store's side makes, so not among the store
  // host's own failures (rank_facts.cpp): counted here for the first rank that died, when the
  // store host failed after it.
  if (const auto death = c.first_death()) {
    const Ending& e = c.ending(*death->f);
    const ProcessFacts* reader = facts_of(c, e.hangup_seen_by);
    const bool counted = std::any_of(hits.begin(), hits.end(), [&](const PipeHit& h) { return h.f == reader; });
    if (e.hangup_event && reader && reader->failed() && !counted) hits.push_back({reader, e.hangup_event, death->f});
  }
  return hits;
}

std::vector<const LogEvent*> find_pipe_log_lines(const Context& c) {
  auto log_hits = c.logs.of({LogFamily::BrokenPipe, LogFamily::ConnectionReset, LogFamily::SendRecvFailed});
  // A send/recv failure counts when its reason is a broken pipe or a reset, not a 0-byte read.
  // A single reset inside TCPStore's constructor is a fresh connection dropped (transient_recv);
  // one that c10d's connect/validate retries and words again ("- retrying (try=6, ...") kept
  // coming on every try: the path or the endpoint resets them, and it stays here.
  std::erase_if(log_hits, [&](const LogEvent* e) {
    return (!e->has(LogFamily::BrokenPipe) && !e->has(LogFamily::ConnectionReset) &&
            !(e->err && (*e->err == EPIPE || *e->err == ECONNRESET))) ||
           (in_store_constructor(c.logs, *e) && e->text.find(" - retrying (") == std::string::npos);
  });
  return log_hits;
}

// Issue 29: torchelastic's agent, once it joined, sends keep-alive heartbeats to the rendezvous
// store while its workers run ("The node 'N' has failed to send a keep-alive heartbeat to the
// rendezvous 'R' due to an error of type RendezvousConnectionError"): its store connection
// failed in mid-run. Those an agent logs after its own workers finished are its teardown, set
// aside already (settle_log_facts).
std::vector<const LogEvent*> keep_alive_failures(const Context& c) {
  auto hits = c.logs.of({LogFamily::RendezvousClosed});
  std::erase_if(hits, [](const LogEvent* e) {
    return e->text.find("failed to send a keep-alive heartbeat") == std::string::npos ||
           e->text.find("RendezvousConnectionError") == std::string::npos;
  });
  return hits;
}

// Issue 29: 0-byte reads after the store's constructor had passed (a wait's reply, the NCCL
// watchdog's check of its dump flag): c10d's server closes a validated client's connection only
// when it ends, so the store host had exited or crashed while this rank still used the store.
std::vector<const LogEvent*> store_closed_log_lines(const Context& c) {
  auto hits = c.logs.of({LogFamily::RecvZero});
  std::erase_if(hits, [&](const LogEvent* e) { return !closed_after_store_constructor(c.logs, *e); });
  return hits;
}

// Did the other end die first? The earliest such death is where the problem started.
void find_dead_peer(const Context& c, BrokenPipes& b) {
  for (const PipeHit& h : b.hits) {
    if (!h.peer) continue;
    const Process& p = *h.peer->proc;
    std::int64_t end = p.exit_ns ? *p.exit_ns : p.last_event_ns();
    // A peer that died of its own rendezvous error (it timed out waiting, say) is a
    // consequence of that error, which another rule names; only an unexplained death counts.
    // A process a traced launcher stopped (torchrun SIGTERMs the other workers once one
    // failed) did not die on its own either, nor one whose own log shows the error it died of
    // (gloo's "Connection closed by peer" on the store host, when another rank died first).
    const bool unexplained =
        ((p.vanished() && !c.ending(*h.peer).stopped()) || c.died_on_its_own(*h.peer) || c.left_early(*h.peer)) &&
        !c.gave_up_its_rendezvous(p);
    bool ended_first = unexplained && end <= h.e->wall_ns + 50'000'000;
    if (ended_first && (!b.dead || end < b.died_at)) {
      b.dead = h.peer;
      b.died_at = end;
    }
  }
}

// The log lines saying that a connection between ranks was closed or reset by its other end
// (gloo's pair errors), of the ranks that failed after the first rank that ended
// (Context::first_death), or of no rank known (a launcher's merged output): what its end did
// to them, where no store socket of theirs showed it (the shim records the store's sockets,
// not gloo's). Not the lines of the rank that ended.
std::vector<const LogEvent*> transport_lines_after(const Context& c, const Context::Death& d) {
  std::vector<const LogEvent*> out;
  for (const LogEvent& l : c.logs.other_errors) {
    if (l.family != LogFamily::TransportError || l.rank == d.f->proc->rank) continue;
    if (l.rank < 0 ||
        std::any_of(d.after.begin(), d.after.end(), [&](const ProcessFacts* g) { return g->proc->rank == l.rank; }))
      out.push_back(&l);
  }
  return out;
}

std::optional<BrokenPipes> find_broken_pipes(const Context& c) {
  BrokenPipes b;
  b.hits = find_pipe_hits(c);
  b.log_hits = find_pipe_log_lines(c);
  if (!c.has_traces() && b.log_hits.empty()) {
    b.log_hits = store_closed_log_lines(c);
    b.store_closed = !b.log_hits.empty();
  }
  if (!c.has_traces() && b.log_hits.empty()) {
    b.log_hits = keep_alive_failures(c);
    b.keep_alive = !b.log_hits.empty();
  }
  if (b.hits.empty() && b.log_hits.empty()) {
    const auto death = c.first_death();
    if (!death) return std::nullopt;
    b.log_hits = transport_lines_after(c, *death);
    if (b.log_hits.empty()) return std::nullopt;
    b.dead = death->f;
    b.died_at = death->by_ns;
    return b;
  }
  find_dead_peer(c, b);
  // No store connection broke at a dead end, but a rank proven first to die or leave
  // (Context::first_death) broke its peers' gloo connections: its end is where this began, and
  // a store connection that broke later (the store host exiting of its own reset) is one of
  // its consequences.
  if (!b.dead)
    if (const auto death = c.first_death()) {
      auto lines = transport_lines_after(c, *death);
      if (!lines.empty()) {
        b.log_hits = std::move(lines);
        b.dead = death->f;
        b.died_at = death->by_ns;
        return b;
      }
    }
  // A 0-byte read is a broken pipe only when the other end died; with the store alive it is
  // transient_recv's case. (torch 1.13 prints "Connection reset by peer" for a 0-byte read,
  // so with traces at hand their errno decides, not the log's wording.)
  const bool real_errno = std::any_of(b.hits.begin(), b.hits.end(), [](const PipeHit& h) { return h.e->err != 0; });
  if (!b.dead && !real_errno && (c.has_traces() || b.log_hits.empty())) return std::nullopt;
  return b;
}

const PipeHit* earliest_pipe_hit(const std::vector<PipeHit>& hits) {
  const PipeHit* first = nullptr;
  for (const PipeHit& h : hits)
    if (!first || h.e->wall_ns < first->e->wall_ns) first = &h;
  return first;
}

// The ranks that failed after the dead one, and their own errors in the logs: consequences.
std::string consequences_words(const Context& c, const ProcessFacts& dead) {
  const auto death = c.first_death();
  if (!death || death->f != &dead) return "";
  std::vector<int> ranks;
  for (const ProcessFacts* g : death->after) ranks.push_back(g->proc->rank);
  int lines = 0;
  for (const LogEvent& l : c.logs.other_errors)
    if (l.family == LogFamily::TransportError && l.rank != dead.proc->rank) ++lines;
  for (const LogEvent& l : c.logs.events)
    if ((l.has(LogFamily::BrokenPipe) || l.has(LogFamily::ConnectionReset)) && l.rank != dead.proc->rank) ++lines;
  return "; rank(s) " + rank_list(ranks) + " failed after it" +
         (lines ? " (their " + std::to_string(lines) +
                      " log line(s) of connections reset or closed by their peer are its consequences)"
                : std::string(death->left ? ": consequences of its leaving" : ": consequences of its death"));
}

void word_peer_died(const Context& c, const BrokenPipes& b, const PipeHit* first, Candidate& out) {
  Verdict& v = out.verdict;
  v.cause = "peer_died";
  v.initiating_rank = rank_of(*b.dead);
  v.initiating_host = b.dead->proc->host;
  v.confidence = "high";
  const Process& p = *b.dead->proc;
  const auto& oom = c.ending(*b.dead).oom_kill;
  std::string how = oom            ? "was killed by " + oom_kill_words(*oom)
                    : p.vanished() ? "vanished without an exit (killed by a signal, OOM killer?)"
                                   : "exited with status " + std::to_string(p.exit_status.value_or(-1));
  const std::string after = consequences_words(c, *b.dead);
  const bool left = c.left_early(*b.dead);
  if (!after.empty() && p.rank >= 0) out.evidence.dead_ranks.push_back(p.rank);
  if (!after.empty() && left)  // it returned while its peers still needed it: gone, not dead
    v.summary = p.label() + (b.dead->listen_ns ? ", the store host," : "") + " left the job early: it " +
                ending_words(c, *b.dead) + " once it had joined the rendezvous and connected to its peers, while they still needed it" + after;
  else if (!after.empty())  // a rank proven dead first (Context::first_death): how it ended, in full
    v.summary = p.label() + (b.dead->listen_ns ? ", the store host," : "") + " died: it " + ending_words(c, *b.dead) +
                after;
  else
    v.summary = p.label() + (b.dead->listen_ns ? ", the store host," : "") + " " + how + " at " +
                rel(c, b.died_at) + "; " + std::to_string(b.hits.size()) +
                " rank(s) then saw their store connection break";
  v.next_step = left ? "find why " + p.label() + " returned before the others: its own log, and the paths of the "
                       "script that end with status 0 before the work is done (an early return or sys.exit(0), a data "
                       "iterator that ran out before the other ranks')"
                     : oom ? oom_next_step(p, *oom)
                         : "find why " + p.label() + " died: its own log and `journalctl -k | grep -i -E 'oom|killed'` on " +
                               p.host + " around " + iso8601_utc(b.died_at);
  Finding fd = finding_for(FailureClass::BrokenPipe, *b.dead, b.died_at);
  fd.evidence.push_back(p.label() + " " + how + " at " + rel(c, b.died_at) +
                        (first ? death_before_pipe_words(c, b.died_at, first->e->wall_ns) : std::string()));
  out.findings.insert(out.findings.begin(), fd);
}

// Logs alone cannot say whether the other end died, and this PyTorch is past the bug. The
// words name the version the job ran, never the bug of releases it did not run.
void word_pipe_past_the_bug(const std::string& version, const BrokenPipes& b, Candidate& out) {
  Verdict& v = out.verdict;
  out.cause_shown = false;
  v.confidence = "low";
  const LogEvent* e = b.log_hits.front();
  out.findings.push_back(log_finding(FailureClass::BrokenPipe, *e));
  v.summary = "a store connection broke (PyTorch " + version +
              "): the store host or a peer most likely died or closed it; the logs do not say which";
  v.next_step = "look at the store host's log (rank 0, or the torchrun agent of the first node) for its "
                "end; rerun under rdzvscope run to see which process went first";
}

// Logs alone, 0-byte reads after the store's constructor: the store host's end closed.
void word_store_host_closed(const BrokenPipes& b, Candidate& out) {
  Verdict& v = out.verdict;
  out.cause_shown = false;
  v.confidence = "low";
  const LogEvent* e = b.log_hits.front();
  out.findings.push_back(log_finding(FailureClass::BrokenPipe, *e));
  v.summary = b.keep_alive
                  ? "a torchrun agent's keep-alive heartbeat to the rendezvous store failed (RendezvousConnectionError) "
                    "while its workers ran: the agent that hosts the store (that of the first node) most likely "
                    "ended, or the path to it broke, while this agent still used the store"
                  : "the store host closed its end of an established store connection (a 0-byte read after the store's "
                    "constructor had passed: c10d's server closes a client's connection only when it ends): the store "
                    "host (rank 0, or the torchrun agent of the first node) exited or crashed while this rank still "
                    "used the store";
  v.next_step = "read the store host's own log for its end (an exception, a kill, the OOM killer: `journalctl -k | grep "
                "-i -E 'oom|killed'` on its node), or whether it simply finished first and exited while the others "
                "still waited on the store (a barrier before exit fixes that)";
}

// What a break with the store up points at, by the version the job ran: the bug only where the
// job may have run a release that has it; past it, the path between the two ends first.
std::string suspects_words(const std::optional<TorchVersion>& tv) {
  if (tv && tv->known_newer_than(2, 7))
    return "something between the rank and the store reset or closed it (a firewall, a NAT or a load balancer "
           "dropping an established connection); this release is past the c10d TCPStore bug that broke such "
           "connections, so a failing rank that changes from run to run would be a new report to PyTorch";
  return "the c10d TCPStore bug of PyTorch 2.7 and older matches this when the failing rank changes from run to run";
}

// `store_seen_up`: traces show the store host alive after the break; logs cannot, and a store
// host that ended breaks its clients' connections the same way.
void word_tcpstore_bug(const std::optional<TorchVersion>& tv, const BrokenPipes& b, const PipeHit* first,
                       bool store_seen_up, Candidate& out) {
  Verdict& v = out.verdict;
  const std::string version = tv ? tv->words() : std::string();
  const bool old = tv && tv->known_at_most(2, 7);
  out.cause_shown = false;
  v.cause = "tcpstore_bug_suspected";
  v.confidence = old ? "medium" : "low";
  if (first) {
    v.initiating_rank = rank_of(*first->f);
    v.initiating_host = first->f->proc->host;
  } else {
    const LogEvent* e = b.log_hits.front();
    for (const LogEvent* x : b.log_hits)
      if (x->rank >= 0 && (e->rank < 0 || x->rank < e->rank)) e = x;
    v.initiating_rank = rank_of(*e);
    out.findings.push_back(log_finding(FailureClass::BrokenPipe, *e));
  }
  const std::string in_version = version.empty() ? std::string() : " (PyTorch " + version + ")";
  v.summary = store_seen_up ? "a store connection broke while the store stayed up" + in_version + ": " + suspects_words(tv)
                            : "a store connection broke and the logs show no process ending" + in_version + ": " +
                                  suspects_words(tv) +
                                  "; a store host that ended (rank 0, or the first node's torchrun agent) breaks its "
                                  "clients' connections the same way, which only its own log or a trace shows";
  v.next_step = !tv || old || !tv->known_newer_than(2, 7)
                    ? "check the PyTorch version (python -c 'import torch; print(torch.__version__)'); on 2.7 or older upgrade past 2.8 and rerun before debugging the network"
                    : "rerun on the same allocation: if the same rank fails again, look at that node's network; if it moves, report it to PyTorch with this diagnosis";
}

RankSet pipe_failed_ranks(const std::vector<PipeHit>& hits) {
  RankSet r;
  for (const PipeHit& h : hits)
    if (h.f->proc->rank >= 0) r.ranks.push_back(h.f->proc->rank);
  return r;
}

}  // namespace

std::optional<Candidate> rule_broken_pipe(const Context& c) {
  const std::optional<BrokenPipes> b = find_broken_pipes(c);
  if (!b) return std::nullopt;
  const PipeHit* first = earliest_pipe_hit(b->hits);
  Candidate out;
  out.verdict.cls = FailureClass::BrokenPipe;
  for (const PipeHit& h : b->hits) {
    Finding fd = finding_for(FailureClass::BrokenPipe, *h.f, h.e->wall_ns);
    fd.evidence.push_back(h.f->proc->label() + ": " + describe(*h.e) + " at " + rel(c, h.e->wall_ns));
    out.findings.push_back(fd);
  }
  const std::optional<TorchVersion>& version = c.torch_version;
  const bool past_the_bug = version && version->known_newer_than(2, 7);
  if (b->dead)
    word_peer_died(c, *b, first, out);
  else if (b->store_closed || b->keep_alive)
    word_store_host_closed(*b, out);
  else if (!c.has_traces() && past_the_bug)
    word_pipe_past_the_bug(version->words(), *b, out);
  else
    word_tcpstore_bug(version, *b, first, c.has_traces(), out);
  out.discriminators.set("failed_ranks", pipe_failed_ranks(b->hits));
  out.discriminators.set("pytorch", version ? DiscriminatorValue(version->words()) : DiscriminatorValue(NotKnown{}));
  return out;
}

}  // namespace rdzvscope
