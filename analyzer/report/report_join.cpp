// The live view of a rendezvous (`watch`): who has joined and what the others are doing, as
// a screen of text or one JSON object (schema rdzvscope.watch/1, docs/commands.md).
#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

namespace {

using ojson = nlohmann::ordered_json;

ojson time_json(const std::optional<std::int64_t>& ns) {
  return ns ? ojson(iso8601_utc(*ns)) : ojson(nullptr);
}

ojson store_json(const std::optional<StoreStatus>& st) {
  if (!st) return nullptr;
  return ojson{{"host", st->host},
               {"port", st->port},
               {"since", iso8601_utc(st->since_ns)},
               {"accepted", st->accepted}};
}

ojson deadline_json(const JoinStatus& s) {
  if (!s.timeout_ms) return nullptr;
  ojson out{{"timeout_s", static_cast<double>(*s.timeout_ms) / 1000},
            {"first_gives_up", nullptr},
            {"seconds_left", nullptr}};
  if (s.deadline_ns && !s.complete()) {
    out["first_gives_up"] = iso8601_utc(*s.deadline_ns);
    out["seconds_left"] = seconds(s.now_ns, *s.deadline_ns);
  }
  return out;
}

// The call a rank is blocked in right now: its kind, since when, for how long, in words.
ojson blocked_json(const RankJoin& j, std::int64_t now_ns) {
  if (!j.blocked_in) return nullptr;
  return ojson{{"call", blocked_call_id(*j.blocked_in)},
               {"since", iso8601_utc(j.blocked_in->wall_ns)},
               {"seconds", std::max(0.0, seconds(j.blocked_in->wall_ns, now_ns))},
               {"words", blocked_words(j, now_ns)}};
}

std::vector<int> ranks_of(const std::vector<const ProcessFacts*>& fs) {
  std::vector<int> out;
  for (const ProcessFacts* f : fs) out.push_back(f->proc->rank);
  return out;
}

// Who the ranks blocked on the store wait for (JoinStatus::wait_for).
ojson wait_for_json(const JoinStatus& s) {
  if (!s.wait_for) return nullptr;
  const WaitFor& w = *s.wait_for;
  const bool host = w.on == WaitFor::On::StoreHost;
  return ojson{{"on", host ? "store_host" : "missing_ranks"},
               {"waiting_ranks", ranks_of(w.waiting)},
               {"awaited_ranks", w.awaited_ranks()},
               {"host", host ? ojson(w.host->proc->host) : ojson(nullptr)},
               {"since", iso8601_utc(w.first_wait_ns)},
               {"seconds", std::max(0.0, seconds(w.first_wait_ns, w.until_ns))},
               {"store_host_last_seen", host ? ojson(iso8601_utc(w.host_last_seen_ns)) : ojson(nullptr)},
               // the store served its own node while they waited: the network between them (wait_for.h)
               {"network", host && w.network},
               {"headline", wait_headline(s)}};
}

ojson rank_json(const RankJoin& j, std::int64_t now_ns) {
  return ojson{{"rank", j.rank},
               {"host", j.facts ? ojson(j.host()) : ojson(nullptr)},
               {"pid", j.facts ? ojson(j.facts->proc->pid) : ojson(nullptr)},
               {"state", state_id(j.state)},
               {"joined", j.joined},
               {"since", time_json(j.since_ns)},
               {"tries", j.tries},
               {"reason", j.reason},
               {"blocked", blocked_json(j, now_ns)}};
}

// Above a screen's worth of ranks, one line per state and host: "failed  node3  8-15".
std::vector<std::string> folded_rank_lines(const JoinStatus& s) {
  std::map<std::tuple<int, std::string>, std::vector<int>> groups;
  for (const RankJoin& j : s.ranks) groups[{static_cast<int>(j.state), j.host()}].push_back(j.rank);
  std::vector<std::string> out;
  out.push_back(fmt::format("{:<30} {:<16} {}", "STATE", "HOST", "RANKS"));
  for (const auto& [key, ranks] : groups)
    out.push_back(fmt::format("{:<30} {:<16} {} ({})",
                              state_words(static_cast<JoinState>(std::get<0>(key))),
                              std::get<1>(key).empty() ? "-" : std::get<1>(key), rank_list(ranks),
                              ranks.size()));
  return out;
}

std::string since_text(const RankJoin& j, std::int64_t now_ns) {
  if (!j.since_ns) return "-";
  return fmt::format("{} ({:.0f} s)", time_of_day(*j.since_ns),
                     std::max(0.0, seconds(*j.since_ns, now_ns)));
}

std::vector<std::string> rank_lines(const JoinStatus& s) {
  std::vector<std::string> out;
  out.push_back(
      fmt::format("{:>6} {:<16} {:<30} {:<20} {}", "RANK", "HOST", "STATE", "SINCE", "DETAIL"));
  for (const RankJoin& j : s.ranks) {
    std::string detail = j.blocked_in ? blocked_words(j, s.now_ns) : j.reason;
    if (j.tries > 1) detail += fmt::format(" ({} tries)", j.tries);
    out.push_back(fmt::format("{:>6} {:<16} {:<30} {:<20} {}", j.rank,
                              j.host().empty() ? "-" : j.host(), state_words(j.state),
                              since_text(j, s.now_ns), detail));
  }
  return out;
}

std::string store_line(const JoinStatus& s) {
  if (!s.store) return "store    not listening yet (no traced process listens on a store port)";
  return fmt::format("store    {}:{} listening since {}, {} client connection(s) accepted",
                     s.store->host, s.store->port, time_of_day(s.store->since_ns),
                     s.store->accepted);
}

std::string deadline_line(const JoinStatus& s) {
  if (!s.timeout_ms) return "timeout  not known yet (seen once a joined rank waits with it)";
  const double timeout_s = static_cast<double>(*s.timeout_ms) / 1000;
  if (s.complete() || !s.deadline_ns) return fmt::format("timeout  {}", fmt_seconds(timeout_s));
  const double left = seconds(s.now_ns, *s.deadline_ns);
  if (left < 0)
    return fmt::format("timeout  {}: the first joined rank's wait expired at {} ({:.0f} s ago)",
                       fmt_seconds(timeout_s), time_of_day(*s.deadline_ns), -left);
  return fmt::format("timeout  {}: the first joined rank gives up in {:.0f} s (at {})",
                     fmt_seconds(timeout_s), left, time_of_day(*s.deadline_ns));
}

std::string verdict_line(const Diagnosis& d) {
  std::string out = fmt::format("verdict  {} so far", name_of(d.verdict.cls));
  if (d.verdict.initiating_rank)
    out += fmt::format(", initiating rank {}", *d.verdict.initiating_rank);
  return out + " (rdzvscope analyze gives the evidence)";
}

std::string inputs_line(const Diagnosis& d) {
  const InputStats& in = d.inputs;
  std::string out = fmt::format("inputs   {} trace file(s)", in[Stat::TraceFiles]);
  if (in[Stat::DamagedFiles]) out += fmt::format(", {} damaged or still being written", in[Stat::DamagedFiles]);
  if (in[Stat::LostEvents]) out += fmt::format(", {} event(s) lost", in[Stat::LostEvents]);
  if (!d.inputs.problems.empty()) out += ": " + d.inputs.problems.front();
  return out;
}

}  // namespace

