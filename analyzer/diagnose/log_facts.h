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
  std::string torch_version;  // from the logs, "" when not printed
  std::string version_hint;   // ">=2.5" / "<=2.4" from message styles, "" when no clue
  std::size_t files = 0;
  std::uint64_t lines = 0, matched = 0;
  std::vector<Error> errors;

  std::vector<const LogEvent*> of(std::initializer_list<LogFamily> families) const;
  bool any(std::initializer_list<LogFamily> families) const { return !of(families).empty(); }
};

LogFacts load_logs(const std::vector<std::string>& paths);

}  // namespace rdzvscope
