// The result of an analysis, shaped like the rdzvscope.diagnosis/1 JSON (docs/commands.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock_estimate.h"
#include "failure_class.h"
#include "input_stats.h"
#include "torch_version.h"

namespace rdzvscope {

struct Process;  // process_model.h

struct Verdict {
  FailureClass cls = FailureClass::Unknown;
  std::optional<std::string> cause;
  std::optional<int> initiating_rank;
  std::optional<std::string> initiating_host;
  std::string confidence = "low";  // high | medium | low
  std::string summary;
  std::string next_step;
};

// The timeout the ranks waited under, and whether the job set it or it is an internal default.
struct TimeoutFact {
  std::int64_t ms = 0;
  bool internal_default = false;
  std::string note;  // which internal default, or "set by the job (...)"
};

// What the verdict rests on, typed: the views and --runs read these, never the
// discriminators (an output only, set from these and by each rule).
// A node the job expected of which no process is traced: every rank it should have run is
// absent (a node that never launched the job, or whose trace directory was not given). Nodes
// are numbered by the launcher (index_var): torchrun's GROUP_RANK, else Slurm's SLURM_NODEID;
// their host names are not in any trace, only the traced nodes' are.
struct AbsentNode {
  std::string index_var;
  int index = -1;
  std::vector<int> ranks;
};

struct Evidence {
  std::vector<int> failed_ranks;                    // every rank that failed, by rank
  std::optional<double> seconds_to_first_failure;   // launch to the first failure
  std::optional<TimeoutFact> timeout;
  std::vector<int> late_ranks;                      // straggler_timeout: who arrived late
  // Where it happened when not at the store: "the first collective after the rendezvous"
  // (straggler_timeout: late_ranks never entered it).
  std::optional<std::string> phase;
  // Ranks that died on their own (docs/classes.md, "Dead ranks"): the one that died first
  // (rank_died, broken_pipe/peer_died), or a rank the others waited for that died before it
  // reached the store (straggler_timeout). Their rows say how they ended, never "late".
  std::vector<int> dead_ranks;
  std::optional<std::string> unresolved_name;       // name_resolution: the name that failed
  // The ranks the job expected (WORLD_SIZE, the same in every traced rank's header; else the
  // logs' "k/N clients joined") of which no process is in the traces: never started, or
  // started without rdzvscope, or their trace files were not given. Empty when the expected
  // set is not known (no WORLD_SIZE, or the traced ranks disagree on it).
  std::optional<int> expected_world_size;
  std::vector<int> absent_ranks;
  std::vector<AbsentNode> absent_nodes;  // when absent ranks make up whole nodes
  // Set when the rendezvous had completed (Context::rendezvous_completed_ns) before the first
  // failure: the job failed after start-up. The rank that failed first, and when.
  std::optional<std::int64_t> rendezvous_completed_ns;
  std::optional<int> first_failed_rank;
  std::optional<std::int64_t> first_failure_ns;
  std::optional<TorchVersion> torch_version;  // the job's PyTorch (torch_version.h)
};

// Discriminators: the facts that tell a verdict from its neighbours (docs/classes.md), each a
// typed value under the name the JSON gives it. A rule sets its own; diagnose() adds those
// every verdict carries. The JSON view writes them (report_json.cpp), the text and HTML views
// word them (discriminator_words); nothing reads them back to decide anything (the typed
// Evidence above is what the views and --runs decide on).

// Not known: JSON null (no PyTorch version in the logs, no failure seen).
struct NotKnown {};
// Ranks, in the order found: JSON [0, 1, 2]; in words folded, "0-2".
struct RankSet {
  std::vector<int> ranks;
};
// Hosts, processes, log lines, class names: JSON ["a", "b"]; in words "a, b".
struct NameList {
  std::vector<std::string> names;
};
// A duration: JSON a number of seconds; in words "3.52 s".
struct Seconds {
  double s = 0;
};
// rendezvous_completed: the rendezvous had completed before the first failure (times as the
// report gives them, "+5.00 s").
struct AfterRendezvous {
  std::string at;
  int first_failed_rank = -1;
  std::string first_failure;
};
// config_mismatch: one setting the processes disagree on; each value with who has it.
struct MismatchedSetting {
  std::string setting, expected;
  std::vector<std::pair<std::string, std::vector<std::string>>> values;
  std::vector<std::string> differing;
};

using DiscriminatorValue = std::variant<NotKnown, std::int64_t, std::string, Seconds, RankSet, NameList, TimeoutFact,
                                        AfterRendezvous, std::vector<AbsentNode>, std::vector<MismatchedSetting>>;

struct Discriminator {
  std::string name;
  DiscriminatorValue value;
};

// In the order set, as the JSON object lists them.
class Discriminators {
 public:
  // A name set before keeps its place and takes the new value (a rule's own `pytorch` stays
  // where the rule put it when the common ones are added).
  void set(std::string_view name, DiscriminatorValue value);
  const DiscriminatorValue* find(std::string_view name) const;
  template <class T>
  const T* get(std::string_view name) const {
    const DiscriminatorValue* v = find(name);
    return v ? std::get_if<T>(v) : nullptr;
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  std::vector<Discriminator>::const_iterator begin() const { return items_.begin(); }
  std::vector<Discriminator>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Discriminator> items_;
};

// One discriminator's value for people: "0-2, 5", "node1, node2", "3.00 s (configured: ...)".
std::string discriminator_words(const DiscriminatorValue& v);

// Issue 29: a class the evidence cannot tell from the verdict's (a bare client connect timeout
// is printed by a store not up yet, a late store host and a blocked path alike). The verdict
// keeps its leading class; each alternative says why it fits too and what would tell the two
// apart. A rule adds them from its mechanism's ambiguity (Candidate::alternatives), never per
// log; the views word them, the JSON lists them as `alternatives`.
struct Alternative {
  FailureClass cls = FailureClass::Unknown;
  std::optional<std::string> cause;
  std::string why;     // why the evidence fits this class too
  std::string settle;  // what would tell it from the leading class (a trace of rank 0, preflight)
};

// One alternative for people: "straggler_timeout: WHY; what would tell: SETTLE".
std::string alternative_words(const Alternative& a);

struct Finding {
  FailureClass cls = FailureClass::Unknown;
  std::optional<int> rank;
  std::string host;
  std::optional<int> pid;
  std::optional<std::int64_t> time_ns;
  std::vector<std::string> evidence;
};

// The first collective after the rendezvous as the views draw it (issue 28): one rank's span
// from the moment it left the store's rendezvous (its first pair connect) to the end of its
// part, found once from the model (collective_phase.cpp) so that the HTML chart, the text
// report and the Perfetto timeline draw the same thing. Set only where the model found the
// phase (Context::collective: the rendezvous completed, then a rank failed).
struct CollectiveSpan {
  enum class Part {
    Waited,        // it entered by the first failure and waited there for the others
    NeverEntered,  // it sent no collective message on its pairs while it was traced
    EnteredLate,   // it sent its first one only after the first failure
    Dead,          // it died on its own (Evidence::dead_ranks): dead, never late
  };
  Part part = Part::Waited;
  std::int64_t begin_ns = 0;               // its first pair connect: it left the store's rendezvous
  std::optional<std::int64_t> pairs_done_ns;  // the last of its pairs was made
  std::optional<std::int64_t> entered_ns;  // its first collective message on its pairs
  std::int64_t end_ns = 0;  // its part ended: its failure, its exit, or its last record (dead: alive until then)
  // entered_ns + the pairs' timeout: where its own wait in the collective would run out.
  std::optional<std::int64_t> deadline_ns;
  std::optional<std::int64_t> gone_ns;  // Dead: when it was surely over (Ending::over_ns)
  std::string ended;                    // Dead: how ("killed (SIGKILL)", "exit 1", "vanished")
  // The work its own collective timeout line names (NCCL's watchdog: OpType, SeqNum), where its
  // log says it (log_facts.h, first_logged_work); ""/nullopt otherwise (gloo names neither).
  std::string op;
  std::optional<std::int64_t> sequence;
};

// The phase as a whole (Diagnosis::collective): when the rendezvous completed, the first
// failure after it, and the timeout on the pairs (nullopt: not recorded).
struct CollectiveOutline {
  std::int64_t completed_ns = 0;
  std::int64_t first_failure_ns = 0;
  std::optional<int> first_failed_rank;
  std::optional<std::int64_t> timeout_ms;
  // The collective's op and sequence number, where a timeout line of the logs names them (the
  // first that does, any rank's); ""/nullopt otherwise.
  std::string op;
  std::optional<std::int64_t> sequence;
};

// One line of the per-rank table.
struct RankRow {
  std::optional<int> rank;
  std::string host;
  int pid = 0;
  std::string container;            // Process::container: "" when none
  std::uint64_t pid_namespace = 0;  // Process::own_pidns: 0 in the host's initial one
  const Process* process = nullptr; // views only: the row's process (none for absent ranks)
  std::string role;
  std::optional<std::int64_t> launched_ns, resolved_ns, first_store_connect_ns, connected_ns;
  std::optional<std::int64_t> first_error_ns;
  std::string first_error;  // "ECONNREFUSED on connect", "Socket Timeout (log)", ...
  std::optional<std::int64_t> exit_ns;
  std::optional<int> exit_status;
  bool vanished = false;
  bool late = false;
  // Evidence::phase set: one of late_ranks, a rank that never entered the first collective
  // after the rendezvous (it had reached the store in time: never `late`).
  bool stalled = false;
  // Evidence::dead_ranks: it died on its own. `ended` says how a dead rank ended ("exit 1",
  // "killed (SIGKILL)", "vanished"), or that a traced launcher stopped the rank ("stopped
  // (SIGTERM from its agent)"); "" otherwise. The JSON row has them only when set.
  bool dead = false;
  std::string ended;
  // A rank the job expected of which no process was traced (Evidence::absent_ranks): only
  // `rank` is set, every time is empty.
  bool absent = false;
  // The last traced event: where a vanished process was last seen (views only, not in JSON).
  std::optional<std::int64_t> last_seen_ns;
  // Its part in the first collective after the rendezvous (every view: the JSON row's
  // `collective`, the text's COLLECTIVE section, the HTML chart, the timeline).
  std::optional<CollectiveSpan> collective;
};

// What the analysis read, and what it found damaged or lost: the counters of the table in
// input_stats.h (its names, meanings and where each is counted), and the problems in words.
struct InputStats {
  Stats counts;
  std::uint64_t operator[](Stat s) const { return counts[s]; }
  std::vector<std::string> problems;  // one line per unreadable/damaged input
  // Rehearsal (`rdzvscope run --inject`): records the shim made up on purpose (flag
  // RDZV_F_INJECTED, counted as Stat::InjectedEvents), and the ranks they are in (-1: a
  // process without RANK). The verdict is found as for a real fault; the reports say that
  // this one was injected.
  std::vector<std::int32_t> injected_ranks;  // sorted, unique
};

// Where PyTorch's Flight Recorder dumps say the ranks parted (model/fr_parting.h): in one
// process group, the collective some ranks entered and others did not, or entered only after
// the others' timeout had run out. Derived once from the dumps (Context::fr_parting); the
// verdict's evidence and every view read it from here.
struct FlightRecorderParting {
  enum class Kind {
    NeverEntered,  // `behind` had not entered collective `sequence` when they dumped
    EnteredLate,   // `behind` entered it after the first rank's timeout in it had run out
    Undecided,     // every dumped rank entered it; the ranks that would settle it left no dump
  };
  Kind kind = Kind::NeverEntered;
  std::string pg_name, pg_desc;   // process_group: "0", "default_pg"
  std::int64_t sequence = 0;      // collective_seq_id of the group
  std::string op;                 // "all_reduce" (profiling_name without "nccl:"/"gloo:")
  std::string backend;            // "nccl", "gloo"
  std::vector<int> behind;        // the ranks the others waited for
  std::vector<int> waited;        // the ranks that entered it (in time) and waited
  std::vector<int> no_dump;       // members of the group with no dump file: dead, or never dumped
  std::map<int, std::int64_t> last_sequence;  // each dumped member's last collective in the group (0: none)
  std::map<int, std::string> state;           // each waiting rank's state of the entry ("started")
  std::optional<std::int64_t> timeout_ms;     // the entries' timeout
  std::optional<std::int64_t> first_entered_ns;  // the earliest enqueue of it (host clock)
  std::map<int, std::int64_t> late_ns;        // EnteredLate: how long after that deadline each entered
  std::vector<std::string> files;             // the dumps read
  std::string version;                        // their format version ("2.10")
};

struct Diagnosis {
  Verdict verdict;
  Evidence evidence;
  std::vector<Finding> findings;
  std::vector<Alternative> alternatives;  // the runners-up of an ambiguous verdict, strongest first
  Discriminators discriminators;
  std::vector<RankRow> ranks;
  std::optional<CollectiveOutline> collective;  // set with the rows' CollectiveSpan
  std::optional<FlightRecorderParting> flight_recorder;  // set where dumps were read and say it
  InputStats inputs;
  std::string store_endpoint;  // "node1:29500 hosted by rank 0 (pid 4242)" when known
  std::optional<std::int64_t> t0_ns;  // the earliest launch: the report's +0.00 s
  std::vector<ClockEstimate> clocks;  // the reference host first; empty on one host
  std::vector<std::string> hosts;     // every traced process's host (agents too), sorted
};

}  // namespace rdzvscope
