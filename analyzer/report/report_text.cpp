#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "model/fr_parting.h"
#include "model/context.h"
#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

namespace {

// Wraps words at width, each line after the first indented by `indent` spaces.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  return out + line;
}

std::string at(const Diagnosis& d, const std::optional<std::int64_t>& ns) {
  if (!ns || !d.t0_ns) return "-";
  return fmt::format("{:+.2f} s", seconds(*d.t0_ns, *ns));
}

// VERDICT, NEXT and, for a rehearsal, INJECTED.
std::string verdict_section(const Diagnosis& d) {
  const Verdict& v = d.verdict;
  std::string s;
  std::string head = std::string(name_of(v.cls)) + (v.cause ? " (" + *v.cause + ")" : "") + ": " + v.summary;
  s += "VERDICT  " + wrap(head, 80, 9) + "\n";
  s += "         initiating rank: " + (v.initiating_rank ? std::to_string(*v.initiating_rank) : std::string("-")) +
       (v.initiating_host ? " (" + *v.initiating_host + ")" : "") + "    confidence: " + v.confidence + "\n";
  for (const Alternative& a : d.alternatives) s += "OR       " + wrap(alternative_words(a), 80, 9) + "\n";
  s += "NEXT     " + wrap(v.next_step, 80, 9) + "\n";
  if (d.inputs[Stat::InjectedEvents]) {
    std::string ranks;
    for (std::int32_t r : d.inputs.injected_ranks)
      ranks += (ranks.empty() ? "" : ", ") + (r < 0 ? std::string("a process without RANK") : std::to_string(r));
    s += "INJECTED " + wrap(fmt::format("this failure was injected (rdzvscope run --inject): {} call(s) "
                                        "made up on purpose in rank(s) {}; a rehearsal, not a real fault",
                                        d.inputs[Stat::InjectedEvents], ranks),
                            80, 9) + "\n";
  }
  return s;
}

// STORE, and a CLOCK line per host whose clock is off by more than is worth saying.
std::string store_and_clocks_section(const Diagnosis& d) {
  std::string s;
  if (!d.store_endpoint.empty()) s += "\nSTORE    " + d.store_endpoint + "\n";
  for (const ClockEstimate& c : d.clocks)
    if (!c.reference && (c.offset_ns > kClockOffsetWorthSaying || c.offset_ns < -kClockOffsetWorthSaying))
      s += (d.store_endpoint.empty() ? "\nCLOCK    " : "CLOCK    ") + wrap(describe_clock(c, d.clocks[0].host), 80, 9) + "\n";
  return s;
}

constexpr const char* kRow = " {:>5}  {:<14} {:>9} {:>9} {:>14} {:>10}  {:<34} {}\n";

std::string rank_line(const Diagnosis& d, const RankRow& r) {
  std::string exit = r.absent ? "absent" : r.dead ? "DEAD: " + r.ended : !r.ended.empty() ? r.ended
                   : r.vanished ? "vanished" : r.exit_status ? std::to_string(*r.exit_status) : "?";
  if (r.stalled) exit = "STALLED at the first collective; " + exit;
  std::string err = r.absent ? "no trace (expected by WORLD_SIZE)"
                    : r.first_error.empty() ? "-" : at(d, r.first_error_ns) + " " + r.first_error;
  if (err.size() > 60) err = err.substr(0, 57) + "...";
  std::string connect = at(d, r.first_store_connect_ns) + (r.late ? " LATE" : "");
  if (r.role == "store server") connect += " (srv)";
  return fmt::format(kRow, r.rank ? std::to_string(*r.rank) : "-", r.absent ? "-" : r.host.substr(0, 14),
                     at(d, r.launched_ns), at(d, r.resolved_ns), connect, at(d, r.connected_ns), err, exit);
}

// Ranks that tell the same story are folded into one line after the first of them, so that
// 4,096 ranks stay readable. A row is like another when it has the same role and outcome
// (first error, exit; neither late) and each of its times (launch, lookup, store connect,
// connected, first error, end) is within a small part of the job of the other's: 5 % of the
// job's span (its first launch to its last time in the table), at least 0.25 s. A rank that
// connected seconds after the others keeps its own row.
std::string story_of(const RankRow& r) {
  std::string err = r.first_error.substr(0, r.first_error.find(" to "));
  return r.role + "|" + err + "|" + (r.vanished ? "v" : r.exit_status ? std::to_string(*r.exit_status) : "?") +
         (r.late ? "|late" : "") + (r.dead ? "|dead" : "") + (r.stalled ? "|stalled" : "");
}

