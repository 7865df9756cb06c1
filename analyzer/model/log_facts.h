// The job's logs, read through logs/log_scan.h, indexed for the rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "input_stats.h"
#include "logs/log_scan.h"
#include "reader/error.h"

namespace rdzvscope {

using LogFamily = rdzv::logs::Family;
using LogEvent = rdzv::logs::LogEvent;

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
  std::string torch_version;  // from the logs, "" when not printed
  std::string version_hint;   // ">=2.5" / "<=2.4" from message styles, "" when no clue
  // The log rows of the table (input_stats.h): log_files, partial_log_files (read up to
  // damage, a truncated .gz: in errors and used), log_lines, log_lines_matched.
  Stats stats;
  std::vector<Error> errors;

  std::vector<const LogEvent*> of(std::initializer_list<LogFamily> families) const;
  bool any(std::initializer_list<LogFamily> families) const { return !of(families).empty(); }
};

// Reads the logs and settles what needs all of them (settle_log_facts).
LogFacts load_logs(const std::vector<std::string>& paths);

// What is derived once the events are in: torchrun's --nnodes from min/max nodes, and the store
// errors an agent logged while failing to shut its rendezvous down are set aside (at the end
// of every torchrun run the agents close the rendezvous through the store; when the agent that
// hosts the store exited first, the others' last store call reads 0 bytes or hits a broken
// pipe: the job was already ending, so those lines say nothing of why it failed).
void settle_log_facts(LogFacts& facts);

}  // namespace rdzvscope