nlohmann::ordered_json join_status_json(const JoinStatus& s, const Diagnosis& d) {
  ojson states = ojson::object();
  for (int i = 0; i < kJoinStates; ++i)
    states[state_id(static_cast<JoinState>(i))] = s.count(static_cast<JoinState>(i));
  ojson ranks = ojson::array();
  for (const RankJoin& j : s.ranks) ranks.push_back(rank_json(j, s.now_ns));
  return ojson{{"schema", "rdzvscope.watch/1"},
               {"time", iso8601_utc(s.now_ns)},
               {"headline", join_headline(s)},
               {"waiting_on", wait_for_json(s)},
               {"expected_ranks", json_opt(s.expected)},
               {"joined_ranks", s.joined},
               {"complete", s.complete()},
               {"first_launch", time_json(s.first_launch_ns)},
               {"all_joined", time_json(s.all_joined_ns)},
               {"store", store_json(s.store)},
               {"deadline", deadline_json(s)},
               {"states", states},
               {"ranks", ranks},
               {"verdict_so_far", ojson{{"class", name_of(d.verdict.cls)},
                                        {"initiating_rank", json_opt(d.verdict.initiating_rank)},
                                        {"summary", d.verdict.summary}}},
               {"inputs", inputs_json(d.inputs, /*traces_only=*/true)}};
}

std::vector<std::string> join_status_lines(const JoinStatus& s, const Diagnosis& d,
                                           std::size_t max_lines) {
  std::vector<std::string> out;
  // The one they all wait on first, when the ranks blocked on the store wait for someone.
  if (s.wait_for) out.push_back(wait_headline(s));
  for (auto line : {join_headline(s), store_line(s), deadline_line(s), verdict_line(d), inputs_line(d)})
    out.push_back(std::move(line));
  out.push_back("");
  std::vector<std::string> table = rank_lines(s);
  if (out.size() + table.size() > max_lines) table = folded_rank_lines(s);
  out.insert(out.end(), table.begin(), table.end());
  return out;
}

}  // namespace rdzvscope
