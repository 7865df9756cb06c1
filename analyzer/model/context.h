// Everything the rules look at: the processes with their facts, and the log evidence.
#pragma once

#include <array>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "address.h"
#include "collective_phase.h"
#include "diagnosis.h"
#include "endings.h"
#include "fr_parting.h"
#include "log_facts.h"
#include "name_answers.h"
#include "rank_facts.h"
#include "torch_version.h"

namespace rdzvscope {

struct Context {
  const TraceInputs& traces;
  const LogFacts& logs;
  std::vector<ProcessFacts> facts;
  std::vector<Ending> endings;  // how each of facts ended, in the same order (endings.h)

  // The ranks the job expected and the ones of them no traced process is (find_expected_ranks).
  std::optional<int> expected_world_size;
  std::vector<int> absent_ranks;
  // Absent ranks that make up whole nodes (find_absent_nodes), and the traced nodes' hosts by
  // the same numbering, for the words.
  std::vector<AbsentNode> absent_nodes;
  std::map<int, std::string> traced_nodes;
  // A torchrun job whose rendezvous never completed has agents and no worker: there, the
  // nodes it expected are --nnodes (its minimum), and each traced agent is one node that came.
  // Set (find_missing_agents) only when no worker is traced, the agents agree on --nnodes and
  // fewer agents than that are traced.
  struct MissingAgents {
    int expected_nodes = 0;
    std::vector<const ProcessFacts*> agents;  // the agents traced, one per node that joined
  };
  std::optional<MissingAgents> missing_agents;
  // Processes whose lookup of the rendezvous host's name sent them to another address than
  // the one where the others, looking up the same name, reached the store (name_answers.h):
  // their failed connects went where the store never was, and say nothing of the store.
  std::vector<Misdirected> misdirected;
  std::unordered_map<const ProcessFacts*, std::size_t> misdirected_index;  // into misdirected
  // Which PyTorch the job ran: the traces', else the logs' (torch_version.h).
  std::optional<TorchVersion> torch_version;

  // world_size: the ranks the job expects, when the user knows it (watch --world-size); else
  // found in the headers or logs. flight_recorder: the Flight Recorder dumps given beside them.
  Context(const TraceInputs& t, const LogFacts& l, std::optional<int> world_size = std::nullopt,
          const FrInputs* flight_recorder = nullptr)
      : traces(t), logs(l), facts(derive_facts(t.processes)), endings(find_endings(facts, t)) {
    if (flight_recorder && !flight_recorder->empty()) {
      flight_recorder_given = true;
      fr_parting = find_fr_parting(*flight_recorder);
    }
    find_time_span();
    find_expected_ranks(world_size);
    find_absent_nodes();
    find_missing_agents();
    misdirected = find_misdirected(facts);
    torch_version = find_torch_version(t.processes, l);
    for (std::size_t i = 0; i < misdirected.size(); ++i)
      misdirected_index.emplace(misdirected[i].f, i);
    collective = find_collective_phase(*this);
  }

  // Where the Flight Recorder dumps say the ranks parted (fr_parting.h), when dumps were given.
  std::optional<FlightRecorderParting> fr_parting;
  bool flight_recorder_given = false;  // at least one dump was read

  // The first collective after the rendezvous, from the pairs' I/O (collective_phase.h):
  // who entered it and who had not when the first rank failed after the rendezvous.
  std::optional<CollectivePhase> collective;

  // Processes that take part in the job as ranks (workers and the store host), by rank.
  std::vector<const ProcessFacts*> ranks() const;
  const ProcessFacts* rank(int r) const;
  // The traced process listening on a store port (the store host), if any.
  const ProcessFacts* store_server(std::uint16_t port) const;
  // The traced store that a store connect of `client` could have reached: listening on its
  // port and, for a loopback destination, in the client's own network namespace (another
  // namespace's 127.0.0.1:29500 is another endpoint).
  const ProcessFacts* store_reached(const ProcessFacts& client, const Event& connect) const;
  // The process's entry in `misdirected`, if any.
  const Misdirected* misdirected_of(const ProcessFacts& f) const;
  // Ranks that reached the store far behind the others. c10d makes every rank wait for the
  // last one under the timeout (the store host for WORLD_SIZE clients, each client for its
  // peers' keys), so a job that succeeded with one is a near miss: later by the rest of the
  // timeout, the others' waits time out (straggler_timeout). Far behind: a first store
  // connect at least 1 s, and at least twice the spread of the earlier half of the arrivals,
  // after the usual arrival (the lower median). By lateness, the latest first; empty with
  // fewer than two arrivals.
  struct FarBehind {
    const ProcessFacts* f = nullptr;
    std::int64_t late_ns = 0;  // after the usual arrival
  };
  std::vector<FarBehind> ranks_far_behind() const;
  // The earliest launch: time zero of the report.
  std::optional<std::int64_t> t0() const;
  // The timeout the job configured, from traces (SO_RCVTIMEO, poll) or logs; ms.
  std::optional<std::int64_t> timeout_ms() const;
  bool has_traces() const { return !traces.processes.empty(); }
  // When the rendezvous had completed: every rank the job expected is traced, reached the
  // store and then connected to its peers (ProcessFacts::peer_connected_ns); the last of
  // those. nullopt when any of that is not shown, or when a rank's own log shows it timed out
  // waiting on the store for a rank's address key (it never finished init_process_group).
  std::optional<std::int64_t> rendezvous_completed_ns() const;
  bool any_rank_failed() const;
  // A torchrun agent that exited before it started any worker ended its own rendezvous: its
  // join timeout ran out (RendezvousTimeoutError) because a node never joined, or it stopped
  // on a rendezvous error of its own. Workers it started show as its spawns, or (when attach
  // came later) as traced processes whose parent it is.
  bool gave_up_its_rendezvous(const Process& agent) const;

