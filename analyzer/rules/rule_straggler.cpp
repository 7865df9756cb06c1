// straggler_timeout: fast ranks gave up waiting at the init barrier while one or more ranks
// arrived late (or never). PyTorch only counts the workers that joined; the traces say who
// was late, by how much against the timeout, and what it was doing meanwhile.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

const std::initializer_list<LogFamily> kTimeoutFamilies = {
    LogFamily::SocketTimeout, LogFamily::WaitTimeout, LogFamily::WaitForInputTimeout,
    LogFamily::ClientsJoinTimeout, LogFamily::StoreBarrierTimeout, LogFamily::NcclUniqueIdStoreError,
    LogFamily::MonitoredBarrierTimeout, LogFamily::GlooStoreWaitTimeout};

// Where the ranks waited, for the words: monitored_barrier is a barrier of the ranks' own code
// after init_process_group (sglang's check after loading the model is one), not the init barrier.
std::string wait_place_words(const std::vector<const LogEvent*>& timeouts) {
  const bool all_monitored = std::all_of(timeouts.begin(), timeouts.end(), [](const LogEvent* e) {
    return e->family == LogFamily::MonitoredBarrierTimeout;
  });
  return all_monitored ? "in a monitored_barrier (gloo) after init_process_group" : "at the init barrier";
}

// monitored_barrier's rank 0 answers every rank only once all came: a rank that came and got no
// answer from rank 0 names rank 0, which either never came or was itself waiting for another
// rank that did not (its own line would name that one).
bool awaited_only_by_reached_lines(const std::vector<const LogEvent*>& timeouts, int rank) {
  bool any = false;
  for (const LogEvent* e : timeouts) {
    if (e->awaited_rank != rank) continue;
    if (e->family != LogFamily::MonitoredBarrierTimeout || e->setting != "reached") return false;
    any = true;
  }
  return any;
}

