#include <cmath>

#include "model/collective_phase.h"
#include "model/fr_parting.h"
#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

namespace {

using ojson = nlohmann::ordered_json;

ojson time_or_null(const std::optional<std::int64_t>& ns) {
  return ns ? ojson(iso8601_utc(*ns)) : ojson(nullptr);
}

// Each discriminator's JSON, as rdzvscope.diagnosis/1 has always written it.
struct DiscriminatorJson {
  ojson operator()(const NotKnown&) const { return nullptr; }
  ojson operator()(std::int64_t n) const { return n; }
  ojson operator()(const std::string& s) const { return s; }
  ojson operator()(const Seconds& s) const { return s.s; }
  ojson operator()(const RankSet& r) const { return r.ranks; }
  ojson operator()(const NameList& n) const { return n.names; }
  ojson operator()(const TimeoutFact& t) const {
    return {{"ms", t.ms}, {"source", t.internal_default ? "internal default" : "configured"}, {"note", t.note}};
  }
  ojson operator()(const AfterRendezvous& a) const {
    return {{"at", a.at}, {"first_failed_rank", a.first_failed_rank}, {"first_failure", a.first_failure}};
  }
  ojson operator()(const std::vector<AbsentNode>& nodes) const {
    ojson out = ojson::array();
    for (const AbsentNode& n : nodes) out.push_back({{"numbered_by", n.index_var}, {"node", n.index}, {"ranks", n.ranks}});
    return out;
  }
  ojson operator()(const std::vector<MismatchedSetting>& settings) const {
    ojson out = ojson::array();
    for (const MismatchedSetting& m : settings) {
      ojson values = ojson::object();
      for (const auto& [value, who] : m.values) values[value] = who;
      out.push_back({{"setting", m.setting}, {"expected", m.expected}, {"values", values}, {"differing", m.differing}});
    }
    return out;
  }
};

}  // namespace

ojson discriminators_json(const Discriminators& ds) {
  ojson j = ojson::object();
  for (const Discriminator& d : ds) j[d.name] = std::visit(DiscriminatorJson{}, d.value);
  return j;
}

ojson inputs_json(const InputStats& in, bool traces_only) {
  ojson j = ojson::object();
  for (const StatRow& row : stat_table())
    if (row.in_inputs && (!traces_only || row.source == StatSource::Traces)) j[row.name] = in[row.stat];
  j["problems"] = in.problems;
  return j;
}