  // Its parent is a traced launcher agent (torchrun's worker).
  bool parent_is_agent(const Process& p) const;
  const Ending& ending(const ProcessFacts& f) const { return endings[static_cast<std::size_t>(&f - facts.data())]; }
  // A rank that ended on its own: it failed (a non-zero exit, a signal, it vanished) while no
  // traced process had signalled it, without a rendezvous error of its own, neither in its
  // trace nor among its log lines (an exception that is no store error is its own).
  bool died_on_its_own(const ProcessFacts& f) const;
  // It entered the first collective after the rendezvous while another rank had not (by the
  // first failure after it): whatever it then died of, it was waiting for that rank.
  bool failed_waiting_in_collective(const ProcessFacts& f) const;
  // A rank that left the job early: it exited with status 0, with no error of its own and no
  // signal from a traced process, in a job whose rendezvous completed, after its own part of it
  // (its first connection to a peer, else the rendezvous's completion). Its peers still needed
  // it (every collective of the group takes every rank, and so do the store's barrier keys),
  // so the kernel's close of its sockets broke their connections to it: where a failure that
  // followed began, as a death's does, though it did not die.
  bool left_early(const ProcessFacts& f) const;
  // A rank that died on its own with a sign of its own cause: its exception among its log
  // lines (crash_line), or a signal nobody traced sent. A rank that merely exited 1 with no
  // line of its own may have failed of what another rank did to it.
  bool crashed_on_its_own(const ProcessFacts& f) const;
  // The first rank that died on its own, when the traces prove it first: the time it was
  // surely over is known (an exit record, its parent's reap, another process reading the end
  // of its store connection), every other rank that failed did so after it was last seen
  // alive and no earlier than 50 ms before that time (a rank killed without a record of it
  // may have died any time after its own last record, unless the end of its connection says
  // when: that is the earliest it may have failed), and at least one of them was seen alive
  // after that time (a record of its own, its launcher's signal, or its store connection still
  // open more than 50 ms later) and failed: its consequences. nullopt otherwise (a whole job killed at once proves no order).
  // A rank that left early (left_early) counts as well, when none of the ranks that failed
  // after it crashed on its own (crashed_on_its_own): their failures are then what its
  // leaving did to them.
  struct Death {
    const ProcessFacts* f = nullptr;
    std::int64_t by_ns = 0;                    // it was over by then
    std::vector<const ProcessFacts*> after;    // the ranks that failed after it, by rank
    bool left = false;                         // it left early (exit 0), it did not die
  };
  std::optional<Death> first_death() const;
  // When a failed process's failure showed: its first error, else the time it was surely
  // over (a signal a traced process sent it, its exit, its reap, the end of its connection),
  // else the last thing seen of it. nullopt when it did not fail.
  std::optional<std::int64_t> failure_time(const ProcessFacts& f) const;
  // The latest time the traces show anything of the job: an event's end, a call in flight
  // beginning, an exit. A process killed with no record of it (or still running) was alive
  // until at least its own last sign, and a call still in flight had waited at least until
  // this time, when nothing says it ended earlier. nullopt without traces.
  std::optional<std::int64_t> last_known_ns() const;
  // Until when a call `f` had in flight when it ended is known to have waited: the time f was
  // surely over or signalled, when known; else last_known_ns() (a lower bound: "at least").
  // `bound` is set when the time is that lower bound.
  std::int64_t waited_until(const ProcessFacts& f, bool* bound = nullptr) const;
  // The exception line of a rank's crash in the logs given: the last Python exception line
  // (not a "Traceback" header) among the lines matched to that rank (its prefix or its log
  // file's name), or nullptr.
  const LogEvent* crash_line(const ProcessFacts& f) const;

