#include "consistency.h"

#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "class_registry.h"

namespace rdzvscope {

namespace {

std::string rank_words(const RankRow& row) {
  return row.rank ? "rank " + std::to_string(*row.rank) : row.host + " pid " + std::to_string(row.pid);
}

// A class that means the rendezvous never completed, on a job whose rendezvous completed.
void startup_class_after_completion(const Diagnosis& d, std::vector<std::string>& out) {
  const ClassRow* row = row_of(d.verdict.cls);
  if (!row || !row->startup_only || !d.evidence.rendezvous_completed_ns) return;
  out.push_back(fmt::format("{} says the rendezvous never completed, but it completed before the first failure",
                            name_of(d.verdict.cls)));
}

// The earliest error of any rank but `self`: when the others began to fail.
std::optional<std::int64_t> others_first_error(const Diagnosis& d, const RankRow& self) {
  std::optional<std::int64_t> first;
  for (const RankRow& row : d.ranks)
    if (&row != &self && row.first_error_ns && (!first || *row.first_error_ns < *first)) first = row.first_error_ns;
  return first;
}

// A rank that exited (an exception's status 1, or even 0: it left early) before it ever tried
// the store, and before any other rank failed, is gone, not late: the others failed because it
// had ended. (A late rank that tries the store after the others gave up ends too: that is its
// lateness. A killed rank leaves no exit: when it was last seen says nothing of when it died,
// so it is not judged.)
void dead_rank_called_late(const Diagnosis& d, std::vector<std::string>& out) {
  for (const RankRow& row : d.ranks) {
    if (!row.late || !row.exit_status || row.first_store_connect_ns || !row.exit_ns)
      continue;
    const auto others = others_first_error(d, row);
    if (!others || *row.exit_ns >= *others) continue;
    out.push_back(rank_words(row) + " is called late, but it exited with status " +
                  std::to_string(*row.exit_status) +
                  " before it tried the store and before any other rank failed: it had ended, it was not late");
  }
}

// An alternative is another class than the verdict's: the runner-up of an ambiguous verdict.
void alternative_is_the_verdict(const Diagnosis& d, std::vector<std::string>& out) {
  for (const Alternative& a : d.alternatives)
    if (a.cls == d.verdict.cls)
      out.push_back(fmt::format("{} is given as an alternative to itself", name_of(a.cls)));
}

// Healthy, with ranks that failed.
void healthy_with_failures(const Diagnosis& d, std::vector<std::string>& out) {
  if (d.verdict.cls == FailureClass::Healthy && !d.evidence.failed_ranks.empty())
    out.push_back(fmt::format("healthy, but {} rank(s) failed", d.evidence.failed_ranks.size()));
}

}  // namespace

std::vector<std::string> contradictions(const Diagnosis& d) {
  std::vector<std::string> out;
  startup_class_after_completion(d, out);
  dead_rank_called_late(d, out);
  alternative_is_the_verdict(d, out);
  healthy_with_failures(d, out);
  return out;
}

}  // namespace rdzvscope
