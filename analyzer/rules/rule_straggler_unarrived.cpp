// straggler_timeout from logs alone, where no rank's line says it timed out waiting for another
// (issue 29): the logs show who never arrived by what c10d or the launcher leaves behind.
// - Clients that waited out their whole connect timeout on their own node's loopback: nothing
//   listened there all that time, and under env:// the listener is rank 0's init_process_group.
// - Tracebacks out of the entry of main_process_first (transformers, accelerate): replicas whose
//   wait for the main process, still in the block, failed.
// - PyTorch Lightning's announcements of each process entering init_process_group: the ranks of
//   the world that never announced it are the ones the others wait for.
#include <algorithm>
#include <set>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// The ranks of `lines` that carry one, sorted, each once.
std::vector<int> ranks_of(const std::vector<const LogEvent*>& lines) {
  std::set<int> ranks;
  for (const LogEvent* e : lines)
    if (e->rank >= 0) ranks.insert(e->rank);
  return {ranks.begin(), ranks.end()};
}

std::vector<const LogEvent*> announcements(const LogFacts& logs, const char* setting) {
  std::vector<const LogEvent*> out;
  for (const LogEvent& e : logs.init_entries)
    if (e.setting == setting) out.push_back(&e);
  return out;
}

// The announced ranks that did enter init_process_group, for the words: "; rank 1 announced
// init_process_group (Lightning's line) and rank 0 did not".
std::string entered_words(const LogFacts& logs) {
  const std::vector<int> entered = ranks_of(announcements(logs, "entering"));
  if (entered.empty()) return "";
  return "; rank(s) " + rank_list(entered) + " announced entering init_process_group (Lightning's line), rank 0 did not";
}

// The same line is left by a rank 0 that never got to init_process_group at all, and (rarely)
// by a firewall rule on the loopback interface: what tells them apart.
std::vector<Alternative> loopback_alternatives(const LogEvent& e) {
  const std::string port = e.port ? std::to_string(*e.port) : std::string("PORT");
  return {
      {FailureClass::StoreNotReady, std::nullopt,
       "rank 0 never started, ended before init_process_group (an exception, a kill), or runs in another network "
       "namespace (a container of its own has its own 127.0.0.1): nothing listens there either, and the clients "
       "print the same line",
       "rank 0's own log: did it start, did it die, did it reach init_process_group?"},
      {FailureClass::ConnectTimeout, std::nullopt,
       "a firewall rule on the loopback interface that drops SYNs to the port (rare); c10d 2.x then warns \"The "
       "server socket on ... has timed out, will retry\" once the kernel gives up a SYN",
       "`iptables -S` on the node, or `nc -vz 127.0.0.1 " + port + "` while rank 0 runs"},
  };
}

// The candidate these log-only paths make: straggler_timeout, low (the logs cannot say how
// late), `rank` initiating where they name one, `line` its evidence.
Candidate low_straggler(std::optional<int> rank, const LogEvent& line) {
  Candidate out;
  out.verdict.cls = FailureClass::StragglerTimeout;
  out.verdict.confidence = "low";
  out.verdict.initiating_rank = rank;
  out.findings.push_back(log_finding(FailureClass::StragglerTimeout, line));
  return out;
}

}  // namespace

std::optional<Candidate> straggler_store_host_late(const Context& c) {
  if (c.has_traces()) return std::nullopt;
  const LogEvent* e = loopback_store_never_up(c.logs);
  if (!e) return std::nullopt;
  // Rank 0's own client connects to its own listener: a timed-out line that carries rank 0 got
  // it from elsewhere (a file name), and names a client of unknown rank.
  std::vector<int> clients = ranks_of(c.logs.of({LogFamily::ClientConnectTimeout}));
  clients.erase(std::remove(clients.begin(), clients.end(), 0), clients.end());
  const std::string who = clients.empty() ? std::string("a client (the logs do not say which rank)")
                                          : "rank(s) " + rank_list(clients);
  const std::string after = e->timeout_ms ? " after " + fmt_seconds(*e->timeout_ms / 1000.0) : std::string();
  const std::string where = e->host + (e->port ? ":" + std::to_string(*e->port) : std::string());

  Candidate out = low_straggler(0, *e);
  Verdict& v = out.verdict;
  v.summary = who + " timed out" + after + " connecting to the store at " + where +
              ", a loopback address of the node the client runs on: a loopback SYN is answered at once (by the store, or by a refusal "
              "that c10d retries silently until its deadline), so nothing listened there for the whole timeout. "
              "Under env:// the store is made by rank 0's init_process_group, and a loopback address puts rank 0 on "
              "this node, started with the others: most likely rank 0 was still busy before init_process_group "
              "(preparing data, loading a checkpoint) for longer than the timeout" +
              entered_words(c.logs) +
              "; a rank 0 that never started or died before it (store_not_ready) leaves the same line, and rank 0's "
              "own log tells which";
  v.next_step = "read rank 0's log (the launcher's first process) for what it did before init_process_group while "
                "the others waited; move that work before the launch, or behind a barrier after init_process_group, "
                "or give init_process_group(timeout=...) more than it takes; if rank 0 never got there (it died or "
                "never started), that is why";
  out.alternatives = loopback_alternatives(*e);
  out.discriminators.set("candidates", NameList{{"straggler_timeout", "store_not_ready", "connect_timeout"}});
  out.discriminators.set("store_address", where);
  out.discriminators.set("timed_out_ranks", RankSet{clients});
  return out;
}

