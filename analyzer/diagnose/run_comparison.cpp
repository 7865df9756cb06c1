#include "run_comparison.h"

#include <algorithm>
#include <set>

#include "class_registry.h"

namespace rdzvscope {

namespace {

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string ids_of(const std::vector<RunResult>& runs) {
  std::vector<std::string> ids;
  for (const auto& r : runs) ids.push_back(r.id);
  return join(ids);
}

// Where one run's failure started, as far as its verdict names it.
struct Origin {
  std::optional<int> rank;
  std::optional<std::string> host;  // only when the run's ranks ran on several hosts
  bool multi_host = false;
};

Origin origin_of(const RunResult& r, const RunOutcome& o) {
  Origin out{r.diagnosis.verdict.initiating_rank, std::nullopt, o.multi_host};
  // On one host, "the same host" says nothing: every failure is on it.
  if (o.multi_host) out.host = r.diagnosis.verdict.initiating_host;
  return out;
}

std::string where(const Origin& o) {
  std::string s = o.rank ? "rank " + std::to_string(*o.rank) : std::string("no rank");
  if (o.host) s += " on " + *o.host;
  return s;
}

}  // namespace

RunOutcome outcome_of(const Diagnosis& d) {
  RunOutcome o;
  o.failed_ranks = d.evidence.failed_ranks;
  std::set<std::string> hosts, all_hosts;
  for (const RankRow& row : d.ranks) {
    if (row.absent) continue;  // no process, no host
    all_hosts.insert(row.host);
    if (row.rank && std::find(o.failed_ranks.begin(), o.failed_ranks.end(), *row.rank) != o.failed_ranks.end())
      hosts.insert(row.host);
  }
  o.failed_hosts.assign(hosts.begin(), hosts.end());
  // Agents count too: a torchrun rendezvous that never completed has no rank anywhere.
  all_hosts.insert(d.hosts.begin(), d.hosts.end());
  o.multi_host = all_hosts.size() > 1;
  o.seconds_to_failure = d.evidence.seconds_to_first_failure;
  return o;
}

RunComparison compare_runs(const std::vector<RunResult>& runs) {
  RunComparison c;
  for (const auto& r : runs) c.outcomes.push_back(outcome_of(r.diagnosis));
  if (runs.empty()) {
    c.pattern = pattern::kSingleRun;
    c.summary = "no run could be analyzed";
    c.next_step = "give two or more run directories, each with the trace files (and logs) of one run";
    return c;
  }
  const RunResult& last = runs.back();
  if (runs.size() == 1) {
    c.pattern = pattern::kSingleRun;
    c.cls = last.diagnosis.verdict.cls;
    c.summary = "one run (" + last.id + "): " + std::string(name_of(last.diagnosis.verdict.cls)) + "; nothing to compare it with";
    c.next_step = last.diagnosis.verdict.next_step;
    return c;
  }

  std::vector<FailureClass> classes;
  for (const auto& r : runs)
    if (std::find(classes.begin(), classes.end(), r.diagnosis.verdict.cls) == classes.end())
      classes.push_back(r.diagnosis.verdict.cls);
  const std::string n = std::to_string(runs.size());

  if (classes.size() == 1 && classes[0] == FailureClass::Healthy) {
    c.pattern = pattern::kAllHealthy;
    c.cls = FailureClass::Healthy;
    c.summary = "all " + n + " runs (" + ids_of(runs) + ") were healthy";
    c.next_step = "nothing to fix in the rendezvous; if the job still misbehaved, look past start-up";
    return c;
  }
  if (classes.size() > 1) {
    c.pattern = pattern::kMixedClasses;
    std::vector<std::string> each, healthy;
    bool pipe = false;
    for (const auto& r : runs) {
      each.push_back(r.id + ": " + std::string(name_of(r.diagnosis.verdict.cls)));
      if (r.diagnosis.verdict.cls == FailureClass::Healthy) healthy.push_back(r.id);
      const auto& cause = r.diagnosis.verdict.cause;
      pipe |= r.diagnosis.verdict.cls == FailureClass::BrokenPipe && !(cause && *cause == "peer_died");
    }
    c.summary = "the runs failed differently (" + join(each) + ")";
    if (!healthy.empty())
      c.summary += "; it did not reproduce in " + join(healthy);
    c.next_step = "one cause behind all runs is unlikely: work through each run's verdict (--format json: "
                  "runs[].diagnosis), starting with the latest (" + last.id + ": " + last.diagnosis.verdict.next_step + ")";
    if (pipe && !healthy.empty())
      c.next_step = "a broken pipe that does not reproduce on a rerun is the signature of the TCPStore bug of "
                    "PyTorch <= 2.7: upgrade PyTorch past 2.8; otherwise " + c.next_step;
    return c;
  }

  const FailureClass cls = classes[0];
  c.cls = cls;
  // Compare where the failure started, among the runs whose verdict names it.
  std::vector<Origin> known;
  std::vector<std::string> known_ids;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Origin o = origin_of(runs[i], c.outcomes[i]);
    if (o.rank || o.host) {
      known.push_back(o);
      known_ids.push_back(runs[i].id);
    }
  }
  const std::string head = std::string(name_of(cls)) + " in all " + n + " runs (" + ids_of(runs) + ")";
  if (known.size() < 2) {
    c.pattern = pattern::kSameClass;
    c.summary = head + "; no initiating rank to compare between runs";
    c.next_step = last.diagnosis.verdict.next_step;
    return c;
  }
  auto all_same = [&](auto get) {
    for (const Origin& o : known)
      if (!get(o) || *get(o) != *get(known[0])) return false;
    return true;
  };
  const bool same_host = all_same([](const Origin& o) { return o.host; });
  const bool same_rank = all_same([](const Origin& o) { return o.rank; });
  std::vector<std::string> each;
  for (std::size_t i = 0; i < known.size(); ++i) each.push_back(known_ids[i] + ": " + where(known[i]));
  const std::string partial =
      known.size() < runs.size() ? " (" + std::to_string(runs.size() - known.size()) + " run(s) name no rank)" : "";