std::optional<std::int64_t> end_of(const RankRow& r) {
  return r.vanished ? r.last_seen_ns : r.exit_ns;
}

std::int64_t like_tolerance_ns(const Diagnosis& d) {
  std::int64_t last = d.t0_ns.value_or(0);
  for (const RankRow& r : d.ranks)
    for (const auto& t : {r.launched_ns, r.resolved_ns, r.first_store_connect_ns, r.connected_ns,
                          r.first_error_ns, end_of(r)})
      if (t) last = std::max(last, *t);
  const std::int64_t span = d.t0_ns ? diff_ns(*d.t0_ns, last) : 0;
  return std::max<std::int64_t>(250'000'000, span / 20);
}

bool close_in_time(const std::optional<std::int64_t>& a, const std::optional<std::int64_t>& b,
                   std::int64_t tol) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  const std::int64_t dt = diff_ns(*a, *b);
  return dt <= tol && dt >= -tol;
}

bool alike(const RankRow& a, const RankRow& b, std::int64_t tol) {
  return story_of(a) == story_of(b) && close_in_time(a.launched_ns, b.launched_ns, tol) &&
         close_in_time(a.resolved_ns, b.resolved_ns, tol) &&
         close_in_time(a.first_store_connect_ns, b.first_store_connect_ns, tol) &&
         close_in_time(a.connected_ns, b.connected_ns, tol) &&
         close_in_time(a.first_error_ns, b.first_error_ns, tol) &&
         close_in_time(end_of(a), end_of(b), tol);
}

std::string rank_table_section(const Diagnosis& d) {
  if (d.ranks.empty()) return "";
  std::string s = "\n" + fmt::format(kRow, "rank", "host", "launched", "resolved", "store connect", "connected",
                                     "first error", "exit");
  const std::int64_t tol = like_tolerance_ns(d);
  // The rows shown that others may fold into, by story, and what folded into each.
  std::map<std::string, std::vector<const RankRow*>> shown;
  std::vector<std::pair<const RankRow*, std::vector<int>>> folded;
  for (const RankRow& r : d.ranks) {
    const bool may_fold = !r.late && !r.dead && !r.stalled && r.rank != d.verdict.initiating_rank && r.rank;
    const RankRow* into = nullptr;
    if (may_fold)
      for (const RankRow* rep : shown[story_of(r)])
        if (alike(*rep, r, tol)) {
          into = rep;
          break;
        }
    if (into) {
      for (auto& [rep, ranks] : folded)
        if (rep == into) ranks.push_back(*r.rank);
      continue;
    }
    if (r.rank) {
      shown[story_of(r)].push_back(&r);
      folded.push_back({&r, {}});
    }
    s += rank_line(d, r);
  }
  for (const auto& [rep, ranks] : folded)
    if (!ranks.empty())
      s += "  (" + std::string(ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks) +
           " like rank " + std::to_string(*rep->rank) + ")\n";
  return s;
}

// COLLECTIVE: the first collective after the rendezvous, one line per rank that did not wait
// in it (never entered, entered late, dead) and per rank that waited, or one line for all of
// those when there are many of them.
constexpr const char* kCollectiveRow = " {:>5}  {:>10} {:>10} {:>10} {:>10}  {}\n";
constexpr std::size_t kMaxWaiterLines = 8;

std::string collective_words(const Diagnosis& d, const CollectiveSpan& s) {
  using Part = CollectiveSpan::Part;
  switch (s.part) {
    case Part::Waited: return "waited in it for the others";
    case Part::NeverEntered: return "NEVER ENTERED: sent nothing on its pairs";
    case Part::EnteredLate: return "ENTERED LATE: its first message came after the first failure";
    case Part::Dead:
      return "DEAD: " + s.ended + (s.entered_ns ? " after entering" : " before entering") +
             (s.gone_ns ? ", gone by " + at(d, s.gone_ns) : std::string());
  }
  return "";
}

std::string collective_line(const Diagnosis& d, const RankRow& r) {
  const CollectiveSpan& s = *r.collective;
  return fmt::format(kCollectiveRow, r.rank ? std::to_string(*r.rank) : "-", at(d, s.begin_ns), at(d, s.entered_ns),
                     at(d, s.end_ns), at(d, s.deadline_ns), collective_words(d, s));
}

// "+6.84 s" or "+6.84 s to +6.90 s": the spread of one time over the ranks.
std::string spread(const Diagnosis& d, std::vector<std::int64_t> ts) {
  if (ts.empty()) return "-";
  const auto [lo, hi] = std::minmax_element(ts.begin(), ts.end());
  const std::string a = at(d, *lo), b = at(d, *hi);
  return a == b ? a : a + " to " + b;
}

