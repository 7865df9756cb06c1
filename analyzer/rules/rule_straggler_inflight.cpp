// straggler_timeout for a job that hung and was ended before any timeout fired (issue 27): the
// scheduler cancelled it at its time limit, or someone killed it, and no rank printed an error.
// The mechanism is c10d's: every rank that reached the store waits on it (a client for the
// others' keys, the store host's own client for WORLD_SIZE arrivals) until every rank has come
// or the timeout runs out. A rank that never reached the store, while the others were still in
// such a wait when they were ended, is the one they waited for, whether or not their timeout
// had run out. What shows it: the calls in flight in the trace files (trace_format.h), which
// survive the kill.
#include <algorithm>

#include <fmt/format.h>

#include "model/wait_for.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// A rank that never tried the store and was not blocked on its way there (a connect or a
// lookup in flight is another story: connect_timeout, name_resolution).
bool never_came(const ProcessFacts& f) {
  return !f.connect_wait && !f.lookup_wait && !f.first_error && !f.proc->cut_short;
}

// It exited, or a signal nobody traced sent ended it, as its parent saw: it did not wait to
// be cancelled (rank_died and the dead-rank words speak of it).
bool ended_on_its_own(const Context& c, const ProcessFacts& f) {
  const Ending& e = c.ending(f);
  return !e.stopped() && e.how != Ending::How::Vanished;
}

// The waiting ranks wait for ranks that never came (wait_for.h), and no rank has a story of
// its own: an error, an exit, a death, a rank blocked on its way to the store.
std::optional<WaitFor> find_cancelled_wait(const Context& c) {
  auto w = find_wait_for(c);
  if (!w || w->on != WaitFor::On::MissingRanks || !w->own_story.empty()) return std::nullopt;
  for (const ProcessFacts* f : w->missing)
    if (!never_came(*f) || ended_on_its_own(c, *f)) return std::nullopt;
  return w;
}

std::vector<int> ranks_of(const std::vector<const ProcessFacts*>& fs) {
  std::vector<int> out;
  for (const ProcessFacts* f : fs) out.push_back(f->proc->rank);
  return out;
}

// "rank 3 (vm pid 9689) never reached the store: its trace ends at +0.03 s, ..."
std::string missing_words(const Context& c, const ProcessFacts& f) {
  return f.proc->label() + " never reached the store; it " + ending_words(c, f);
}

std::string waiting_rank_words(const Context& c, const ProcessFacts& f) {
  return f.proc->label() + " reached the store at " + rel(c, *f.at_store_ns()) + " and " + ending_words(c, f);
}

}  // namespace

std::optional<Candidate> straggler_from_calls_in_flight(const Context& c) {
  auto found = find_cancelled_wait(c);
  if (!found) return std::nullopt;
  const WaitFor& w = *found;
  const std::vector<int> late = w.awaited_ranks();
  const std::vector<int> waiting = ranks_of(w.waiting);
  const double waited = seconds(w.first_arrival_ns, w.until_ns);
  const auto timeout = c.timeout_ms();
  const std::string of_timeout =
      timeout ? fmt::format(" of their {:g} s timeout ({:g} s more before it would have fired)",
                            static_cast<double>(*timeout) / 1000,
                            std::max(0.0, static_cast<double>(*timeout) / 1000 - waited))
              : std::string();

  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StragglerTimeout;
  v.initiating_rank = late.front();
  if (!w.missing.empty() && w.missing.front()->proc->rank == late.front()) v.initiating_host = w.missing.front()->proc->host;
  v.confidence = w.absent.empty() ? "high" : "medium";
  v.summary = fmt::format("{} {} never reached the store while {} waited on it for it: cancelled before any "
                          "timeout fired (the job was ended, by a scheduler or by hand, while they waited); the "
                          "others had waited {}{}{}",
                          late.size() == 1 ? "rank" : "ranks", rank_list(late),
                          "rank" + std::string(waiting.size() == 1 ? " " : "s ") + rank_list(waiting),
                          w.bound ? "at least " : "", fmt_seconds(waited), of_timeout);
  v.next_step = "find what held " + std::string(late.size() == 1 ? "rank " : "ranks ") + rank_list(late) +
                " before init_process_group (its own log: data loading, a download, a hung import, a "
                "debugger), or run it under `py-spy dump` next time before cancelling";
  Finding fd;
  fd.cls = FailureClass::StragglerTimeout;
  for (const ProcessFacts* f : w.missing) fd.evidence.push_back(missing_words(c, *f));
  if (!w.absent.empty()) fd.evidence.push_back("no trace of rank(s) " + rank_list(w.absent) + " at all");
  for (const ProcessFacts* f : w.waiting) fd.evidence.push_back(waiting_rank_words(c, *f));
  out.findings.push_back(fd);
  out.evidence.late_ranks = late;
  out.discriminators.set("late_ranks", RankSet{late});
  out.discriminators.set("waiting_ranks", RankSet{waiting});
  out.discriminators.set("waited", Seconds{waited});
  out.discriminators.set("ended_before_timeout", std::string("yes"));
  return out;
}

}  // namespace rdzvscope
