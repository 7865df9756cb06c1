#include "sequential_runs.h"

#include <algorithm>
#include <map>

namespace rdzvscope {

std::vector<RunSpan> sequential_runs(const TraceInputs& traces) {
  std::map<std::string, RunSpan> by_id;
  for (const Process& p : traces.processes) {
    // A process without an id (a helper, a launcher without the variables) cannot be placed.
    if (p.job_key.empty() || p.job_key == "none") continue;
    RunSpan& s = by_id[p.job_key];
    const std::int64_t last = std::max(p.launched_ns, p.last_event_ns());
    if (s.processes++ == 0) {
      s.id = p.job_key;
      s.first_ns = p.launched_ns;
      s.last_ns = last;
    } else {
      s.first_ns = std::min(s.first_ns, p.launched_ns);
      s.last_ns = std::max(s.last_ns, last);
    }
  }
  if (by_id.size() < 2) return {};
  std::vector<RunSpan> out;
  for (auto& [id, s] : by_id) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const RunSpan& a, const RunSpan& b) { return a.first_ns < b.first_ns; });
  std::int64_t ended = out[0].last_ns;
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (out[i].first_ns <= ended) return {};  // two runs at once: a collision, not retries
    ended = std::max(ended, out[i].last_ns);
  }
  return out;
}

}  // namespace rdzvscope
