// The metrics view: Prometheus text exposition format 0.0.4, as node_exporter's textfile
// collector reads it. Every series carries the job's labels, so that one collector directory
// can hold the files of several jobs.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

namespace {

using Label = std::pair<std::string, std::string>;

// Label values escape backslash, double quote and newline; nothing else.
std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char ch : v) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string labels_text(const std::vector<Label>& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i)
    out += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first,
                       escape_label(labels[i].second));
  return out + "}";
}

// The job's identity, from the first traced rank that has it.
std::vector<Label> job_labels(const JoinStatus& s) {
  std::string run_id, slurm_job_id;
  for (const RankJoin& j : s.ranks) {
    if (!j.facts) continue;
    const rdzv_identity& id = j.facts->proc->header.ident;
    if (run_id.empty()) run_id = bounded_string(id.run_id);
    if (slurm_job_id.empty()) slurm_job_id = bounded_string(id.slurm_job_id);
  }
  std::vector<Label> out;
  if (!run_id.empty()) out.emplace_back("run_id", run_id);
  if (!slurm_job_id.empty()) out.emplace_back("slurm_job_id", slurm_job_id);
  return out;
}

class Exposition {
 public:
  explicit Exposition(std::vector<Label> job) : job_(std::move(job)) {}

  void family(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    name_ = name;
  }
  void sample(double value, std::vector<Label> labels = {}) {
    labels.insert(labels.begin(), job_.begin(), job_.end());
    out_ += fmt::format("{}{} {}\n", name_, labels_text(labels), number(value));
  }
  std::string text() && { return std::move(out_); }

 private:
  static std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", v);
  }
  std::vector<Label> job_;
  std::string out_;
  const char* name_ = "";
};

void join_metrics(Exposition& m, const JoinStatus& s) {
  if (s.expected) {
    m.family("rdzvscope_ranks_expected", "gauge", "Ranks the job expects (WORLD_SIZE).");
    m.sample(*s.expected);
  }
  m.family("rdzvscope_ranks_joined", "gauge", "Ranks that reached the rendezvous store.");
  m.sample(s.joined);
  m.family("rdzvscope_ranks", "gauge", "Ranks by join state.");
  for (int i = 0; i < kJoinStates; ++i) {
    const auto st = static_cast<JoinState>(i);
    m.sample(s.count(st), {{"state", state_id(st)}});
  }
  m.family("rdzvscope_rendezvous_complete", "gauge", "1 once every expected rank joined, else 0.");
  m.sample(s.complete() ? 1 : 0);
  if (s.first_launch_ns) {
    m.family("rdzvscope_rendezvous_duration_seconds", "gauge",
             "From the first launch to the last rank's join; while incomplete, to now.");
    m.sample(seconds(*s.first_launch_ns, s.all_joined_ns.value_or(s.now_ns)));
  }
  if (s.deadline_ns && !s.complete()) {
    m.family("rdzvscope_rendezvous_deadline_seconds", "gauge",
             "Seconds left before the first joined rank's timeout expires (negative once passed).");
    m.sample(seconds(s.now_ns, *s.deadline_ns));
  }
}

// Per rank, the call it is blocked in right now and for how long; who the blocked ranks wait
// for (JoinStatus::wait_for), one series a rank waited for.
void wait_metrics(Exposition& m, const JoinStatus& s) {
  const bool any_blocked =
      std::any_of(s.ranks.begin(), s.ranks.end(), [](const RankJoin& j) { return j.blocked_in != nullptr; });
  if (any_blocked)
    m.family("rdzvscope_rank_blocked_seconds", "gauge",
             "Seconds a rank has been blocked in the call it is in now (calls in flight), by call kind.");
  for (const RankJoin& j : s.ranks)
    if (j.blocked_in)
      m.sample(std::max(0.0, seconds(j.blocked_in->wall_ns, s.now_ns)),
               {{"rank", std::to_string(j.rank)}, {"host", j.host()}, {"call", blocked_call_id(*j.blocked_in)}});
  if (!s.wait_for) return;
  const WaitFor& w = *s.wait_for;
  const bool store_host = w.on == WaitFor::On::StoreHost;
  m.family("rdzvscope_awaited_rank_info", "gauge",
           "A rank the ranks blocked on the store wait for (value 1): one that has not reached the store, "
           "or the store host that does not answer.");
  for (int r : w.awaited_ranks()) {
    // s.ranks is by rank: the awaited one's row, for its host ("" when it never started).
    const auto row = std::lower_bound(s.ranks.begin(), s.ranks.end(), r,
                                      [](const RankJoin& j, int rank) { return j.rank < rank; });
    const std::string host = row != s.ranks.end() && row->rank == r ? row->host() : std::string();
    m.sample(1, {{"rank", std::to_string(r)},
                 {"host", host},
                 {"awaited_as", store_host ? "store_host" : "missing_rank"}});
  }
  m.family("rdzvscope_waiting_ranks", "gauge", "Ranks blocked on the store waiting for the awaited rank(s).");
  m.sample(static_cast<double>(w.waiting.size()));
  m.family("rdzvscope_waiting_seconds", "gauge", "Seconds since the first of the waiting ranks began its wait.");
  m.sample(std::max(0.0, seconds(w.first_wait_ns, w.until_ns)));
}

void verdict_metrics(Exposition& m, const JoinStatus& s, const Diagnosis& d) {
  const std::string cls(name_of(d.verdict.cls));
  // The ranks seen failing (an error or a non-zero exit), not the analysis' failed ranks: a
  // process of a live job has no exit record yet, and the analysis counts it as vanished.
  m.family("rdzvscope_init_failures_total", "counter",
           "Ranks that failed at start-up, by the diagnosed class.");
  m.sample(s.count(JoinState::Failed), {{"class", cls}});
  m.family("rdzvscope_verdict_info", "gauge",
           "The diagnosis: class, initiating rank and host (value 1).");
  m.sample(1, {{"class", cls},
               {"initiating_rank",
                d.verdict.initiating_rank ? std::to_string(*d.verdict.initiating_rank) : ""},
               {"host", d.verdict.initiating_host.value_or("")},
               {"confidence", d.verdict.confidence}});
}

}  // namespace

std::string prometheus_text(const JoinStatus& s, const Diagnosis& d, std::int64_t written_ns) {
  Exposition m(job_labels(s));
  join_metrics(m, s);
  wait_metrics(m, s);
  verdict_metrics(m, s, d);
  m.family("rdzvscope_last_update_timestamp_seconds", "gauge",
           "When these metrics were computed (Unix time).");
  m.sample(static_cast<double>(written_ns) / 1e9);
  return std::move(m).text();
}

}  // namespace rdzvscope
