// straggler_timeout after the rendezvous, at the first collective: every rank joined and made
// its pairs, then one did not enter the first collective (it loads a checkpoint or builds a
// data cache after init_process_group) while the others did, waited for it under their
// timeout and failed (gloo: "Timed out waiting ... for recv operation"). The pairs' I/O says
// who entered (collective_phase.h). A rank that had not entered because it had died is dead,
// not late: rank_died and broken_pipe/peer_died name it (docs/classes.md, "Dead ranks").
#include <algorithm>
#include <cmath>
#include <csignal>

#include "rules.h"

namespace rdzvscope {

namespace {

constexpr const char* kPhase = "the first collective after the rendezvous";

// Alive at t: a record of its own or its launcher stopping it after t, or its pairs still open
// then (a frozen rank records nothing). A rank that had not entered and was over by then died
// before the collective: not a straggler.
bool alive_after(const Context& c, const CollectivePhase& ph, const ProcessFacts& f, std::int64_t t) {
  const Ending& e = c.ending(f);
  if (c.died_on_its_own(f) && e.over_ns && *e.over_ns <= t) return false;
  return e.last_seen_ns > t || (e.stopped() && e.sent_ns >= t) || ph.pairs_open_at(f, t);
}

std::vector<int> ranks_of(const std::vector<const RankCollective*>& rs) {
  std::vector<int> out;
  for (const RankCollective* r : rs) out.push_back(r->f->proc->rank);
  return out;
}

// The stalled ranks, alive when the first rank failed; nullopt when one of the ranks that
// had not entered was dead by then, or the first to fail had not entered either.
std::optional<std::vector<const RankCollective*>> stalled_ranks(const Context& c, const CollectivePhase& ph) {
  if (ph.entered.empty() || ph.not_entered.empty()) return std::nullopt;
  const RankCollective* first = ph.of(*ph.first_failed);
  if (!first || !first->entered_ns || *first->entered_ns > ph.first_failure_ns) return std::nullopt;
  for (const RankCollective* r : ph.not_entered)
    if (!alive_after(c, ph, *r->f, ph.first_failure_ns)) return std::nullopt;
  return ph.not_entered;
}

// Alive and silent while the others waited for it: no record of its own from before the first
// failure on and no exit of its own, though its pairs were still open then. A process that is
// stopped (SIGSTOP, job control, a debugger) or stuck in a wait the shim does not record leaves
// exactly this; one that only worked or slept long records its wake-up, unless it was killed
// first.
bool silent_while_waited_for(const Context& c, const CollectivePhase& ph, const RankCollective& r) {
  return c.ending(*r.f).last_seen_ns < ph.first_failure_ns && !r.f->proc->exit_ns;
}

// Its launcher's SIGTERM did not end it and a SIGKILL did, later: a process with Python's
// default handling ends at once on SIGTERM, asleep or busy; one that is stopped keeps the
// signal pending, and one in an uninterruptible wait (a hung file system) does not act on it.
bool outlived_sigterm(const Context& c, const ProcessFacts& f) {
  const Ending& e = c.ending(f);
  return e.stopped() && e.sent_signal == SIGTERM && e.how == Ending::How::Signaled && e.signal == SIGKILL;
}

// "it made its 3 pairs by +7.94 s and sent nothing on them until +19.95 s, 8.00 s after the
// first failure; it then exited with status 1 at +19.95 s"
std::string stalled_words(const Context& c, const CollectivePhase& ph, const RankCollective& r) {
  std::string s = "it made its " + std::to_string(r.pairs) + " pair connection(s) by " +
                  rel(c, r.pairs_done_ns.value_or(ph.completed_ns)) + " and sent nothing on them ";
  if (r.entered_ns)
    s += "until " + rel(c, *r.entered_ns) + ", " + fmt_seconds(seconds(ph.first_failure_ns, *r.entered_ns)) +
         " after the first failure";
  else
    s += "while it was traced";
  if (silent_while_waited_for(c, ph, r)) {
    const auto gone = ph.end_read_of(*r.f);
    s += "; it recorded nothing at all after " + rel(c, c.ending(*r.f).last_seen_ns) +
         ", yet its pairs stayed open " +
         (gone ? "until " + rel(c, *gone) : std::string("while the others ran (none of them read their end)")) +
         ": alive and doing nothing, as a frozen process is (stopped by SIGSTOP, job control or a debugger; "
         "a node that froze) or one stuck in a wait the shim does not record";
    if (outlived_sigterm(c, *r.f))
      s += "; its launcher's SIGTERM at " + rel(c, c.ending(*r.f).sent_ns) +
           " did not end it, only a SIGKILL did: it was stopped, or in an uninterruptible wait";
  }
  return s + "; it " + ending_words(c, *r.f);
}

// The ranks that entered: when, when they failed, how long they waited.
struct Waiters {
  std::vector<int> ranks;
  std::int64_t first_entered = 0, last_entered = 0, last_failure = 0;
  double longest_wait_s = 0;
};

Waiters waiters(const Context& c, const CollectivePhase& ph) {
  Waiters w;
  for (const RankCollective* r : ph.entered) {
    w.ranks.push_back(r->f->proc->rank);
    const std::int64_t in = *r->entered_ns;
    if (!w.first_entered || in < w.first_entered) w.first_entered = in;
    w.last_entered = std::max(w.last_entered, in);
    if (const auto t = c.failure_time(*r->f)) {
      w.last_failure = std::max(w.last_failure, *t);
      w.longest_wait_s = std::max(w.longest_wait_s, seconds(in, *t));
    }
  }
  return w;
}

std::string timeout_words(const CollectivePhase& ph) {
  return ph.timeout_ms ? " (their timeout: " + fmt_seconds(*ph.timeout_ms / 1000.0) + ")" : std::string();
}

void word_verdict(const Context& c, const CollectivePhase& ph, const std::vector<const RankCollective*>& stalled,
                  const Waiters& w, Verdict& v) {
  const RankCollective& s = *stalled.front();
  const Process& p = *s.f->proc;
  const bool one = stalled.size() == 1;
  const std::string who = one ? p.label() : "rank(s) " + rank_list(ranks_of(stalled));
  v.cls = FailureClass::StragglerTimeout;
  v.initiating_rank = rank_of(*s.f);
  v.initiating_host = p.host;
  v.confidence = "high";
  const double waited = seconds(w.first_entered, ph.first_failure_ns);
  // The op the waiting ranks were in, as their logs name it (NCCL's OpType, or the
  // distributed_c10d.py call of a gloo rank's traceback).
  const auto logged = first_logged_work(c.logs);
  const std::string op = logged ? " (" + logged->op + (logged->sequence ? ", SeqNum=" + std::to_string(*logged->sequence) : "") +
                                    ", as the waiting ranks' logs name it)"
                              : std::string();
  v.summary = who + " never entered " + kPhase + op + " (" + (one ? stalled_words(c, ph, s) : "none of them sent on its pairs") +
              "); rank(s) " + rank_list(w.ranks) + " entered it from " + rel(c, w.first_entered) +
              " and waited for " + (one ? "it" : "them") + ": " + ph.first_failed->proc->label() + " failed first at " +
              rel(c, ph.first_failure_ns) + ", " + fmt_seconds(waited) + " after entering" + timeout_words(ph);
  const double raise_to = std::ceil(std::max(waited, seconds(ph.completed_ns, s.entered_ns.value_or(w.last_failure))) * 1.5 + 1);
  const std::string work = "what " + (one ? p.label() : who) +
                           " does after init_process_group, before its first collective (a checkpoint load, a data "
                           "cache built on that rank only, data loading or preprocessing, storage on " + p.host + ")";
  if (one && silent_while_waited_for(c, ph, s))
    v.next_step = "find what froze " + p.label() + " after init_process_group: while it hangs, `grep State /proc/" +
                  std::to_string(p.pid) + "/status` on " + p.host +
                  " (T: stopped, by SIGSTOP, job control or a debugger; D: an uninterruptible wait, a hung file "
                  "system) and `py-spy dump --pid " + std::to_string(p.pid) + "`; if it was running, " + work +
                  "; the others' timeouts and errors are consequences";
  else
    v.next_step = "look at " + work + ": that work belongs before init_process_group, or needs "
                  "init_process_group(timeout=...) above " + fmt_seconds(raise_to) +
                  "; the others' timeouts and errors are consequences";
}

std::vector<Finding> findings(const Context& c, const CollectivePhase& ph, const std::vector<const RankCollective*>& stalled,
                              const Waiters& w) {
  std::vector<Finding> out;
  for (const RankCollective* r : stalled) {
    Finding fd = finding_for(FailureClass::StragglerTimeout, *r->f, r->pairs_done_ns);
    fd.evidence.push_back(r->f->proc->label() + ": never entered " + kPhase + ": " + stalled_words(c, ph, *r));
    out.push_back(fd);
  }
  Finding fd;
  fd.cls = FailureClass::StragglerTimeout;
  fd.evidence.push_back("rank(s) " + rank_list(w.ranks) + " sent their first collective messages from " +
                        rel(c, w.first_entered) + " to " + rel(c, w.last_entered) + " and failed by " +
                        rel(c, w.last_failure) + ", after waiting up to " + fmt_seconds(w.longest_wait_s) +
                        timeout_words(ph));
  out.push_back(fd);
  return out;
}

// The Flight Recorder's word on the same collective, beside the pairs' (fr_parting.h).
void add_flight_recorder_evidence(const Context& c, std::vector<Finding>& out) {
  if (!c.fr_parting) return;
  Finding fd;
  fd.cls = FailureClass::StragglerTimeout;
  fd.evidence.push_back("PyTorch's Flight Recorder dumps: " + fr_parting_words(*c.fr_parting));
  out.push_back(fd);
}

// Collective 1 of WORLD (group "0") is the first after init_process_group's rendezvous.
bool first_after_rendezvous(const FlightRecorderParting& p) { return p.sequence == 1 && p.pg_name == "0"; }

std::string fr_phase(const FlightRecorderParting& p) {
  return first_after_rendezvous(p) ? std::string(kPhase)
                         : "collective " + std::to_string(p.sequence) + " of process group " + p.pg_name;
}

void word_fr_verdict(const FlightRecorderParting& p, Verdict& v) {
  const bool one = p.behind.size() == 1;
  v.cls = FailureClass::StragglerTimeout;
  if (one) v.initiating_rank = p.behind.front();
  // A member without a dump may be the one the others waited for as well (dead, or alive and
  // never dumped): then the dumps name a straggler, not necessarily the only one.
  v.confidence = p.no_dump.empty() ? "high" : "medium";
  v.summary = "PyTorch's Flight Recorder dumps: " + fr_parting_words(p, first_after_rendezvous(p) ? kPhase : "") +
              (p.timeout_ms && p.kind == FlightRecorderParting::Kind::NeverEntered
                   ? "; their timeout: " + fmt_seconds(*p.timeout_ms / 1000.0)
                   : std::string());
  const std::string who = (one ? "rank " : "ranks ") + rank_list(p.behind);
  v.next_step = "look at what " + who + " did before " + fr_phase(p) +
                (first_after_rendezvous(p) ? " (after init_process_group: a checkpoint load, a data cache built on that rank only, "
                                   "data loading or preprocessing)"
                                 : " (its stack in the dump's frames, py-spy dump on a hung rank)") +
                "; work that long needs a larger timeout (init_process_group(timeout=...)) or belongs elsewhere; "
                "the others' timeouts are consequences";
}

}  // namespace

std::optional<Candidate> straggler_from_flight_recorder(const Context& c) {
  if (!c.fr_parting || c.fr_parting->kind == FlightRecorderParting::Kind::Undecided) return std::nullopt;
  const FlightRecorderParting& p = *c.fr_parting;
  Candidate out;
  word_fr_verdict(p, out.verdict);
  for (int r : p.behind) {
    Finding fd;
    fd.cls = FailureClass::StragglerTimeout;
    fd.rank = r;
    fd.evidence.push_back("rank " + std::to_string(r) + ": its dump's last collective of process group " + p.pg_name +
                          " is " + std::to_string(p.last_sequence.count(r) ? p.last_sequence.at(r) : 0) +
                          (p.late_ns.count(r) ? ", enqueued " + fmt_seconds(p.late_ns.at(r) / 1e9) +
                                                    " after the first rank's timeout in it had run out"
                                              : std::string()));
    out.findings.push_back(fd);
  }
  add_flight_recorder_evidence(c, out.findings);
  if (const auto hits = c.logs.of({LogFamily::WatchdogTimeout, LogFamily::GlooCollectiveTimeout}); !hits.empty())
    out.findings.push_back(log_finding(FailureClass::StragglerTimeout, *hits.front()));
  out.evidence.late_ranks = p.behind;
  out.evidence.phase = fr_phase(p);
  out.discriminators.set("phase", fr_phase(p));
  out.discriminators.set("late_ranks", RankSet{p.behind});
  out.discriminators.set("timed_out_ranks", RankSet{p.waited});
  if (p.timeout_ms) out.discriminators.set("collective_timeout", Seconds{*p.timeout_ms / 1000.0});
  return out;
}

std::optional<Candidate> straggler_at_first_collective(const Context& c) {
  if (!c.collective) return std::nullopt;
  const CollectivePhase& ph = *c.collective;
  const auto stalled = stalled_ranks(c, ph);
  if (!stalled) return std::nullopt;
  const Waiters w = waiters(c, ph);
  Candidate out;
  word_verdict(c, ph, *stalled, w, out.verdict);
  out.findings = findings(c, ph, *stalled, w);
  add_flight_recorder_evidence(c, out.findings);
  out.evidence.late_ranks = ranks_of(*stalled);
  out.evidence.phase = kPhase;
  out.discriminators.set("phase", std::string(kPhase));
  out.discriminators.set("late_ranks", RankSet{out.evidence.late_ranks});
  out.discriminators.set("timed_out_ranks", RankSet{w.ranks});
  out.discriminators.set("seconds_waited", Seconds{std::round(seconds(w.first_entered, ph.first_failure_ns) * 100) / 100});
  if (ph.timeout_ms) out.discriminators.set("collective_timeout", Seconds{*ph.timeout_ms / 1000.0});
  return out;
}

}  // namespace rdzvscope
