// The result of an analysis, shaped like the rdzvscope.diagnosis/1 JSON (docs/commands.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock_estimate.h"
#include "failure_class.h"

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

// What the verdict rests on, typed: the views and --runs read these, never the JSON
// discriminators (an output only, written from these and from each rule's own keys).
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
};

struct Finding {
  FailureClass cls = FailureClass::Unknown;
  std::optional<int> rank;
  std::string host;
  std::optional<int> pid;
  std::optional<std::int64_t> time_ns;
  std::vector<std::string> evidence;
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
  // A rank the job expected of which no process was traced (Evidence::absent_ranks): only
  // `rank` is set, every time is empty.
  bool absent = false;
  // The last traced event: where a vanished process was last seen (views only, not in JSON).
  std::optional<std::int64_t> last_seen_ns;
};

struct InputStats {
  std::size_t trace_files = 0, damaged_files = 0, log_files = 0;
  std::uint64_t events = 0, lost_events = 0, log_lines = 0, log_lines_matched = 0;
  std::vector<std::string> problems;  // one line per unreadable/damaged input
  // Rehearsal (`rdzvscope run --inject`): records the shim made up on purpose (flag
  // RDZV_F_INJECTED), and the ranks they are in (-1: a process without RANK). The verdict is
  // found as for a real fault; the reports say that this one was injected.
  std::uint64_t injected_events = 0;
  std::vector<std::int32_t> injected_ranks;  // sorted, unique
};

struct Diagnosis {
  Verdict verdict;
  Evidence evidence;
  std::vector<Finding> findings;
  nlohmann::ordered_json discriminators = nlohmann::ordered_json::object();
  std::vector<RankRow> ranks;
  InputStats inputs;
  std::string store_endpoint;  // "node1:29500 hosted by rank 0 (pid 4242)" when known
  std::optional<std::int64_t> t0_ns;  // the earliest launch: the report's +0.00 s
  std::vector<ClockEstimate> clocks;  // the reference host first; empty on one host
  std::vector<std::string> hosts;     // every traced process's host (agents too), sorted
};

}  // namespace rdzvscope