  if (same_host) {
    c.pattern = pattern::kSameHost;
    c.summary = head + ", always started on host " + *known[0].host +
                (same_rank ? " (rank " + std::to_string(*known[0].rank) + ")" : " (" + join(each) + ")") + partial +
                ": it stays on that node, which points at its configuration";
    c.next_step = same_host_step(cls, *known[0].host, last.diagnosis);
  } else if (same_rank) {
    c.pattern = pattern::kSameRank;
    bool hosts_known = false, multi_host = false;
    for (const Origin& o : known) {
      hosts_known |= o.host.has_value();
      multi_host |= o.multi_host;
    }
    // A rank with no trace (absent) has no host, though the job ran on several.
    c.summary = head + ", always started by rank " + std::to_string(*known[0].rank) +
                (hosts_known ? " (" + join(each) + ")" : "") + partial +
                (hosts_known  ? ": it follows the rank, not a node"
                 : multi_host ? " (no run names its host)"
                              : " (the job ran on one host: only ranks compare)");
    // A rank with no host is absent from every run: what it does is unknown, its verdict
    // says where to look for it.
    c.next_step = (hosts_known || !multi_host ? "look at what rank " + std::to_string(*known[0].rank) +
                                                    " does that the others do not (its data shard, checkpoint or code path); "
                                              : std::string()) +
                  last.diagnosis.verdict.next_step;
  } else {
    c.pattern = pattern::kMoving;
    c.summary = head + ", started somewhere else each time (" + join(each) + ")" + partial +
                ": random, not one node";
    c.next_step = moving_step(cls, last.diagnosis);
  }
  return c;
}

}  // namespace rdzvscope