std::string waiters_line(const Diagnosis& d, const std::vector<const RankRow*>& waiters) {
  std::vector<int> ranks;
  std::vector<std::int64_t> entered, ended, deadline;
  for (const RankRow* r : waiters) {
    if (r->rank) ranks.push_back(*r->rank);
    if (r->collective->entered_ns) entered.push_back(*r->collective->entered_ns);
    ended.push_back(r->collective->end_ns);
    if (r->collective->deadline_ns) deadline.push_back(*r->collective->deadline_ns);
  }
  return "  rank(s) " + wrap(rank_list(ranks) + " waited in it for the others: entered " + spread(d, entered) +
                             ", ended " + spread(d, ended) + ", deadline " + spread(d, deadline), 86, 4) + "\n";
}

std::string collective_section(const Diagnosis& d) {
  if (!d.collective) return "";
  const CollectiveOutline& o = *d.collective;
  // Its op and sequence number where a timeout line of the logs names them (NCCL's watchdog).
  const std::string work = o.op.empty() ? std::string()
                                        : o.op + (o.sequence ? ", sequence " + std::to_string(*o.sequence) : std::string()) + "; ";
  std::string head = "the first collective after the rendezvous (" + work + "completed at " + at(d, o.completed_ns) +
                     "); first failure " + (o.first_failed_rank ? "on rank " + std::to_string(*o.first_failed_rank) + " " : "") +
                     "at " + at(d, o.first_failure_ns) + "; timeout on the pairs " +
                     (o.timeout_ms ? fmt_seconds(*o.timeout_ms / 1000.0) : std::string("not recorded"));
  std::string s = "\nCOLLECTIVE " + wrap(head, 80, 11) + "\n" +
                  fmt::format(kCollectiveRow, "rank", "left store", "entered", "ended", "deadline", "");
  std::vector<const RankRow*> waiters;
  for (const RankRow& r : d.ranks)
    if (r.collective && r.collective->part == CollectiveSpan::Part::Waited) waiters.push_back(&r);
  const bool one_line = waiters.size() > kMaxWaiterLines;
  for (const RankRow& r : d.ranks)
    if (r.collective && !(one_line && r.collective->part == CollectiveSpan::Part::Waited)) s += collective_line(d, r);
  if (one_line) s += waiters_line(d, waiters);
  return s;
}

// FLIGHT RECORDER: where the dumps say the ranks parted, and each dumped rank's last collective.
std::string flight_recorder_section(const Diagnosis& d) {
  if (!d.flight_recorder) return "";
  const FlightRecorderParting& p = *d.flight_recorder;
  return "\nFLIGHT RECORDER (" + fr_dumps_words(p) + ")\n  " + wrap(fr_parting_words(p), 88, 2) + "\n  " +
         wrap(fr_last_sequence_words(p), 88, 2) + "\n";
}

std::string evidence_section(const Diagnosis& d) {
  if (d.findings.empty()) return "";
  std::string s = "\nEVIDENCE\n";
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) s += "  - " + wrap(e, 90, 4) + "\n";
  return s;
}

std::string discriminators_section(const Diagnosis& d) {
  if (d.discriminators.empty()) return "";
  std::string s = "\nDISCRIMINATORS\n";
  for (const Discriminator& disc : d.discriminators)
    s += fmt::format("  {:<36} ", disc.name) + wrap(discriminator_words(disc.value), 60, 39) + "\n";
  return s;
}

// READ: the counters of input_stats.h, the problems, and where the other forms are.
std::string inputs_section(const Diagnosis& d) {
  const InputStats& in = d.inputs;
  std::string s = fmt::format("\nREAD     {} trace file(s) ({} damaged, {} events, {} lost), {} log(s) ({} lines matched)\n",
                              in[Stat::TraceFiles], in[Stat::DamagedFiles], in[Stat::Events], in[Stat::LostEvents],
                              in[Stat::LogFiles], in[Stat::LogLinesMatched]);
  for (const auto& p : in.problems) s += "         problem: " + p + "\n";
  s += "         more: --format json|markdown, --timeline t.json (Perfetto), --html report.html\n";
  return s;
}

}  // namespace

std::string diagnosis_text(const Diagnosis& d) {
  return verdict_section(d) + store_and_clocks_section(d) + rank_table_section(d) + collective_section(d) +
         flight_recorder_section(d) + evidence_section(d) +
         discriminators_section(d) + inputs_section(d);
}

}  // namespace rdzvscope
