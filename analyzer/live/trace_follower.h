// Follows trace directories while a job writes them (`rdzvscope watch`). Trace files are
// written in place (mapped, each record sealed when complete), so a hung job's state is on
// disk already; what costs is reading thousands of files every second. A refresh therefore
// lists the directories, reads each file's header (one 4 KiB read), and decodes again only the
// files whose progress changed or that held unfinished records: new files, files that grew
// records, files whose header was not complete yet. A watcher only reads: it never writes,
// locks or truncates a file, so it cannot block or slow a writer.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/process_model.h"
#include "reader/trace_reader.h"

namespace rdzvscope {

class TraceFollower {
 public:
  explicit TraceFollower(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  // The processes of every trace file under the paths now. Paths with no trace file yet are
  // not errors (the job may not have started); a path that cannot be listed is one.
  TraceInputs refresh();

  struct Stats {
    std::size_t files = 0;    // trace files listed
    std::size_t decoded = 0;  // of them decoded again (new or changed)
  };
  const Stats& last_refresh() const { return stats_; }

 private:
  struct Seen {
    std::optional<TraceProgress> progress;
    FileRead read;
  };
  bool up_to_date(const std::string& file, const std::optional<TraceProgress>& now) const;
  std::vector<std::string> list(std::vector<std::pair<std::size_t, Error>>& listing_errors) const;

  std::vector<std::string> paths_;
  std::unordered_map<std::string, Seen> seen_;
  Stats stats_;
};

}  // namespace rdzvscope
