// Internal: the per-line classifier that scan_log runs on the lines the prefilter picked.
#pragma once

#include <optional>
#include <string_view>

#include "logs/log_scan.h"

namespace rdzv::logs {

// What a glog stamp ("W1129 23:19:18", no year) needs: the year and month of the file's
// mtime. year 0: unknown (glog stamps then give no wall_time).
struct TimeContext {
  int year = 0;
  int month = 0;
};

// The rank of the "[rankN]:"-style prefixes at the start of s, or -1.
int line_prefix_rank(std::string_view s);

std::optional<LogEvent> classify_body(std::string_view line, int default_rank, const TimeContext& tc);

}  // namespace rdzv::logs
