// rank_died: a rank ended on its own (an exception, a non-zero exit, a signal no traced process
// sent: the OOM killer's SIGKILL) while the others still needed it, and they failed after it:
// stopped by their launcher (torchrun SIGTERMs the other workers once one failed), or failing
// on their side of what it left. The dead rank initiates; the others' ends are consequences.
// Where the others timed out waiting for it, or their connections to it broke, the classes of
// those symptoms (straggler_timeout, broken_pipe/peer_died) rank higher and name the dead rank
// in their own words (docs/classes.md, "Dead ranks").
#include <algorithm>
#include <csignal>
#include <map>

#include <fmt/format.h>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

std::string exitcode_words(int code) {
  if (code < 0) return "exit code " + std::to_string(code) + " (" + signal_name(-code) + ")";
  return "exit code " + std::to_string(code);
}

// What torchrun's summary says of one failure: "exit code 1, error file X, traceback: Y".
std::string summary_failure_words(const LogFacts::WorkerFailure& w) {
  std::string s = w.exitcode ? exitcode_words(*w.exitcode) : std::string("no exit code");
  if (!w.error_file.empty()) s += ", error file " + w.error_file;
  if (w.exception_line) s += ", exception (line " + std::to_string(w.exception_line) + "): " + w.exception.substr(0, 200);
  else if (!w.exception.empty()) s += ", exception: " + w.exception.substr(0, 200);
  else if (!w.traceback.empty()) s += ", traceback: " + w.traceback.substr(0, 200);
  return s;
}

// The ranks that failed after it, grouped by how they ended: stopped by one sender with one
// signal, or otherwise (ending_short), each group in one phrase.
std::string after_words(const Context& c, const Context::Death& d) {
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order;
  for (const ProcessFacts* g : d.after) {
    const Ending& e = c.ending(*g);
    std::string how;
    if (e.stopped())
      how = "were stopped by " + (e.signalled_by->role == Role::Agent
                                      ? "their launcher agent (" + e.signalled_by->pid_words() + " on " +
                                            e.signalled_by->host + ")"
                                      : e.signalled_by->label()) +
            " with " + signal_name(e.sent_signal) + " from " + rel(c, e.sent_ns) +
            (e.signalled_by->role == Role::Agent ? " (torchrun stops the other workers once one failed)" : "");
    else if (e.how == Ending::How::Vanished && g->proc->role != Role::Agent && c.parent_is_agent(*g->proc))
      how = "vanished after it (no exit record: killed by a signal; their torchrun agent stops the other "
            "workers once one failed)";
    else
      how = "failed after it (" + ending_short(c, *g) + ")";
    if (!groups.count(how)) order.push_back(how);
    groups[how].push_back(g->proc->rank);
  }
  std::string out;
  for (const std::string& how : order)
    out += (out.empty() ? "" : "; ") + std::string("rank(s) ") + rank_list(groups[how]) + " " + how;
  return out;
}

std::optional<Candidate> from_traces(const Context& c, const Context::Death& d) {
  const ProcessFacts& f = *d.f;
  const Process& p = *f.proc;
  const Ending& e = c.ending(f);
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RankDied;
  v.cause = e.how == Ending::How::Exited ? "exited" : e.oom_kill ? "oom_killed" : "killed";
  v.initiating_rank = rank_of(f);
  v.initiating_host = p.host;
  v.confidence = "high";
  // Rank 0 started by hand hosts the store (init_process_group's TCPStore server).
  const bool would_host = p.rank == 0 && !f.listen_ns && !c.parent_is_agent(p);
  const std::string where = f.arrival_ns() ? ""
                            : would_host ? " before it listened: it hosts the store, so nothing listened for the others"
                                         : " before it reached the store";
  const std::string crash = crash_words(c, f);
  v.summary = p.label() + " died first: it " + ending_words(c, f) + where + (crash.empty() ? "" : "; " + crash) +
              "; " + after_words(c, d) + ": consequences of its death, not failures of their own";
  if (e.how == Ending::How::Exited)
    v.next_step = "read " + p.label() + "'s crash" +
                  (crash.empty() ? std::string(" in its own log (its traceback, above its exit)") : " (" + crash + ")") +
                  " and fix what it died of; the other ranks' ends are consequences of its death";
  else if (e.oom_kill)
    v.next_step = oom_next_step(p, *e.oom_kill) + "; the other ranks' ends are consequences of its death";
  else
    v.next_step = "find what killed " + p.label() + ": `journalctl -k | grep -i -E 'oom|killed'` on " + p.host +
                  " around " + iso8601_utc(*e.over_ns) + " (the OOM killer, a scheduler's limit), and its own log; "
                  "the other ranks' ends are consequences of its death";
  Finding fd = finding_for(FailureClass::RankDied, f, e.over_ns);
  fd.evidence.push_back(p.label() + " " + ending_words(c, f) + where + ", with no rendezvous error of its own" +
                        (crash.empty() ? std::string() : "; " + crash));
  out.findings.push_back(fd);
  Finding others;
  others.cls = FailureClass::RankDied;
  others.evidence.push_back(after_words(c, d));
  out.findings.push_back(others);
  if (const auto* root = c.logs.root_cause()) {
    Finding s;
    s.cls = FailureClass::RankDied;
    s.evidence.push_back("torchrun's summary (" + root->file + ":" + std::to_string(root->line) +
                         ") names rank " + std::to_string(root->rank) + " as the first observed failure: " +
                         summary_failure_words(*root) +
                         (root->rank == p.rank ? std::string(" (the same rank)") : std::string(" (another rank than the traces show)")));
    out.findings.push_back(s);
  }
  out.evidence.dead_ranks.push_back(p.rank);
  std::vector<int> after;
  for (const ProcessFacts* g : d.after) after.push_back(g->proc->rank);
  out.discriminators.set("dead_rank_ending", ending_short(c, f));
  out.discriminators.set("failed_after_it", RankSet{after});
  return out;
}

