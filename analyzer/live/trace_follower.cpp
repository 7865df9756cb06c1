#include "trace_follower.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>

namespace rdzvscope {

bool TraceFollower::up_to_date(const std::string& file,
                               const std::optional<TraceProgress>& now) const {
  const auto it = seen_.find(file);
  if (it == seen_.end() || !now || it->second.progress != now) return false;
  // Reserved slots whose record was not sealed yet when last read may be sealed by now.
  return it->second.read.torn == 0 && now->header_complete;
}

std::vector<std::string> TraceFollower::list(
    std::vector<std::pair<std::size_t, Error>>& listing_errors) const {
  std::vector<std::string> files;
  for (const auto& path : paths_) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      listing_errors.emplace_back(files.size(), Error{path, std::strerror(errno), std::nullopt});
      continue;
    }
    auto listed = trace_files_in(path);
    // An empty directory is a job that has not started yet, not a problem.
    if (listed)
      files.insert(files.end(), listed.value().begin(), listed.value().end());
    else if (!S_ISDIR(st.st_mode))
      listing_errors.emplace_back(files.size(), listed.error());
  }
  return files;
}

TraceInputs TraceFollower::refresh() {
  std::vector<std::pair<std::size_t, Error>> listing_errors;
  const std::vector<std::string> files = list(listing_errors);

  std::vector<std::string> changed;
  std::vector<std::optional<TraceProgress>> progress(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    progress[i] = read_progress(files[i]);
    if (!up_to_date(files[i], progress[i])) changed.push_back(files[i]);
  }
  // Progress is read before the records: a record sealed in between is read now and seen
  // again next time, never missed.
  std::vector<FileRead> reads = read_trace_files(changed);
  std::unordered_map<std::string, std::size_t> changed_at;
  for (std::size_t i = 0; i < changed.size(); ++i) changed_at[changed[i]] = i;

  std::unordered_set<std::string> listed(files.begin(), files.end());
  std::erase_if(seen_, [&](const auto& kv) { return !listed.count(kv.first); });  // files removed
  std::vector<FileRead> all;
  all.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    Seen& s = seen_[files[i]];
    if (auto c = changed_at.find(files[i]); c != changed_at.end()) {
      s.progress = progress[i];
      s.read = std::move(reads[c->second]);
    }
    all.push_back(s.read);  // assemble_traces consumes its reads; the cache keeps its own
  }
  stats_ = Stats{files.size(), changed.size()};
  return assemble_traces(files, std::move(all), listing_errors);
}

}  // namespace rdzvscope