 private:
  // t0() and last_known_ns(), found once: the rules and their words ask for them per rank
  // (a hang of 16,384 ranks asked 16,384 times, each a walk over every event).
  void find_time_span();
  std::optional<std::int64_t> t0_, last_known_;
  // WORLD_SIZE from the traced ranks' headers when they agree (else the logs' "k/N clients
  // joined" when no header has it): ranks 0..N-1 are expected, and every one of them with no
  // process in the traces is absent. Left empty when it cannot be known for sure: no traced
  // rank, no or disagreeing world sizes, a traced rank outside 0..N-1, or a process that used
  // the store without a rank in its environment (a rank given on the command line). A world
  // size the user gave wins over the headers, and holds with no traced rank at all.
  void find_expected_ranks(std::optional<int> given);
  // The traced ranks' node numbers (GROUP_RANK, else SLURM_NODEID) and LOCAL_RANKs show the
  // layout rank = node * per_node + local_rank: a node number below WORLD_SIZE / per_node that
  // no traced rank has is a node of which nothing is traced. Nothing when the traced ranks do
  // not all fit one such layout, or come from one node only.
  void find_absent_nodes();
  void find_missing_agents();
};

// A rule's answer: a verdict it stands behind. Its class's row in the registry says how it
// ranks against the others.
struct Candidate {
  Verdict verdict;
  // False when the evidence fits the class but does not show its cause (a broken pipe with no
  // dead peer): the candidate then yields to classes that can explain it (ClassRow).
  bool cause_shown = true;
  // Issue 29: the logs show a process's death itself (a signal of its own, its own exception),
  // not only what the others saw of it. Such a rank_died candidate goes ahead of the classes
  // that the others' symptoms of a dead peer make (candidates_of, diagnose.cpp).
  bool death_shown = false;
  Evidence evidence;  // the rule's typed part: late_ranks, unresolved_name
  std::vector<Finding> findings;
  // The classes its evidence cannot tell it from (Diagnosis::alternatives), strongest first.
  std::vector<Alternative> alternatives;
  Discriminators discriminators;  // the rule's own; diagnose() adds the common ones
};

// "+12.34 s" relative to t0, for evidence lines.
std::string rel(const Context& c, std::int64_t wall_ns);
std::string fmt_seconds(double s);
std::string rank_list(const std::vector<int>& ranks);  // "0-2, 5"
// "ranks 0-2, launcher agent (node1 pid 7)": ranks folded, other processes by label.
std::string processes_words(const std::vector<const ProcessFacts*>& ms);
Finding finding_for(FailureClass cls, const ProcessFacts& f, std::optional<std::int64_t> t);
// A finding whose evidence is one log line ("FILE:LINE: text"), for the log-only paths.
Finding log_finding(FailureClass cls, const LogEvent& e);
std::optional<int> rank_of(const ProcessFacts& f);
// Where a process's loopback addresses lead: its network namespace (the boot and the netns
// inode of the trace's origin), else its host. Two processes reach each other's 127.0.0.1
// only when theirs are equal.
std::string loopback_scope(const Process& p);
std::optional<int> rank_of(const LogEvent& e);

}  // namespace rdzvscope

namespace rdzvscope {
// How a process ended, in words with times: "exited with status 1 at +4.80 s", "vanished
// without an exit record after +14.92 s (killed by a signal: SIGKILL, the OOM killer?); the
// store host rank 0 (vm pid 7) read the end of its connection at +14.94 s", "was stopped by
// the launcher agent pid 7 on vm (SIGTERM at +3.20 s)".
std::string ending_words(const Context& c, const ProcessFacts& f);
// "the kernel's OOM killer (its memory cgroup /job7 was at its limit; the kernel's log names
// python3 pid 5436)".
std::string oom_kill_words(const OomKill& k);
// What to do about it: "rank 1 (...) ran out of memory: lower what it holds ... or raise the
// job's memory limit (/job7)".
std::string oom_next_step(const Process& p, const OomKill& k);
// Its crash in the logs given: "its exception: rank1.log:23: RuntimeError: ..." (the exception
// line matched to it), else what torchrun's summary says of it ("torchrun's summary (FILE:LINE):
// exit code 1, traceback: ..."); "" when the logs say nothing of it.
std::string crash_words(const Context& c, const ProcessFacts& f);
// The call a process was waiting in when it ended (ProcessFacts::waiting_in) in words, with
// since when and for how long: "recv on its store connection to 127.0.0.1:29500 since
// +6.52 s, for at least 8.50 s"; "" when it was in none.
std::string waiting_words(const Context& c, const ProcessFacts& f);
// The call alone: "recv on its store connection to 127.0.0.1:29500", "a wait (poll, timeout
// 1800 s) on its store connection to ...", "connect to ...", "lookup of \"node0\"".
std::string inflight_call_words(const Event& call);
// "exit 1", "killed (SIGKILL)", "vanished", "stopped (SIGTERM from its agent)": for tables.
std::string ending_short(const Context& c, const ProcessFacts& f);
// "rank1.log:23: RuntimeError: ..." (the text cut to 200 bytes).
std::string log_line_words(const LogEvent& e);
// "ECONNREFUSED on connect to 127.0.0.1:29500", "recv of 0 bytes from ...": one event in words.
std::string describe(const Event& e);
// The kinds of activity in an arrival snapshot: "idle/waiting (0.4 s CPU in 6.1 s, read 2 MB)".
std::string activity(const ProcessFacts& f);
}  // namespace rdzvscope