// The root cause's exception line, read as a log line: one that no rendezvous family matches
// (only an exception, or nothing c10d says) is an error of the worker's own.
bool root_died_of_its_own_error(const LogFacts::WorkerFailure& root) {
  if (root.exception.empty()) return false;
  const auto e = rdzv::logs::classify_line(root.exception);
  return e && !rdzv::logs::is_rendezvous_message(e->family) && e->family != LogFamily::TransportError &&
         e->family != LogFamily::NcclNoSocketInterface;
}

// The ranks of a tie: the root cause torchrun named and the failures it saw in the same second.
std::vector<int> tie_ranks(const LogFacts::WorkerFailure& root, const std::vector<const LogFacts::WorkerFailure*>& tied) {
  std::vector<int> ranks{root.rank};
  for (const auto* w : tied) ranks.push_back(w->rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// A signal that ended a worker on its own: not the agent's SIGTERM (nor an interrupt's), nor
// SIGABRT (NCCL's watchdog aborts a rank whose collective timed out: a rank that waited).
bool killed_on_its_own(const LogFacts::WorkerFailure& w) {
  return w.exitcode && *w.exitcode < 0 && *w.exitcode != -SIGTERM && *w.exitcode != -SIGINT &&
         *w.exitcode != -SIGHUP && *w.exitcode != -SIGABRT;
}

// The failure of a tie that went first, and what shows it.
struct FirstInTie {
  enum class Why { KilledOnItsOwn, OwnError } why;
  const LogFacts::WorkerFailure* failure;
};

// Which failure of a tie went first: the one worker killed by a signal of its own (its peers then
// lost it), else from the workers' own lines (a rank prefix names them): a worker whose peer
// connection was closed or reset from its other end failed after that peer (gloo and NCCL lose a
// connection when the process at its other end ends), so the one worker of the tie with an
// error line of its own and none of these went first. nullopt when none or several do.
std::optional<FirstInTie> first_in_tie(const LogFacts& logs, const LogFacts::WorkerFailure& root,
                                       const std::vector<const LogFacts::WorkerFailure*>& tied) {
  std::vector<const LogFacts::WorkerFailure*> all{&root};
  all.insert(all.end(), tied.begin(), tied.end());
  const auto killed = std::count_if(all.begin(), all.end(), [](const auto* w) { return killed_on_its_own(*w); });
  if (killed == 1)
    return FirstInTie{FirstInTie::Why::KilledOnItsOwn,
                      *std::find_if(all.begin(), all.end(), [](const auto* w) { return killed_on_its_own(*w); })};
  if (killed > 1) return std::nullopt;
  const LogFacts::WorkerFailure* own = nullptr;
  int owners = 0;
  for (const auto* w : all) {
    bool peer_gone = false, error = false;
    for (const LogEvent& l : logs.other_errors) {
      if (l.rank != w->rank || l.rank < 0) continue;
      if (says_peer_went_away(l)) peer_gone = true;
      else if (l.family == LogFamily::ErrorLine && l.text.find("Traceback (most recent call last)") == std::string::npos)
        error = true;
    }
    if (error && !peer_gone) {
      own = w;
      ++owners;
    }
  }
  if (owners != 1) return std::nullopt;
  return FirstInTie{FirstInTie::Why::OwnError, own};
}

// torchrun's root cause where it was a tie: what it named, why that says nothing of the order,
// and which worker went first where that is known.
std::string tie_words(const LogFacts::WorkerFailure& root, const std::vector<const LogFacts::WorkerFailure*>& tied,
                      const std::optional<FirstInTie>& first) {
  std::string s = "torchrun's summary (" + root.file + ":" + std::to_string(root.line) + ") names rank " +
                  std::to_string(root.rank) + " as the first observed failure (" + summary_failure_words(root) +
                  "), but it saw rank(s) " + rank_list(tie_ranks(root, tied)) + " fail in the same second (" + root.time +
                  ") and then names the lowest local rank: that says nothing of which failed first";
  if (!first) return s;
  const LogFacts::WorkerFailure& w = *first->failure;
  if (first->why == FirstInTie::Why::KilledOnItsOwn)
    return s + "; rank " + std::to_string(w.rank) + " was ended by " + exitcode_words(*w.exitcode) +
           ", a signal its agent does not send first, and the others exited of its loss: rank " +
           std::to_string(w.rank) + " went first";
  return s + "; rank " + std::to_string(w.rank) + " failed of an error of its own (" + summary_failure_words(w) +
         ") while the others' connections were closed or reset by their peer (consequences): rank " +
         std::to_string(w.rank) + " went first";
}

// torchrun's own summary: the root cause it names, when nothing in the logs (nor a trace) shows
// a rendezvous error that would explain it.
std::optional<Candidate> from_logs(const Context& c) {
  const auto* root = c.logs.root_cause();
  if (!root || root->rank < 0) return std::nullopt;
  // Issue 29: a worker ended by a signal of its own (SIGKILL: the OOM killer; SIGSEGV) died
  // whatever the others logged after it; one that exited may have exited of their rendezvous
  // error, so then only where the logs hold none.
  // SIGABRT is no such signal: NCCL's watchdog aborts a rank whose collective timed out (the
  // C++ "terminate called after throwing ... DistBackendError"), a rank that waited.
  const bool root_killed_on_its_own = killed_on_its_own(*root);
  // Likewise a worker whose own exception, as the summary or its output shows it, is no
  // rendezvous error (a CUDA out-of-memory, a bug): it died of that, and the others' store or
  // collective errors are what waiting for it, or losing it, did to them.
  const bool own_error = root_died_of_its_own_error(*root);
  // With traces the traces order the deaths (from_traces); the summary is read as before.
  const bool died_of_its_own = !c.has_traces() && (root_killed_on_its_own || own_error);
  if (!died_of_its_own && c.logs.any_rendezvous_error()) return std::nullopt;
  if (std::any_of(c.facts.begin(), c.facts.end(), [](const ProcessFacts& f) { return f.first_error != nullptr; }))
    return std::nullopt;
  // torchrun's agent stops the other workers with SIGTERM (SIGKILL only when SIGTERM did not end
  // them within 30 s). A worker its summary lists as ended by another signal (-9 SIGKILL, -11
  // SIGSEGV, -6 SIGABRT) was killed by something else: it died on its own. The agent sees its
  // workers' ends only at each poll, and gives workers it caught in one poll the time of that
  // poll, so when the root cause it names exited with a status while such a worker was killed,
  // the killed one most likely went first (the others' exits are what gloo's "Connection reset
  // by peer" does to them): it is named, at low confidence, with what torchrun said.
  const LogFacts::WorkerFailure* killed = nullptr;
  int killed_count = 0;
  for (const auto& w : c.logs.worker_failures)
    if (w.file == root->file && w.origin == root->origin && w.rank >= 0 && w.exitcode && *w.exitcode < 0 &&
        *w.exitcode != -SIGTERM && (w.line <= root->line && root->line - w.line < 400)) {
      killed = &w;
      ++killed_count;
    }
  if (killed_count == 1 && killed != root && root->exitcode && *root->exitcode > 0) {
    Candidate out;
    Verdict& v = out.verdict;
    v.cls = FailureClass::RankDied;
    v.cause = "killed";
    v.initiating_rank = killed->rank;
    v.confidence = "low";
    v.summary = "torchrun's summary (" + killed->file + ":" + std::to_string(killed->line) + ") lists rank " +
                std::to_string(killed->rank) + " ended by " + exitcode_words(*killed->exitcode) +
                ", a signal its agent does not send first: it died on its own (the OOM killer?); torchrun names rank " +
                std::to_string(root->rank) + " (" + exitcode_words(*root->exitcode) +
                ") the first observed failure, but its agent sees its workers' ends only at each poll, and the "
                "others' exits most likely followed rank " + std::to_string(killed->rank) + "'s death";
    v.next_step = "find what killed rank " + std::to_string(killed->rank) +
                  " (`journalctl -k | grep -i -E 'oom|killed'` on its node); rerun under rdzvscope run to see the order";
    Finding fd;
    fd.cls = FailureClass::RankDied;
    fd.rank = killed->rank;
    fd.evidence.push_back(killed->file + ":" + std::to_string(killed->line) + ": rank " + std::to_string(killed->rank) +
                          ", " + summary_failure_words(*killed));
    out.findings.push_back(fd);
    return out;
  }
  // The workers the agent stopped (SIGTERM, once it saw a failure) came after: no contenders.
  auto tied = c.logs.tied_with(*root);
  std::erase_if(tied, [](const LogFacts::WorkerFailure* w) { return w->exitcode && *w->exitcode == -SIGTERM; });
  const std::optional<FirstInTie> in_tie = tied.empty() ? std::nullopt : first_in_tie(c.logs, *root, tied);
  const LogFacts::WorkerFailure* first = tied.empty() ? root : in_tie ? in_tie->failure : nullptr;
  const LogFacts::WorkerFailure& named = first ? *first : *root;
  Candidate out;
  out.death_shown = died_of_its_own;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RankDied;
  v.cause = named.exitcode && *named.exitcode < 0 ? "killed" : "exited";
  // A tie the workers' lines do not settle names no rank: any of them may have gone first.
  if (first) v.initiating_rank = named.rank;
  v.confidence = first ? "medium" : "low";
  std::string crash;
  for (const LogEvent& l : c.logs.other_errors)  // its exception, where a prefix or file names it
    if (first && l.rank == named.rank && l.family == LogFamily::ErrorLine &&
        l.text.find("Traceback (most recent call last)") == std::string::npos)
      crash = "; its exception: " + log_line_words(l);
  std::map<std::string, std::vector<int>> others;
  for (const auto& w : c.logs.worker_failures)
    if (&w != &named && w.file == root->file && w.origin == root->origin && w.rank >= 0)
      others[w.exitcode ? exitcode_words(*w.exitcode) : "no exit code"].push_back(w.rank);
  std::string rest;
  for (const auto& [code, ranks] : others)
    rest += "; rank(s) " + rank_list(ranks) + " " + code +
            (code.find("SIGTERM") != std::string::npos ? ": the agent stopped them once it had failed" : "");
  v.summary = (tied.empty() ? "torchrun's summary (" + root->file + ":" + std::to_string(root->line) + ") names rank " +
                                  std::to_string(root->rank) + " as the first observed failure: " +
                                  summary_failure_words(*root)
                            : tie_words(*root, tied, in_tie)) +
              crash + rest +
              (died_of_its_own && root_killed_on_its_own ? "; a signal torchrun does not send first: it died on its own, the others' errors "
                                          "and ends are consequences"
               : !c.logs.any_rendezvous_error()
                   ? (first ? "; the logs hold no rendezvous error: it died on its own, the others' ends are consequences"
                            : "; the logs hold no rendezvous error: one of them died on its own, the others' ends are "
                              "consequences")
                   : "; its own error is no rendezvous error: it died of it, the others' store and collective "
                     "errors are consequences");
  const bool named_killed = named.exitcode && *named.exitcode < 0;
  v.next_step = !first ? "read the output of rank(s) " + rank_list(tie_ranks(*root, tied)) +
                             " above torchrun's summary: the one whose error is its own (not a connection closed or "
                             "reset by its peer) went first; rerun under rdzvscope run to see the order"
                : named_killed ? "find what killed rank " + std::to_string(named.rank) +
                                     " (`journalctl -k | grep -i -E 'oom|killed'` on its node: the OOM killer, a limit); "
                                     "rerun under rdzvscope run to see when"
                               : "read rank " + std::to_string(named.rank) +
                                     "'s own output above torchrun's summary (its traceback; decorate its main with "
                                     "torch.distributed.elastic.multiprocessing.errors.record to have torchrun print it) and "
                                     "fix what it died of";
  Finding fd;
  fd.cls = FailureClass::RankDied;
  if (first) fd.rank = named.rank;
  fd.evidence.push_back(root->file + ":" + std::to_string(root->line) + ": Root Cause (first observed failure): rank " +
                        std::to_string(root->rank) + " (local_rank " + std::to_string(root->local_rank) + "), " +
                        summary_failure_words(*root) + (root->pid ? ", pid " + std::to_string(*root->pid) : std::string()) +
                        (tied.empty() ? std::string() : ", seen in the same second as " + std::to_string(tied.size()) +
                                                            " other failure(s) (" + root->time + ")"));
  out.findings.push_back(fd);
  return out;
}

}  // namespace

std::optional<Candidate> rule_rank_died(const Context& c) {
  // A rank that only left early (exit 0) did not die: its peers' broken connections name it
  // (broken_pipe/peer_died), this class does not.
  if (const auto d = c.first_death()) {
    if (d->left) return std::nullopt;
    return from_traces(c, *d);
  }
  if (auto summary = from_logs(c)) return summary;
  return rank_died_from_reported_deaths(c);
}

}  // namespace rdzvscope