namespace {

ojson verdict_json(const Verdict& v) {
  return {{"class", name_of(v.cls)},
          {"cause", json_opt(v.cause)},
          {"initiating_rank", json_opt(v.initiating_rank)},
          {"initiating_host", json_opt(v.initiating_host)},
          {"confidence", v.confidence},
          {"summary", v.summary},
          {"next_step", v.next_step}};
}

ojson findings_json(const std::vector<Finding>& findings) {
  ojson out = ojson::array();
  for (const Finding& f : findings)
    out.push_back({{"class", name_of(f.cls)},
                   {"rank", json_opt(f.rank)},
                   {"host", f.host.empty() ? ojson(nullptr) : ojson(f.host)},
                   {"pid", json_opt(f.pid)},
                   {"time", time_or_null(f.time_ns)},
                   {"evidence", f.evidence}});
  return out;
}

ojson alternatives_json(const std::vector<Alternative>& alternatives) {
  ojson out = ojson::array();
  for (const Alternative& a : alternatives)
    out.push_back({{"class", name_of(a.cls)}, {"cause", json_opt(a.cause)}, {"why", a.why}, {"settle", a.settle}});
  return out;
}

// A rank's part in the first collective after the rendezvous (RankRow::collective): each field
// a field of the span, as the text, HTML and timeline views draw it.
ojson collective_span_json(const CollectiveSpan& c) {
  const bool dead = c.part == CollectiveSpan::Part::Dead;
  return {{"part", part_name(c.part)},
          {"left_store", iso8601_utc(c.begin_ns)},
          {"pairs_done", time_or_null(c.pairs_done_ns)},
          {"entered", time_or_null(c.entered_ns)},
          {"ended", iso8601_utc(c.end_ns)},
          {"deadline", time_or_null(c.deadline_ns)},
          {"gone", time_or_null(c.gone_ns)},
          {"how", dead ? ojson(c.ended) : ojson(nullptr)},
          {"op", c.op.empty() ? ojson(nullptr) : ojson(c.op)},
          {"sequence", json_opt(c.sequence)}};
}

// The phase as a whole (Diagnosis::collective).
ojson collective_outline_json(const CollectiveOutline& o) {
  return {{"rendezvous_completed", iso8601_utc(o.completed_ns)},
          {"first_failure", iso8601_utc(o.first_failure_ns)},
          {"first_failed_rank", json_opt(o.first_failed_rank)},
          {"timeout_ms", json_opt(o.timeout_ms)},
          {"op", o.op.empty() ? ojson(nullptr) : ojson(o.op)},
          {"sequence", json_opt(o.sequence)}};
}

// Where the Flight Recorder dumps say the ranks parted (Diagnosis::flight_recorder).
ojson flight_recorder_json(const FlightRecorderParting& p) {
  ojson last = ojson::object(), state = ojson::object(), late = ojson::object();
  for (const auto& [r, s] : p.last_sequence) last[std::to_string(r)] = s;
  for (const auto& [r, s] : p.state) state[std::to_string(r)] = s;
  for (const auto& [r, ns] : p.late_ns) late[std::to_string(r)] = std::round(ns / 1e7) / 100;
  return {{"kind", fr_kind_name(p.kind)},
          {"process_group", p.pg_name},
          {"process_group_desc", p.pg_desc},
          {"sequence", p.sequence},
          {"op", p.op.empty() ? ojson(nullptr) : ojson(p.op)},
          {"backend", p.backend.empty() ? ojson(nullptr) : ojson(p.backend)},
          {"behind_ranks", p.behind},
          {"waited_ranks", p.waited},
          {"ranks_without_dump", p.no_dump},
          {"last_sequence", last},
          {"state", state},
          {"late_s", late},
          {"timeout_ms", json_opt(p.timeout_ms)},
          {"first_entered", time_or_null(p.first_entered_ns)},
          {"version", p.version},
          {"files", p.files}};
}

ojson rank_row_json(const RankRow& r) {
  ojson err = r.first_error.empty() ? ojson(nullptr)
                                    : ojson{{"what", r.first_error}, {"time", time_or_null(r.first_error_ns)}};
  ojson row = {{"rank", json_opt(r.rank)},
               {"host", r.host},
               {"pid", r.pid},
               {"role", r.role},
               {"launched", time_or_null(r.launched_ns)},
               {"resolved", time_or_null(r.resolved_ns)},
               {"first_store_connect", time_or_null(r.first_store_connect_ns)},
               {"connected", time_or_null(r.connected_ns)},
               {"first_error", err},
               {"exit", r.vanished ? ojson("vanished") : ojson(json_opt(r.exit_status))},
               {"late", r.late}};
  // Added in issue 17: a process in a PID namespace of its own (a container) says which.
  if (!r.container.empty()) row["container"] = r.container;
  // Added in issue 32: only on the rows of ranks that died on their own (Evidence::dead_ranks),
  // and on the rows of ranks a traced launcher stopped ("ended").
  if (r.dead) row["dead"] = true;
  // Added in issue 28: only on the rows of ranks that never entered the first collective
  // after the rendezvous (straggler_timeout with its phase).
  if (r.stalled) row["stalled"] = true;
  if (!r.ended.empty()) row["ended"] = r.ended;
  if (r.pid_namespace) row["pid_namespace"] = r.pid_namespace;
  // Added in issue 28: only on the rows of ranks with a part in the first collective after the
  // rendezvous (Diagnosis::collective set, the rank made its pairs).
  if (r.collective) row["collective"] = collective_span_json(*r.collective);
  // Added in issue 17: only on the rows of ranks with no trace (Evidence::absent_ranks),
  // which have no process: no host, no pid.
  if (r.absent) {
    row["host"] = nullptr;
    row["pid"] = nullptr;
    row["absent"] = true;
  }
  return row;
}

ojson clocks_json(const std::vector<ClockEstimate>& clocks) {
  ojson out = ojson::array();
  for (const ClockEstimate& c : clocks)
    out.push_back({{"host", c.host},
                   {"offset_ms", std::round(c.offset_ns / 1e4) / 100},
                   {"uncertainty_ms", std::round(c.uncertainty_ns / 1e4) / 100},
                   {"pairs", c.pairs},
                   {"reference", c.reference},
                   {"applied", c.applied}});
  return out;
}

}  // namespace

ojson diagnosis_json(const Diagnosis& d) {
  ojson j;
  j["schema"] = "rdzvscope.diagnosis/1";
  j["verdict"] = verdict_json(d.verdict);
  j["findings"] = findings_json(d.findings);
  // Added in issue 29, only when the verdict has runners-up (Diagnosis::alternatives).
  if (!d.alternatives.empty()) j["alternatives"] = alternatives_json(d.alternatives);
  j["discriminators"] = discriminators_json(d.discriminators);
  ojson ranks = ojson::array();
  for (const RankRow& r : d.ranks) ranks.push_back(rank_row_json(r));
  j["ranks"] = ranks;
  // Added in issue 28: present only when the first collective after the rendezvous was found
  // (the rendezvous completed, then a rank failed; the traces record the pairs' I/O).
  if (d.collective) j["collective"] = collective_outline_json(*d.collective);
  // Added in issue 28: only where Flight Recorder dumps were read and say where the ranks parted.
  if (d.flight_recorder) j["flight_recorder"] = flight_recorder_json(*d.flight_recorder);
  const InputStats& in = d.inputs;
  j["inputs"] = inputs_json(in);
  if (in[Stat::InjectedEvents]) {
    // Added with run --inject: present only when some record was injected (a rehearsal).
    j["inputs"]["injected"] = {{"events", in[Stat::InjectedEvents]}, {"ranks", in.injected_ranks}};
  }
  // Added in issue 7: present only when the traces came from several hosts.
  if (!d.clocks.empty()) j["clocks"] = clocks_json(d.clocks);
  return j;
}

}  // namespace rdzvscope
