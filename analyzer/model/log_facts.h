// The job's logs, read through logs/log_scan.h, indexed for the rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "input_stats.h"
#include "logs/log_scan.h"
#include "reader/error.h"

namespace rdzvscope {

using LogFamily = rdzv::logs::Family;
using LogEvent = rdzv::logs::LogEvent;

// Two lines of one writer: the same file, and the same host or pod prefix within it.
bool same_source(const LogEvent& a, const LogEvent& b);

struct LogFacts {
  std::vector<LogEvent> events;
  // Issue 13: lines of the families that say nothing about the store (logs::is_other_error:
  // gloo/NCCL transport errors, NCCL without an interface, a bare "No route to host", exception
  // lines no family matched), in file order. The rules never read them; a log that holds them
  // is `unknown` (they are quoted), never `healthy`.
  std::vector<LogEvent> other_errors;
  // torchrun's launch configuration as its INFO lines print it, one per agent: per log source
  // (a file, and within it the host or pod of a prefixed line), a setting seen again starts the
  // next agent's block. Settings by torchrun's option names ("rdzv-id", "rdzv-endpoint",
  // "rdzv-backend", "nnodes" as N or MIN:MAX, "nproc-per-node"); `line` is where it begins.
  struct LaunchConfig {
    std::string file, origin;
    std::uint64_t line = 0;
    std::map<std::string, std::string> settings;
  };
  std::vector<LaunchConfig> launch_configs;
  // The run ids of torchelastic's log directories ("log directory set to: .../RUNID_XXXX"),
  // in file order: the run id where the launch settings are not printed (1.x logs this line
  // at its default level).
  std::vector<std::string> log_dir_run_ids;
  // torchrun's agent past the end of its node's workers (agent_teardown lines: its workers
  // succeeded, or its exit barrier failed), in file order. What the same agent logs after one
  // is the job's teardown (settle_log_facts).
  std::vector<LogEvent> teardown_marks;
  // Issue 29: processes that reached their interpreter's exit with their NCCL process group
  // alive (group_left_at_exit lines), in file order: past their rendezvous, at their end.
  std::vector<LogEvent> exit_marks;
  // Issue 29: gloo devices that bound loopback because the host name resolved to nothing
  // (gloo_loopback_fallback lines), in file order: those ranks published 127.0.0.1.
  std::vector<LogEvent> gloo_loopback_fallbacks;
  // Issue 29: c10d's warnings that a store socket of one address family (IPv6, on a host
  // without it) could not be made, after which it goes on to the next address
  // (address_family_unsupported lines), in file order. Noise that every job on such a host logs.
  std::vector<LogEvent> family_fallbacks;
  // torchelastic's agent restarting its workers (worker_group_restart lines), in file order.
  std::vector<LogEvent> restarts;
  // Issue 29: processes that ended, as the shell, the kernel's OOM killer, torch.multiprocessing
  // or the old launcher reported it (process_died lines), in file order. No store failure: the
  // rules that read the store's errors do not see them; rank_died does.
  std::vector<LogEvent> deaths;
  // Issues 28 and 29: stack frames that say where a process was (stack_frame lines: the
  // distributed_c10d.py function of a Python traceback, TCPStore's constructor in a C++ one),
  // in file order. No failure: the rules read them beside the line they explain.
  std::vector<LogEvent> frames;
  // Issue 29: PyTorch Lightning's announcements of a process entering init_process_group, and
  // rank 0's that it returned (init_announced lines), in file order. No failure.
  std::vector<LogEvent> init_entries;
  // torchrun's failure summary (worker_failure lines: the ChildFailedError block its agent
  // prints once a worker failed), one entry per failure it lists, in file order. The one under
  // "Root Cause (first observed failure)" is the worker whose failure torchrun saw first; the
  // others are the workers it then stopped (exitcode -15: SIGTERM) or that failed too.
  struct WorkerFailure {
    std::string file, origin;
    std::uint64_t line = 0;       // its "rank" line
    bool root_cause = false;
    int rank = -1, local_rank = -1;
    std::optional<int> exitcode;  // negative: the signal that ended it (-15: SIGTERM)
    std::optional<int> pid;
    std::string error_file;       // "" when torchrun says <N/A>
    // When torchrun saw it fail ("2024-03-01_12:00:05"), "" when not read. Whole seconds: the
    // time of the error file's record, or, with none, of the agent's poll that found the exit.
    std::string time;
    std::string traceback;        // "" when it only says how to enable tracebacks
    // Its exception line: below a traceback field (a worker whose main torchrun's @record
    // wraps), else, for the root cause, the worker's own line in the agent's log (see
    // put_failures_together in log_facts.cpp); exception_line is where it is, 0 when none.
    std::string exception;
    std::uint64_t exception_line = 0;
  };
  std::vector<WorkerFailure> worker_failures;
  // The summary's lines as read, until settle_log_facts puts each failure together.
  std::vector<LogEvent> worker_failure_lines;
  // The first root cause of torchrun's summaries, or nullptr.
  const WorkerFailure* root_cause() const;
  // The other failures of `root`'s summary that torchrun saw in the same second. torchrun names
  // as root cause the failure of the smallest time, and among equal times the first it lists
  // (the lowest local rank): with any of these, its choice says nothing of which went first.
  std::vector<const WorkerFailure*> tied_with(const WorkerFailure& root) const;
  // Issue 29: lines that say the job went on past its rendezvous (logs/progress.h), and
  // torchrun's agents past their workers' success (teardown_marks, copied here), in file order:
  // the first of each process after each of its rendezvous lines, and each file's first.
  std::vector<rdzv::logs::ProgressLine> progress;
  // The first progress line after `e` from the same process (same file; the same rank, or a line
  // that carries none), or nullptr: the process got past e and went on.
  const rdzv::logs::ProgressLine* went_on_after(const LogEvent& e) const;
  const rdzv::logs::ProgressLine* went_on_after(const std::string& file, std::uint64_t line, int rank) const;
  // The last line of each process that the reader picked and could not read (LogScan::unread):
  // whatever it says, a process that went on after it got past it.
  std::vector<rdzv::logs::ProgressLine> unread;
  // Issue 29, derived once (settle_log_facts): the job went on past everything it logged of its
  // rendezvous. There is progress; every rendezvous line is a warning (c10d logs its retries
  // and fallbacks as warnings, and raises what it gives up on) that its process went on from,
  // and so is the last line of each process that the reader could not read (unread);
  // none is a bind failure (a store that could not bind and went on is rdzv_collision's); and
  // nothing fatal is logged anywhere: no exception or transport error, no death, no failure
  // summary.
  bool job_went_on = false;
  // Issue 29, derived once (settle_log_facts): Lightning's announcements (init_entries) that
  // give the same rank twice in one start-up (no failure logged between the two copies, as a
  // restart would have). A launcher gives each process of a job a rank of its own: a rank twice
  // is processes numbered alike. `announced` counts the announcements of the start-up: no more
  // than the world size is one job whose nodes numbered their processes alike (the same node
  // rank on each, or an allocation that disagrees with the trainer's counts: config_mismatch);
  // more is more processes than one job has, two launches on one rendezvous (rdzv_collision).
  struct RanksTwice {
    std::vector<int> twice, missing;  // the ranks announced twice, and those never announced
    int world = -1;
    int announced = 0;
    std::size_t second = 0;  // init_entries' index of the first rank's second announcement
    bool more_than_the_world() const { return announced > world; }
  };
  std::optional<RanksTwice> ranks_twice;
  std::string torch_version;  // from the logs, "" when not printed
  std::string version_hint;   // ">=2.5" / "<=2.4" from message styles, "" when no clue
  // The log rows of the table (input_stats.h): log_files, partial_log_files (read up to
  // damage, a truncated .gz: in errors and used), log_lines, log_lines_matched.
  Stats stats;
  std::vector<Error> errors;