namespace {

// The world size every announcement gives, 0 when they disagree or give none.
int announced_world(const std::vector<const LogEvent*>& entering) {
  int world = 0;
  for (const LogEvent* e : entering) {
    if (!e->expected || *e->expected <= 0 || (world && *e->expected != world)) return 0;
    world = *e->expected;
  }
  return world;
}

// A rank announced twice: two processes were given the same rank (each node numbering its own
// from 0, a node rank not derived per node), so the ranks nobody announced were never handed
// out; that is no late rank.
bool rank_announced_twice(const std::vector<const LogEvent*>& entering) {
  std::set<int> seen;
  for (const LogEvent* e : entering)
    if (e->rank >= 0 && !seen.insert(e->rank).second) return true;
  return false;
}

}  // namespace

std::optional<Candidate> straggler_never_announced(const Context& c) {
  const LogFacts& logs = c.logs;
  if (c.has_traces() || logs.init_entries.empty()) return std::nullopt;
  // Rank 0's line that init_process_group returned: the rendezvous completed.
  if (!announcements(logs, "registered").empty()) return std::nullopt;
  // Only a job that shows nothing else: any error or end of a process says more than a silence.
  if (logs.any_rendezvous_error() || !logs.other_errors.empty() || !logs.deaths.empty()) return std::nullopt;
  const auto entering = announcements(logs, "entering");
  const int world = announced_world(entering);
  if (!world || rank_announced_twice(entering)) return std::nullopt;
  const std::vector<int> entered = ranks_of(entering);
  std::vector<int> missing;
  for (int r = 0; r < world; ++r)
    if (!std::binary_search(entered.begin(), entered.end(), r)) missing.push_back(r);
  if (missing.empty() || entered.empty()) return std::nullopt;

  Candidate out =
      low_straggler(missing.size() == 1 ? std::optional<int>(missing.front()) : std::nullopt, *entering.front());
  Verdict& v = out.verdict;
  v.summary = "rank(s) " + rank_list(entered) + " of " + std::to_string(world) +
              " announced entering init_process_group (Lightning's \"GLOBAL_RANK: R, MEMBER: M/" +
              std::to_string(world) + "\") and the logs hold no error and no sign that it returned (rank 0's \"All "
              "distributed processes registered\"): init_process_group returns only once every rank came, so they "
              "wait there for rank(s) " + rank_list(missing) +
              ", which never announced it: never started (only one node's processes launched: a batch script "
              "without srun, a NODE_RANK already set in the environment), or their output is not in these logs";
  v.next_step = "check that every rank was started: the scheduler's task count (srun inside the batch script), "
                "NODE_RANK and LOCAL_RANK in the launching shell's environment, the other nodes' logs; the ranks that "
                "came wait until init_process_group's timeout (30 min by default)";
  out.discriminators.set("late_ranks", RankSet{missing});
  out.discriminators.set("expected_world_size", std::int64_t{world});
  return out;
}

std::optional<Candidate> straggler_main_process_first(const Context& c) {
  if (c.has_traces()) return std::nullopt;
  const std::vector<const LogEvent*> waits = waits_for_main_process(c.logs);
  if (waits.empty()) return std::nullopt;
  const std::string n = std::to_string(waits.size());
  Candidate out = low_straggler(0, *waits.front());
  Verdict& v = out.verdict;
  v.summary = n + " traceback(s) come out of the entry of main_process_first (transformers, accelerate): every "
              "process but the main one waits there at a barrier until the main one has run the block (a dataset's "
              "map, tokenization) and reached the barrier at its end, so these are replicas whose wait failed while "
              "the main process (rank 0; with local=True the first process of each node) was still in the block: "
              "most likely the block ran past the barrier's timeout (30 min by default)";
  v.next_step = "run the block once before the distributed job (preprocess the dataset, then train from its cache), "
                "or give the barrier more time (TrainingArguments(ddp_timeout=...), init_process_group(timeout=...)); "
                "the main process's own log says how far the block had got";
  out.alternatives.push_back(
      {FailureClass::RankDied, std::nullopt,
       "the main process died inside the block (its memory, an error in the data): the replicas' barrier then fails "
       "or times out the same way",
       "the main process's own log: a traceback of its own inside the block, or the OOM killer in the kernel log"});
  out.discriminators.set("waiting_tracebacks", std::int64_t{static_cast<std::int64_t>(waits.size())});
  return out;
}

}  // namespace rdzvscope
