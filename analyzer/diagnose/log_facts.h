// The job's logs, read through logs/log_scan.h, indexed for the rules.
#pragma once

#include <string>
#include <vector>

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
  std::string torch_version;  // from the logs, "" when not printed
  std::string version_hint;   // ">=2.5" / "<=2.4" from message styles, "" when no clue
  std::size_t files = 0;
  std::size_t partial_files = 0;  // read up to damage (a truncated .gz): in errors and used
  std::uint64_t lines = 0, matched = 0;
  std::vector<Error> errors;

  std::vector<const LogEvent*> of(std::initializer_list<LogFamily> families) const;
  bool any(std::initializer_list<LogFamily> families) const { return !of(families).empty(); }
};

LogFacts load_logs(const std::vector<std::string>& paths);

}  // namespace rdzvscope
