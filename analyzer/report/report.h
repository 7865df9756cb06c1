// The forms of a diagnosis: JSON (schema rdzvscope.diagnosis/1, stable for scripts), the text
// report (verdict and next step first, then the time line that proves it), and the views for
// people: a Chrome/Perfetto timeline, a self-contained HTML page and a support-ticket summary.
#pragma once

#include <string>
#include <vector>

#include "model/diagnosis.h"
#include "model/log_facts.h"
#include "model/context.h"
#include "model/join_status.h"
#include "model/process_model.h"

namespace rdzvscope {

nlohmann::ordered_json diagnosis_json(const Diagnosis& d);
// The "discriminators" object of diagnosis_json: each value as the schema gives it.
nlohmann::ordered_json discriminators_json(const Discriminators& ds);

// An optional value in a report's JSON: the value, or null.
template <class T>
nlohmann::ordered_json json_opt(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}
// The counters the reports list among their inputs (the rows of input_stats.h with
// in_inputs), as the JSON object's members in the table's order, then "problems". With
// traces_only, the trace rows alone (watch reads no logs).
nlohmann::ordered_json inputs_json(const InputStats& in, bool traces_only = false);

std::string diagnosis_text(const Diagnosis& d);

// Chrome trace-event JSON (report_timeline.cpp): one process track per host, one thread track
// per rank, spans for resolves, connect attempts and time connected to the store, instants for
// errors and timeout deadlines, the verdict in "metadata". It reads the model's events (the
// Diagnosis keeps only the first of each kind); times are µs after the earliest launch.
// Returned as text, each event serialized as it is made (no JSON tree of the whole timeline).
std::string timeline_json(const Diagnosis& d, const Context& model);

// A section that another part of rdzvscope adds to the HTML page (analyze: the preflight
// reports found beside the traces). Plain text, escaped by diagnosis_html like every input;
// a row marked `bad` is drawn as a failure.
struct HtmlSection {
  std::string id, title, summary;
  std::vector<std::string> columns;
  struct Row {
    std::vector<std::string> cells;
    bool bad = false;
  };
  std::vector<Row> rows;
  std::vector<std::string> notes;  // one line each, after the table
};

// One self-contained HTML page (report_html.cpp): inline CSS and SVG, no script, no URL; the
// `more` sections before the inputs.
std::string diagnosis_html(const Diagnosis& d, const std::vector<HtmlSection>& more = {});

// A support-ticket summary in Markdown (report_markdown.cpp): the exact error line, the
// PyTorch version, the launcher command, the first failing rank, verdict and next step, and
// where Flight Recorder dumps were read, where they say the ranks parted.
std::string diagnosis_markdown(const Diagnosis& d, const Context& model);

// Prometheus text exposition (report_prom.cpp), for node_exporter's textfile collector: the
// expected and joined ranks, ranks by join state, the rendezvous' duration and deadline, the
// verdict, and when it was written (written_ns, the wall clock: s.now_ns is the moment the
// states describe, the end of the traces for a finished job); with the job's labels (run_id,
// slurm_job_id).
std::string prometheus_text(const JoinStatus& s, const Diagnosis& d, std::int64_t written_ns);

// The live view (report_join.cpp, `watch`): JSON (schema rdzvscope.watch/1), and the lines of
// a screen: headline, store, timeout, the verdict so far, the inputs, then one line per rank,
// or per state and host when one per rank would make more than max_lines in all.
nlohmann::ordered_json join_status_json(const JoinStatus& s, const Diagnosis& d);
std::vector<std::string> join_status_lines(const JoinStatus& s, const Diagnosis& d, std::size_t max_lines);

// Inline Markdown text for a table cell or a list: a '|' would end the cell, a newline the
// row, and Markdown's punctuation would turn log text into emphasis or links.
std::string md_inline(const std::string& s);

}  // namespace rdzvscope