  std::vector<const LogEvent*> of(std::initializer_list<LogFamily> families) const;
  // Issue 29: a process's first error outranks its follow-on lines. The line of a connect that
  // reached an address and ended its try (a c10d connect or connect/validate failure with an
  // errno c10d does not retry: not a refusal or a reset, retried from a new lookup) before `e`, from the same process (file, origin and rank) and the same port
  // when both lines give one: the name had resolved by then, so a lookup failure at `e` (c10d
  // asks again for the other address family, or on its next round) follows the connect's error
  // and did not cause it. nullptr when there is none.
  const LogEvent* connect_before(const LogEvent& e) const;
  bool any(std::initializer_list<LogFamily> families) const { return !of(families).empty(); }
  // A line that says something of the rendezvous or of a collective's wait: any event but a
  // reverse lookup's warning, which a resolver without reverse zones prints beside any job.
  bool any_rendezvous_error() const;
};

// A transport line (gloo's pair, NCCL's socket or proxy) that says the process at the other end
// of a rank's connection went away: gloo's "Connection closed by peer" and "Read error ...
// Connection reset by peer", NCCL's "Connection closed by remote peer" and ncclRemoteError's
// "remote process exited" (its ncclRemoteError, an exception line).
bool says_peer_went_away(const LogEvent& e);

// Issue 29: a transport line that says a rank's connection to the address a peer published went
// unanswered: the active side's connect timed out or found no route (gloo's "failed to connect
// ... error=SO_ERROR: Connection timed out", "timed out connecting: ...", NCCL's "Connect to
// ... failed : Connection timed out"), or the passive side's wait for the peer's connect ran
// out (gloo's "connectFullMesh failed with [...pair.h:311] Connect timeout", worded "no error"
// by the gloo of 2.1 to 2.5). `active`: the line names the address that did not answer.
struct PeerUnanswered {
  const LogEvent* line = nullptr;
  bool active = false;
};
std::optional<PeerUnanswered> peer_unanswered(const LogEvent& e);

// The work a collective timeout line names (NCCL's watchdog: "WorkNCCL(SeqNum=12,
// OpType=ALLREDUCE, ..., Timeout(ms)=60000)"): its op and sequence number, each where the line
// says it (gloo's "Timed out waiting 2000ms for recv operation" names neither).
struct LoggedWork {
  std::string op;                     // "ALLREDUCE"; "" when not said
  std::optional<std::int64_t> sequence;  // SeqNum
};
// nullopt when the line names neither.
std::optional<LoggedWork> logged_work(const LogEvent& e);
// The collective a rank's Python traceback shows it in, for a collective timeout line `e` that
// names none (gloo's): the innermost public function of distributed_c10d.py ("all_reduce",
// "barrier") among the frames of e's file and rank between its traceback's header and e (Python
// prints the frames, most recent last, then the exception line). "" when there is none.
std::string collective_in_traceback(const LogFacts& logs, const LogEvent& e);
// Issue 29: where in the store's life a store connection broke, from the C++ backtrace c10d
// prints below its warning (the frames of e's file and rank within 40 lines below it): inside
// TCPStore's constructor (its connect, validation ping, the count of workers), before the store
// was ever used.
bool in_store_constructor(const LogFacts& logs, const LogEvent& e);
// Issue 29: a 0-byte read on a store connection after the store's constructor had passed: the
// reply to a wait for keys ("recvValueWithTimeout failed"), or the NCCL watchdog's check of its
// "should dump" flag, which runs once the process group exists. c10d's server closes a
// validated client's connection only when it ends (its process exits or crashes).
bool closed_after_store_constructor(const LogFacts& logs, const LogEvent& e);
// The work named by the first collective timeout line (watchdog_timeout, gloo_collective_timeout)
// that names an op, of `rank` (-1: of any rank). nullopt: no such line.
std::optional<LoggedWork> first_logged_work(const LogFacts& logs, int rank = -1);

// Issue 29: the logs hold a torchrun agent (its launch settings, failure summary, teardown, a
// rendezvous error of torchelastic, a frame of its code in a traceback). Under torchrun the
// workers' env:// store is the agent's (the static backend, and c10d's from 2.4 unless
// TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1), up before any worker starts; an agent's own store
// connect goes to the rendezvous endpoint, hosted by the first node's agent.
bool shows_torchrun_agent(const LogFacts& logs);

// Issue 29: clients that ran out their whole connect timeout on a store at their own node's
// loopback (client_connect_timeout lines to 127.0.0.0/8, localhost or ::1, and to no other
// address), with no line of a connect that failed otherwise (no SYN timed out, no errno, no
// lookup): c10d retries a refused connect silently until its deadline, and a SYN to loopback is
// answered at once (by a listener, or by a refusal) unless a firewall rule on the loopback
// interface drops it. So nothing listened on that port of this node for the whole timeout. Not
// when every process's last such line is 2.x's retry of the connect, which may have succeeded.
// Outside torchrun (shows_torchrun_agent) that store is rank 0's init_process_group's (env://
// and tcp://: TCPStore(is_master = rank == 0)). Not when rank 0 announced entering
// init_process_group (Lightning's line). The first such line, or nullptr.
const LogEvent* loopback_store_never_up(const LogFacts& logs);

// Issue 29: tracebacks through the entry of transformers' (or accelerate's) main_process_first:
// its caller's source line ("with training_args.main_process_first(desc=...)") with contextlib's
// __enter__ frame on the next line of the same file. Every process but the main one waits at a
// barrier on that entry until the main one has run the block and reached the barrier at its
// end; an exception out of the entry is a replica's wait that failed. The source lines, one per
// traceback, in file order.
std::vector<const LogEvent*> waits_for_main_process(const LogFacts& logs);

// Reads the logs and settles what needs all of them (settle_log_facts).
LogFacts load_logs(const std::vector<std::string>& paths);

// Files one classified line where the rules look for it: a launch setting into its agent's
// configuration, a success of the workers apart, an error that says nothing about the store
// among other_errors, the rest among events.
void add_log_event(LogFacts& facts, LogEvent e);

// What is derived once the events are in: torchrun's --nnodes from min/max nodes, torchrun's
// failure summaries put together (worker_failures), and the
// errors of the job's teardown are set aside. Once every worker of a node exited 0, its agent
// still talks to the store: the exit barrier, keep-alive heartbeats, the rendezvous shutdown.
// When the agent that hosts the store exits first, each of these calls fails (a 0-byte read, a
// broken pipe), in whatever order the calls happen to run: the job was already ending, so
// those lines say nothing of why it failed. Set aside: the store errors and exception lines an
// agent logs after its own teardown mark (same file and host: its workers succeeded, or its
// exit barrier failed; the C++ warning of the barrier's failed store call, printed just above
// the barrier's error, with it), and the store errors of an agent's report of its failed
// rendezvous shutdown.
void settle_log_facts(LogFacts& facts);

}  // namespace rdzvscope