std::int64_t median(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Who arrived when, from the traces: the fast ranks that connected and gave up waiting, the
// ranks that came after the first of them gave up (or never), and the usual arrival.
struct Arrivals {
  std::vector<const ProcessFacts*> waited, late;
  std::int64_t first_timeout = 0;  // when the first fast rank gave up
  std::int64_t usual = 0;          // the median arrival of the fast ranks
  std::int64_t job_end = 0;        // the job's last record
  std::vector<int> fast_ranks, late_ranks;

  // A rank that never arrived was late by at least the time until the job's last record (a
  // launcher such as torchrun stops it once the others failed).
  std::int64_t lateness(const ProcessFacts* f) const {
    return diff_ns(usual, f->arrival_ns() ? *f->arrival_ns() : job_end);
  }
};

std::optional<Arrivals> find_arrivals(const Context& c) {
  Arrivals a;
  // Fast ranks: connected, then a wait on the store ran out.
  for (const ProcessFacts* f : c.ranks())
    if (!f->wait_timeouts.empty() && f->connected_ns) {
      a.waited.push_back(f);
      // When it gave up: the end of the wait, not its start.
      const Event* w = f->wait_timeouts.front();
      std::int64_t t = w->wall_ns + static_cast<std::int64_t>(w->dur_ns);
      if (!a.first_timeout || t < a.first_timeout) a.first_timeout = t;
    }
  if (a.waited.empty()) return std::nullopt;
  std::vector<std::int64_t> arrivals;
  for (const ProcessFacts* f : a.waited) arrivals.push_back(*f->arrival_ns());
  a.usual = median(arrivals);
  // Late: reached the store after the first fast rank gave up, or never reached it.
  const std::unordered_set<const ProcessFacts*> waited_set(a.waited.begin(), a.waited.end());
  for (const ProcessFacts* f : c.ranks()) {
    if (waited_set.count(f)) continue;
    auto arrived = f->arrival_ns();
    // A trace cut short says nothing of a later arrival: no evidence of lateness.
    if (!arrived && f->proc->cut_short) continue;
    if (!arrived || *arrived >= diff_ns(100'000'000, a.first_timeout)) a.late.push_back(f);
  }
  for (const auto& f : c.facts) a.job_end = std::max(a.job_end, f.proc->exit_ns.value_or(f.proc->last_event_ns()));
  for (auto* f : a.waited) a.fast_ranks.push_back(f->proc->rank);
  for (auto* f : a.late) a.late_ranks.push_back(f->proc->rank);
  return a;
}

// "the node with GROUP_RANK 3 (ranks 6, 7)", "the nodes with GROUP_RANK 2, 3 (ranks 4-7)".
std::string nodes_words(const std::vector<AbsentNode>& nodes) {
  std::vector<int> indexes, ranks;
  for (const AbsentNode& n : nodes) {
    indexes.push_back(n.index);
    ranks.insert(ranks.end(), n.ranks.begin(), n.ranks.end());
  }
  return (nodes.size() == 1 ? "the node with " : "the nodes with ") + nodes.front().index_var + " " +
         rank_list(indexes) + " (ranks " + rank_list(ranks) + ")";
}

// "node0 (GROUP_RANK 0), node1 (GROUP_RANK 1)": where the traced nodes ran.
std::string traced_nodes_words(const Context& c) {
  std::string out;
  for (const auto& [index, host] : c.traced_nodes)
    out += (out.empty() ? "" : ", ") + host + " (" + c.absent_nodes.front().index_var + " " + std::to_string(index) + ")";
  return out;
}

// A whole node missing is named as a node: its number and the ranks it should have run; its
// host name is in no trace, so the next step says where the launcher keeps the node list.
void word_absent_nodes(const Context& c, Candidate& out) {
  if (c.absent_nodes.empty()) return;
  const std::string nodes = nodes_words(c.absent_nodes);
  const std::string var = c.absent_nodes.front().index_var;
  out.verdict.summary += "; a whole node is missing: " + nodes + " has no traced process, while " +
                         traced_nodes_words(c) + " did run";
  out.verdict.next_step = "find out whether " + nodes + " started the job at all: it is number " +
                          std::to_string(c.absent_nodes.front().index) + " (from 0) of the job's node list (" +
                          (var == "SLURM_NODEID" ? std::string("`scontrol show hostnames $SLURM_JOB_NODELIST`")
                                                 : std::string("the launcher's host list, or torchrun's log on each node")) +
                          "); look at its launcher or scheduler log (a node that failed its prolog, a pending pod, "
                          "a missing mount); if it did run, run it under rdzvscope run as well and pass every node's "
                          "trace directory";
  Finding fd;
  fd.cls = FailureClass::StragglerTimeout;
  fd.evidence.push_back(nodes + ": no traced process; the traced ranks' " + var + " and LOCAL_RANK place " +
                        std::to_string(c.absent_nodes.front().ranks.size()) + " ranks on each node, and " +
                        traced_nodes_words(c) + " ran theirs");
  out.findings.push_back(fd);
}

// Ranks the job expected (WORLD_SIZE) of which there is no process at all: they never reached
// the store, the limit of a late rank, and the ones the others waited for. No trace, no host:
// what is known is that the rank was expected and never showed up.
void word_absent(const Context& c, Arrivals& a, const std::string& gave_up, Candidate& out) {
  Verdict& v = out.verdict;
  const std::vector<int>& absent = c.absent_ranks;
  const int first = absent.front();
  const bool one = absent.size() == 1;
  const std::string who = one ? "rank " + std::to_string(first) : "ranks " + rank_list(absent);
  v.initiating_rank = first;
  v.confidence = "high";
  v.summary = who + (one ? " never reached the store: no trace of it exists; it was not started under rdzvscope, or its "
                           "trace file is not in the given directories"
                         : " never reached the store: no trace of them exists; they were not started under rdzvscope, "
                           "or their trace files are not in the given directories") +
              " (WORLD_SIZE=" + std::to_string(*c.expected_world_size) + ")" + gave_up;
  if (!a.late.empty()) v.summary += "; rank(s) " + rank_list(a.late_ranks) + " were late as well";
  v.next_step = "find out whether " + who + " was started at all: look in the launcher's log (the job "
                "scheduler's, srun's, the pod's events: a pending pod, a failed step, a typo in the launch "
                "command) and on the node that should have run " + (one ? "it" : "them") +
                "; if it did run, run it under rdzvscope run as well and pass every node's trace directory";
  std::vector<int> traced;
  for (const ProcessFacts* f : c.ranks()) traced.push_back(f->proc->rank);
  Finding fd;
  fd.cls = FailureClass::StragglerTimeout;
  if (one) fd.rank = first;
  fd.evidence.push_back(who + ": no trace at all; WORLD_SIZE=" + std::to_string(*c.expected_world_size) +
                        " expects ranks 0-" + std::to_string(*c.expected_world_size - 1) + ", traced: " +
                        rank_list(traced) + "; still missing at " + rel(c, a.job_end) + ", " +
                        fmt_seconds(seconds(a.usual, a.job_end)) + " after the usual arrival");
  out.findings.push_back(fd);
  word_absent_nodes(c, out);
  a.late_ranks.insert(a.late_ranks.end(), absent.begin(), absent.end());
  std::sort(a.late_ranks.begin(), a.late_ranks.end());
}

// A late rank that never reached the store because it had ended before: it died on its own (an
// exception before init_process_group, the OOM killer), or it left early (exit 0). Gone, not
// late. Its exit record, its parent's reap or the end of its connections says when it was over.
bool died_before_arriving(const Context& c, const ProcessFacts& f) {
  const Ending& e = c.ending(f);
  const bool left_early = e.how == Ending::How::Exited && !e.failed() && !f.first_error;
  return !f.arrival_ns() && e.over_ns && (c.died_on_its_own(f) || left_early);
}

// The rank the others waited for died: when, how, its crash, and that they waited for a dead
// rank (it died before they gave up) or that it was still on its way when they did.
void word_dead(const Context& c, const Arrivals& a, const ProcessFacts& dead, const std::string& gave_up,
               Verdict& v) {
  const Ending& e = c.ending(dead);
  const bool before = *e.over_ns <= a.first_timeout;
  const std::string crash = crash_words(c, dead);
  v.initiating_rank = rank_of(dead);
  v.initiating_host = dead.proc->host;
  v.confidence = "high";
  const bool left = !e.failed();  // exit 0: it left before joining
  v.summary = dead.proc->label() + " " + ending_words(c, dead) + " before it reached the store" +
              (crash.empty() ? "" : " (" + crash + ")") +
              (before ? (left ? ": it ended without joining" + gave_up + " waiting for a rank that had left"
                              : ": it died before it could join" + gave_up + " waiting for a rank that was already dead")
                      : gave_up + " while it was still on its way; it ended after that, before reaching the store");
  if (left)
    v.next_step = "find why " + dead.proc->label() + " ended with status 0 before init_process_group (an early return "
                  "or sys.exit in its script, a path taken on that rank only: its own log); the other ranks' "
                  "timeouts are consequences, a longer timeout would not help";
  else if (e.how == Ending::How::Exited)
    v.next_step = "read " + dead.proc->label() + "'s crash" +
                  (crash.empty() ? std::string(" in its own log (its traceback, above its exit)") : " (" + crash + ")") +
                  " and fix what it died of before init_process_group; the other ranks' timeouts are consequences "
                  "of its death, a longer timeout would not help";
  else
    v.next_step = "find what killed " + dead.proc->label() + " before init_process_group: `journalctl -k | grep -i -E "
                  "'oom|killed'` on " + dead.proc->host + " around " + iso8601_utc(*e.over_ns) +
                  " (the OOM killer, a scheduler's limit), and its own log; the other ranks' timeouts are consequences "
                  "of its death";
}

// The latest of the traced late ranks initiates: how late, what it was doing, what to do.
// A rank that never reached the store and whose trace ends without an exit record, with no
// traced launcher that stopped it (started by hand, or by a launcher rdzvscope did not trace):
// killed by a signal (the OOM killer, a scheduler), or still on its way when the others gave
// up. Nothing in the traces tells the two apart, so the words say both.
void word_vanished_on_its_way(const Context& c, const ProcessFacts& f, const std::string& gave_up, Verdict& v) {
  const Ending& e = c.ending(f);
  v.initiating_rank = rank_of(f);
  v.initiating_host = f.proc->host;
  v.confidence = "high";
  v.summary = f.proc->label() + " never reached the store: its trace ends at " + rel(c, e.last_seen_ns) +
              " with no exit record, so it was killed by a signal (the OOM killer, a scheduler) or was still on "
              "its way when the others gave up" + gave_up;
  const std::string act = activity(f);
  v.next_step = "find out whether " + f.proc->label() + " was killed: `journalctl -k | grep -i -E 'oom|killed'` on " +
                f.proc->host + " around " + iso8601_utc(e.last_seen_ns) +
                ", and its own log (a traceback, or nothing after its start); if it was still running, what it does "
                "before init_process_group" + (act.empty() ? std::string() : " (before it vanished it was " + act + ")") +
                " is what held it";
}

void word_worst_late(const Context& c, const Arrivals& a, const ProcessFacts& worst, const std::string& gave_up,
                     Verdict& v) {
  if (died_before_arriving(c, worst)) return word_dead(c, a, worst, gave_up, v);
  if (!worst.arrival_ns() && worst.proc->vanished() && !c.ending(worst).stopped() &&
      !c.parent_is_agent(*worst.proc) && !worst.proc->cut_short)
    return word_vanished_on_its_way(c, worst, gave_up, v);
  const auto timeout = c.timeout_ms();
  const double late_s = a.lateness(&worst) / 1e9;
  v.initiating_rank = rank_of(worst);
  v.initiating_host = worst.proc->host;
  v.confidence = "high";
  const Ending& e = c.ending(worst);
  v.summary = worst.proc->label() + (worst.arrival_ns() ? " reached the store " + fmt_seconds(late_s) + " after the others"
                                                        : " never reached the store (still missing " + fmt_seconds(late_s) +
                                                              " after the others arrived)") +
              gave_up +
              (e.stopped() && !worst.arrival_ns()
                   ? "; it " + ending_words(c, worst) + ", while it was still on its way"
                   : std::string());
  const std::string act = activity(worst);
  std::string why = act.empty() ? "" : " Before it arrived it was " + act + ".";
  double raise_to = late_s + (timeout ? *timeout / 1000.0 : 0) * 1.5 + 1;
  v.next_step = "look at what " + worst.proc->label() + " does before init_process_group (checkpoint or data loading, storage on " +
                worst.proc->host + ")." + why + " Or raise init_process_group(timeout=...) above " +
                fmt_seconds(raise_to) + ".";
}

Finding late_finding(const Context& c, const Arrivals& a, const ProcessFacts& f) {
  const auto timeout = c.timeout_ms();
  if (died_before_arriving(c, f)) {
    Finding fd = finding_for(FailureClass::StragglerTimeout, f, c.ending(f).over_ns);
    fd.evidence.push_back(f.proc->label() + ": launched at " + rel(c, f.proc->launched_ns) +
                          ", no store connect at all: it " + ending_words(c, f) +
                          ", before reaching the store and with no rendezvous error of its own; the others gave up "
                          "waiting from " + rel(c, a.first_timeout) +
                          (timeout ? " (timeout " + std::to_string(*timeout) + " ms)" : std::string()));
    return fd;
  }
  Finding fd = finding_for(FailureClass::StragglerTimeout, f, f.arrival_ns());
  fd.evidence.push_back(f.proc->label() + ": launched at " + rel(c, f.proc->launched_ns) + ", " +
                        (f.arrival_ns() ? "first store connect at " + rel(c, *f.arrival_ns()) + ", " +
                                              fmt_seconds(a.lateness(&f) / 1e9) + " after the usual arrival"
                                        : "no store connect at all, still missing at " + rel(c, a.job_end) + ", " +
                                              fmt_seconds(a.lateness(&f) / 1e9) + " after the usual arrival") +
                        (timeout ? " (timeout " + std::to_string(*timeout) + " ms)" : std::string()));
  const std::string act = activity(f);
  if (!act.empty()) fd.evidence.push_back("  before arriving: " + act);
  return fd;
}

// The late rank's own error is a consequence when the store host had already gone.
std::optional<Finding> store_gone_first(const Context& c, const ProcessFacts& worst) {
  const ProcessFacts* store = c.store_server(0);
  if (!store || !worst.arrival_ns()) return std::nullopt;
  const Process& sp = *store->proc;
  const std::int64_t gone = sp.exit_ns ? *sp.exit_ns : sp.last_event_ns();
  if (gone >= *worst.arrival_ns()) return std::nullopt;
  Finding fd = finding_for(FailureClass::StragglerTimeout, *store, gone);
  fd.evidence.push_back(sp.label() + " (the store host) " + (sp.exit_ns ? "exited" : "was last seen") + " at " +
                        rel(c, gone) + ", " + fmt_seconds(seconds(gone, *worst.arrival_ns())) + " before " +
                        worst.proc->label() + " tried to connect: its error is a consequence, the store was already gone");
  return fd;
}

std::optional<Candidate> from_traces(const Context& c, Arrivals a) {
  if (a.late.empty() && c.absent_ranks.empty()) return std::nullopt;
  Candidate out;
  out.verdict.cls = FailureClass::StragglerTimeout;
  const auto timeout = c.timeout_ms();
  const std::string gave_up = "; rank(s) " + rank_list(a.fast_ranks) + " gave up after their " +
                              (timeout ? fmt_seconds(*timeout / 1000.0) + " " : std::string()) + "timeout";
  const ProcessFacts* worst = nullptr;
  double late_s = 0;
  std::string act;
  if (!c.absent_ranks.empty()) {
    word_absent(c, a, gave_up, out);
    late_s = seconds(a.usual, a.job_end);
  } else {
    worst = *std::max_element(a.late.begin(), a.late.end(),
                              [&](auto* x, auto* y) { return a.lateness(x) < a.lateness(y); });
    word_worst_late(c, a, *worst, gave_up, out.verdict);
    late_s = a.lateness(worst) / 1e9;
    act = activity(*worst);
  }
  for (auto* f : a.late) out.findings.push_back(late_finding(c, a, *f));
  if (worst)
    if (auto gone = store_gone_first(c, *worst)) out.findings.push_back(*gone);
  Finding fast;
  fast.cls = FailureClass::StragglerTimeout;
  fast.evidence.push_back("rank(s) " + rank_list(a.fast_ranks) + " connected by " + rel(c, a.usual) +
                          " and timed out waiting from " + rel(c, a.first_timeout) + " (" +
                          describe(*a.waited.front()->wait_timeouts.front()) + ")");
  out.findings.push_back(fast);
  out.evidence.late_ranks = a.late_ranks;
  for (auto* f : a.late)
    if (died_before_arriving(c, *f)) out.evidence.dead_ranks.push_back(f->proc->rank);
  out.discriminators.set("late_ranks", RankSet{a.late_ranks});
  out.discriminators.set("seconds_late", Seconds{std::round(late_s * 100) / 100});
  out.discriminators.set("timed_out_ranks", RankSet{a.fast_ranks});
  out.discriminators.set("late_rank_activity", act);
  return out;
}

// A barrier that counted as many workers as the world size, or more, waited for nobody late: its
// count overshot (another launch, or a restarted job's earlier attempts) and never equalled it.
bool counted_everyone(const LogEvent* e) { return e->joined && e->expected && *e->joined >= *e->expected; }

// From logs alone: ranks that report a timeout, and a rank that does not.
std::optional<Candidate> from_logs(const Context& c) {
  auto timeouts = c.logs.of(kTimeoutFamilies);
  std::erase_if(timeouts, counted_everyone);
  if (c.has_traces() || timeouts.empty()) return std::nullopt;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StragglerTimeout;
  std::vector<int> timed_out, seen;
  for (const auto* e : timeouts)
    if (e->rank >= 0) timed_out.push_back(e->rank);
  for (const auto& e : c.logs.events)
    if (e.rank >= 0) seen.push_back(e.rank);
  std::vector<int> others;
  for (int r : seen)
    if (std::find(timed_out.begin(), timed_out.end(), r) == timed_out.end()) others.push_back(r);
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  // 2.x names the key a rank waited for ("keys: /default_pg/0//cpu//0/2"): the rank that had
  // not published it. A rank that timed out itself was waiting too (the store host of a
  // hand-started job sits in "waiting for clients", and the others wait for its key), so it
  // is no candidate. Under torchrun every worker's output is in one file without rank
  // prefixes, and the awaited key is the only name of the late rank in it.
  std::vector<int> awaited;
  for (const auto* e : timeouts)
    if (e->awaited_rank && std::find(timed_out.begin(), timed_out.end(), *e->awaited_rank) == timed_out.end())
      awaited.push_back(*e->awaited_rank);
  // Issue 29: under env:// rank 0 hosts the store and, on 2.x, waits in the store's constructor
  // until every client joined ("Timed out after N seconds waiting for clients. M/W clients
  // joined", which only the store host prints). The clients that joined then wait for rank 0's
  // key, which it never got to write: rank 0 was at the store, waiting too. The late rank is a
  // client that never joined, which the key does not name.
  if (c.logs.any({LogFamily::ClientsJoinTimeout}))
    awaited.erase(std::remove(awaited.begin(), awaited.end(), 0), awaited.end());
  std::sort(awaited.begin(), awaited.end());
  awaited.erase(std::unique(awaited.begin(), awaited.end()), awaited.end());
  const bool by_key = awaited.size() == 1 && (others.empty() || others == awaited);
  if (by_key) others = awaited;
  const bool by_barrier_answer = by_key && awaited_only_by_reached_lines(timeouts, others.front());
  v.confidence = others.size() == 1 && !by_barrier_answer ? "medium" : "low";
  if (others.size() == 1) v.initiating_rank = others.front();
  v.summary = (timed_out.empty() ? std::string("ranks (the logs do not say which)") : "rank(s) " + rank_list(timed_out)) +
              " timed out waiting " + wait_place_words(timeouts) +
              (others.size() != 1 ? std::string()
               : by_barrier_answer ? "; they reached it and got no answer from rank " + std::to_string(others.front()) +
                                         ", which answers only once every rank came: it was probably the late one, "
                                         "unless it waited there for another rank (its own log would name that rank)"
               : by_key ? "; they waited for the key of rank " + std::to_string(others.front()) +
                              ", which had not joined: probably the late one"
                        : "; rank " + std::to_string(others.front()) + " did not, so it was probably the late one") +
              "; logs cannot tell how late: trace the job with rdzvscope run";
  v.next_step = "rerun under rdzvscope run to measure each rank's arrival; meanwhile raise init_process_group(timeout=...)";
  out.findings.push_back(log_finding(FailureClass::StragglerTimeout, *timeouts.front()));
  return out;
}

// "ALLREDUCE, SeqNum=12" for the words, from the first watchdog line that says them.
std::string collective_words(const LogFacts& logs) {
  const auto w = first_logged_work(logs);
  if (!w) return "";
  return w->op + (w->sequence ? ", SeqNum=" + std::to_string(*w->sequence) : std::string());
}

// The ranks of the log lines (every family, the other errors too): who the logs show at all.
std::vector<int> ranks_in_logs(const LogFacts& logs) {
  std::vector<int> seen;
  for (const auto* list : {&logs.events, &logs.other_errors})
    for (const LogEvent& e : *list)
      if (e.rank >= 0) seen.push_back(e.rank);
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  return seen;
}

// From logs alone, after the rendezvous (issue 28): the NCCL watchdog (or gloo) of every rank that waited
// in a collective prints "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S,
// OpType=OP, ..., Timeout(ms)=T)". A rank that never entered that collective prints none: it
// was still busy after init_process_group (data, a checkpoint, a cache built on one rank) or
// gone. The rank the logs show without such a line is the one the others waited for; when the
// logs show no line of rank 0 at all and several ranks above it timed out, rank 0 is that rank
// (every job has one), at low confidence: its log may simply not have been given.
std::optional<Candidate> from_collective_timeouts(const Context& c) {
  // gloo's own wait in a collective says the same of its rank ("Timed out waiting 4000ms for
  // recv operation to complete"); the rank the others waited for prints "Connection closed by
  // peer" once they gave up, or nothing.
  const auto hits = c.logs.of({LogFamily::WatchdogTimeout, LogFamily::GlooCollectiveTimeout});
  if (c.has_traces() || hits.empty()) return std::nullopt;
  std::vector<int> timed_out;
  for (const LogEvent* e : hits)
    if (e->rank >= 0) timed_out.push_back(e->rank);
  std::sort(timed_out.begin(), timed_out.end());
  timed_out.erase(std::unique(timed_out.begin(), timed_out.end()), timed_out.end());
  std::vector<int> quiet;
  for (int r : ranks_in_logs(c.logs))
    if (!std::binary_search(timed_out.begin(), timed_out.end(), r)) quiet.push_back(r);
  const bool rank0_unseen = quiet.empty() && timed_out.size() >= 2 && timed_out.front() > 0;
  if (rank0_unseen) quiet.push_back(0);

  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StragglerTimeout;
  v.confidence = quiet.size() == 1 && !rank0_unseen ? "medium" : "low";
  if (quiet.size() == 1) v.initiating_rank = quiet.front();
  const std::string what = collective_words(c.logs);
  const auto timeout_ms = hits.front()->timeout_ms;
  v.summary = (timed_out.empty() ? std::string("ranks (the logs do not say which)") : "rank(s) " + rank_list(timed_out)) +
              " timed out in a collective after the rendezvous" + (what.empty() ? "" : " (" + what + ")") +
              (timeout_ms ? " after their " + fmt_seconds(*timeout_ms / 1000.0) + " timeout" : std::string()) +
              (quiet.empty() ? std::string("; the logs do not show which rank never entered it")
               : quiet.size() > 1
                   // A rank that waited in the collective, on a pair with a rank that had timed out
                   // and exited, reads "closed by peer" before its own timer fires: its log then
                   // reads like the late rank's, and the logs carry no clock to order them.
                   ? "; ranks " + rank_list(quiet) +
                         " logged no timeout: one of them never entered the collective, the others found a "
                         "pair closed by a rank that had timed out; the logs do not show which is which"
               : rank0_unseen ? "; no line of rank 0 is in the logs: it never entered the collective (still busy "
                                "after init_process_group, or gone), unless its log was not given"
                              : "; rank " + std::to_string(quiet.front()) +
                                    " logged no timeout: it never entered the collective (still busy after "
                                    "init_process_group, or gone)");
  v.next_step = quiet.size() == 1
                    ? "look at what rank " + std::to_string(quiet.front()) +
                          " did after init_process_group, in its log around the others' timeout (data loading, "
                          "preprocessing or a cache built on that rank only, a checkpoint); work that long belongs "
                          "before init_process_group or needs a larger timeout (init_process_group(timeout=...)); "
                          "if it died, read its crash"
                    : quiet.empty() ? "give every rank's log (or trace the job with rdzvscope run) to see which rank "
                                      "never entered the collective"
                                    : "look at what ranks " + rank_list(quiet) +
                                          " did after init_process_group; a trace of the job (rdzvscope run) "
                                          "names the one that never sent on its pairs";
  out.findings.push_back(log_finding(FailureClass::StragglerTimeout, *hits.front()));
  out.discriminators.set("timed_out_ranks", RankSet{timed_out});
  out.discriminators.set("phase", std::string("first collective after the rendezvous"));
  return out;
}

// An agent's part in a rendezvous that never completed, for the evidence.
std::string agent_words(const Context& c, const ProcessFacts& a) {
  const Process& p = *a.proc;
  std::string joined = a.listen_ns       ? "hosted the rendezvous store from " + rel(c, *a.listen_ns)
                       : a.connected_ns  ? "reached the rendezvous store at " + rel(c, *a.connected_ns)
                                         : "never reached the rendezvous store";
  std::string end = p.exit_ns ? "exited with status " + std::to_string(p.exit_status.value_or(-1)) + " at " + rel(c, *p.exit_ns)
                              : "was last seen at " + rel(c, p.last_event_ns());
  return p.label() + ": " + joined + ", " + end + " without starting a worker";
}

// torchrun nodes that never joined: the agents that came waited for --nnodes of them, gave up
// at their join timeout and never started a worker. The nodes that did not come are the limit
// of a late rank, as absent ranks are; an agent trace is all a node leaves before its workers.
std::optional<Candidate> from_missing_agents(const Context& c) {
  if (!c.missing_agents) return std::nullopt;
  const auto& m = *c.missing_agents;
  const bool gave_up = std::any_of(m.agents.begin(), m.agents.end(),
                                   [&](const ProcessFacts* a) { return c.gave_up_its_rendezvous(*a->proc); });
  if (!gave_up) return std::nullopt;
  // A node the agents waited for is missing only where they met on a store (one hosted it or
  // reached it). When none ever did (refused until their store timeout, nothing listening),
  // the node that did not come was the store's host: store_not_ready, not a late node (2.13,
  // torchrun store_never).
  const bool met = std::any_of(m.agents.begin(), m.agents.end(),
                               [](const ProcessFacts* a) { return a->listen_ns || a->connected_ns; });
  if (!met) return std::nullopt;
  const int traced = static_cast<int>(m.agents.size());
  const int missing = m.expected_nodes - traced;
  std::vector<std::string> hosts;
  for (const ProcessFacts* a : m.agents) hosts.push_back(a->proc->host);
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  const std::string traced_hosts = fmt::format("{}", fmt::join(hosts, ", "));
  const bool one = missing == 1;
  const bool logged = c.logs.any({LogFamily::RendezvousTimeout});

  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StragglerTimeout;
  v.confidence = "high";
  v.summary = std::to_string(missing) + " of " + std::to_string(m.expected_nodes) + " nodes never joined the rendezvous: " +
              "torchrun --nnodes " + std::to_string(m.expected_nodes) + " waited for " + std::to_string(m.expected_nodes) +
              " agents, " + std::to_string(traced) + " are traced (on " + traced_hosts + ") and gave up at their join timeout" +
              (logged ? " (RendezvousTimeoutError)" : "") + " before any worker started; no trace of the other " +
              (one ? "node's agent exists: it was not started under rdzvscope, or its trace file is"
                   : std::to_string(missing) + " nodes' agents exists: they were not started under rdzvscope, or their trace files are") +
              " not in the given directories";
  v.next_step = std::string("find out whether ") + (one ? "the missing node" : "the missing nodes") +
                " started torchrun at all: compare the job's node list (`scontrol show hostnames $SLURM_JOB_NODELIST`, "
                "the pods of the job) with the traced hosts (" + traced_hosts + ") and read " + (one ? "its" : "their") +
                " launcher or scheduler log (a node that failed its prolog, a pending pod, a missing mount); if it did "
                "run, run it under rdzvscope run as well and pass every node's trace directory";
  Finding fd;
  fd.cls = FailureClass::StragglerTimeout;
  fd.evidence.push_back("--nnodes " + std::to_string(m.expected_nodes) + " in every traced agent's command line; " +
                        std::to_string(traced) + " agent(s) traced, no worker");
  for (const ProcessFacts* a : m.agents) fd.evidence.push_back(agent_words(c, *a));
  out.findings.push_back(fd);
  out.discriminators.set("nodes_expected", std::int64_t{m.expected_nodes});
  out.discriminators.set("nodes_joined", std::int64_t{traced});
  out.discriminators.set("nodes_missing", std::int64_t{missing});
  return out;
}

}  // namespace

std::optional<Candidate> rule_straggler(const Context& c) {
  if (auto arrivals = find_arrivals(c)) return from_traces(c, std::move(*arrivals));
  if (auto collective = straggler_at_first_collective(c)) return collective;
  if (auto dumps = straggler_from_flight_recorder(c)) return dumps;
  if (auto agents = from_missing_agents(c)) return agents;
  if (auto collective = from_collective_timeouts(c)) return collective;
  if (auto cancelled = straggler_from_calls_in_flight(c)) return cancelled;
  if (auto timeouts = from_logs(c)) return timeouts;
  if (auto store_host = straggler_store_host_late(c)) return store_host;
  if (auto main_first = straggler_main_process_first(c)) return main_first;
  return straggler_never_announced(c);
}

}  // namespace rdzvscope
