#include "run_comparison.h"

#include <algorithm>
#include <set>

#include "rules/class_registry.h"

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

namespace {

// No run, or one: nothing to compare.
void word_no_comparison(const std::vector<RunResult>& runs, RunComparison& c) {
  c.pattern = pattern::kSingleRun;
  if (runs.empty()) {
    c.summary = "no run could be analyzed";
    c.next_step = "give two or more run directories, each with the trace files (and logs) of one run";
    return;
  }
  const RunResult& last = runs.back();
  c.cls = last.diagnosis.verdict.cls;
  c.summary = "one run (" + last.id + "): " + std::string(name_of(last.diagnosis.verdict.cls)) + "; nothing to compare it with";
  c.next_step = last.diagnosis.verdict.next_step;
}

// The distinct verdict classes of the runs, in the order they first appear.
std::vector<FailureClass> classes_of(const std::vector<RunResult>& runs) {
  std::vector<FailureClass> classes;
  for (const auto& r : runs)
    if (std::find(classes.begin(), classes.end(), r.diagnosis.verdict.cls) == classes.end())
      classes.push_back(r.diagnosis.verdict.cls);
  return classes;
}

void word_all_healthy(const std::vector<RunResult>& runs, RunComparison& c) {
  c.pattern = pattern::kAllHealthy;
  c.cls = FailureClass::Healthy;
  c.summary = "all " + std::to_string(runs.size()) + " runs (" + ids_of(runs) + ") were healthy";
  c.next_step = "nothing to fix in the rendezvous; if the job still misbehaved, look past start-up";
}

void word_mixed_classes(const std::vector<RunResult>& runs, RunComparison& c) {
  const RunResult& last = runs.back();
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
}

// Where the failure started, among the runs whose verdict names it, with their ids.
struct KnownOrigins {
  std::vector<Origin> origins;
  std::vector<std::string> ids;
  bool same_host = false, same_rank = false;
  // "r1: rank 2 on node1, r2: ...", and how many runs named none.
  std::string each() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < origins.size(); ++i) out.push_back(ids[i] + ": " + where(origins[i]));
    return join(out);
  }
};

KnownOrigins known_origins(const std::vector<RunResult>& runs, const RunComparison& c) {
  KnownOrigins k;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Origin o = origin_of(runs[i], c.outcomes[i]);
    if (o.rank || o.host) {
      k.origins.push_back(o);
      k.ids.push_back(runs[i].id);
    }
  }
  if (k.origins.empty()) return k;
  auto all_same = [&](auto get) {
    for (const Origin& o : k.origins)
      if (!get(o) || *get(o) != *get(k.origins[0])) return false;
    return true;
  };
  k.same_host = all_same([](const Origin& o) { return o.host; });
  k.same_rank = all_same([](const Origin& o) { return o.rank; });
  return k;
}

void word_same_rank(const std::string& head, const std::string& partial, const KnownOrigins& k,
                    const Diagnosis& last, RunComparison& c) {
  c.pattern = pattern::kSameRank;
  bool hosts_known = false, multi_host = false;
  for (const Origin& o : k.origins) {
    hosts_known |= o.host.has_value();
    multi_host |= o.multi_host;
  }
  const int rank = *k.origins[0].rank;
  // A rank with no trace (absent) has no host, though the job ran on several.
  c.summary = head + ", always started by rank " + std::to_string(rank) + (hosts_known ? " (" + k.each() + ")" : "") +
              partial +
              (hosts_known  ? ": it follows the rank, not a node"
               : multi_host ? " (no run names its host)"
                            : " (the job ran on one host: only ranks compare)");
  // A rank with no host is absent from every run: what it does is unknown, its verdict
  // says where to look for it.
  c.next_step = (hosts_known || !multi_host ? "look at what rank " + std::to_string(rank) +
                                                  " does that the others do not (its data shard, checkpoint or code path); "
                                            : std::string()) +
                last.verdict.next_step;
}

// Every run has the same class: did it start on the same host, the same rank, or anywhere?
void word_same_class(const std::vector<RunResult>& runs, FailureClass cls, RunComparison& c) {
  const Diagnosis& last = runs.back().diagnosis;
  c.cls = cls;
  const KnownOrigins k = known_origins(runs, c);
  const std::string head = std::string(name_of(cls)) + " in all " + std::to_string(runs.size()) + " runs (" +
                           ids_of(runs) + ")";
  if (k.origins.size() < 2) {
    c.pattern = pattern::kSameClass;
    c.summary = head + "; no initiating rank to compare between runs";
    c.next_step = last.verdict.next_step;
    return;
  }
  const std::string partial = k.origins.size() < runs.size()
                                  ? " (" + std::to_string(runs.size() - k.origins.size()) + " run(s) name no rank)"
                                  : "";
  if (k.same_host) {
    const Origin& o = k.origins[0];
    c.pattern = pattern::kSameHost;
    c.summary = head + ", always started on host " + *o.host +
                (k.same_rank ? " (rank " + std::to_string(*o.rank) + ")" : " (" + k.each() + ")") + partial +
                ": it stays on that node, which points at its configuration";
    c.next_step = same_host_step(cls, *o.host, last);
  } else if (k.same_rank) {
    word_same_rank(head, partial, k, last, c);
  } else {
    c.pattern = pattern::kMoving;
    c.summary = head + ", started somewhere else each time (" + k.each() + ")" + partial + ": random, not one node";
    c.next_step = moving_step(cls, last);
  }
}

}  // namespace

RunComparison compare_runs(const std::vector<RunResult>& runs) {
  RunComparison c;
  for (const auto& r : runs) c.outcomes.push_back(outcome_of(r.diagnosis));
  if (runs.size() <= 1) {
    word_no_comparison(runs, c);
    return c;
  }
  const std::vector<FailureClass> classes = classes_of(runs);
  if (classes.size() == 1 && classes[0] == FailureClass::Healthy) word_all_healthy(runs, c);
  else if (classes.size() > 1) word_mixed_classes(runs, c);
  else word_same_class(runs, classes[0], c);
  return c;
}

}  // namespace rdzvscope
