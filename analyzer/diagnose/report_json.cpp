#include <cmath>

#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

namespace {

using ojson = nlohmann::ordered_json;

ojson time_or_null(const std::optional<std::int64_t>& ns) {
  return ns ? ojson(iso8601_utc(*ns)) : ojson(nullptr);
}

}  // namespace

ojson diagnosis_json(const Diagnosis& d) {
  ojson j;
  j["schema"] = "rdzvscope.diagnosis/1";
  const Verdict& v = d.verdict;
  j["verdict"] = {{"class", name_of(v.cls)},
                  {"cause", json_opt(v.cause)},
                  {"initiating_rank", json_opt(v.initiating_rank)},
                  {"initiating_host", json_opt(v.initiating_host)},
                  {"confidence", v.confidence},
                  {"summary", v.summary},
                  {"next_step", v.next_step}};
  ojson findings = ojson::array();
  for (const Finding& f : d.findings)
    findings.push_back({{"class", name_of(f.cls)},
                        {"rank", json_opt(f.rank)},
                        {"host", f.host.empty() ? ojson(nullptr) : ojson(f.host)},
                        {"pid", json_opt(f.pid)},
                        {"time", time_or_null(f.time_ns)},
                        {"evidence", f.evidence}});
  j["findings"] = findings;
  j["discriminators"] = d.discriminators;
  ojson ranks = ojson::array();
  for (const RankRow& r : d.ranks) {
    ojson err = r.first_error.empty() ? ojson(nullptr)
                                      : ojson{{"what", r.first_error}, {"time", time_or_null(r.first_error_ns)}};
    ranks.push_back({{"rank", json_opt(r.rank)},
                     {"host", r.host},
                     {"pid", r.pid},
                     {"role", r.role},
                     {"launched", time_or_null(r.launched_ns)},
                     {"resolved", time_or_null(r.resolved_ns)},
                     {"first_store_connect", time_or_null(r.first_store_connect_ns)},
                     {"connected", time_or_null(r.connected_ns)},
                     {"first_error", err},
                     {"exit", r.vanished ? ojson("vanished") : ojson(json_opt(r.exit_status))},
                     {"late", r.late}});
    // Added in issue 17: a process in a PID namespace of its own (a container) says which.
    if (!r.container.empty()) ranks.back()["container"] = r.container;
    if (r.pid_namespace) ranks.back()["pid_namespace"] = r.pid_namespace;
    // Added in issue 17: only on the rows of ranks with no trace (Evidence::absent_ranks),
    // which have no process: no host, no pid.
    if (r.absent) {
      ranks.back()["host"] = nullptr;
      ranks.back()["pid"] = nullptr;
      ranks.back()["absent"] = true;
    }
  }
  j["ranks"] = ranks;
  const InputStats& in = d.inputs;
  j["inputs"] = {{"trace_files", in.trace_files}, {"damaged_files", in.damaged_files},
                 {"events", in.events},           {"lost_events", in.lost_events},
                 {"log_files", in.log_files},     {"log_lines_matched", in.log_lines_matched},
                 {"problems", in.problems}};
  if (in.injected_events) {
    // Added with run --inject: present only when some record was injected (a rehearsal).
    j["inputs"]["injected"] = {{"events", in.injected_events}, {"ranks", in.injected_ranks}};
  }
  if (!d.clocks.empty()) {
    // Added in issue 7: present only when the traces came from several hosts.
    ojson clocks = ojson::array();
    for (const ClockEstimate& c : d.clocks)
      clocks.push_back({{"host", c.host},
                        {"offset_ms", std::round(c.offset_ns / 1e4) / 100},
                        {"uncertainty_ms", std::round(c.uncertainty_ns / 1e4) / 100},
                        {"pairs", c.pairs},
                        {"reference", c.reference},
                        {"applied", c.applied}});
    j["clocks"] = clocks;
  }
  return j;
}

}  // namespace rdzvscope
