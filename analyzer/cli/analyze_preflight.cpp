#include "analyze_preflight.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rdzvscope::cli {

namespace {

// One node's failed checks, as the text report words them: "name: measured (fix: ...)".
std::string failed_cell(const preflight::NodeResult& n) {
  std::vector<std::string> out;
  for (const auto& f : n.failed)
    out.push_back(f.fix.empty() ? fmt::format("{}: {}", f.name, f.measured)
                                : fmt::format("{}: {} (fix: {})", f.name, f.measured, f.fix));
  return out.empty() ? std::string("-") : fmt::format("{}", fmt::join(out, "; "));
}

}  // namespace

std::vector<HtmlSection> preflight_html(const preflight::Results& r) {
  if (r.empty()) return {};
  HtmlSection s;
  s.id = "preflight";
  s.title = "Preflight (before the job started)";
  s.summary = preflight::results_summary(r) + " (rdzvscope preflight --out, in the trace directory)";
  s.columns = {"node", "role", "time", "result", "warnings", "failed checks"};
  for (const preflight::NodeResult& n : r.nodes) {
    s.rows.push_back({{preflight::node_label(n), preflight::role_text(n.role), n.time,
                       n.can_rendezvous ? "can rendezvous" : "CANNOT rendezvous",
                       n.warnings.empty() ? std::string("-") : fmt::format("{}", fmt::join(n.warnings, ", ")),
                       failed_cell(n)},
                      !n.can_rendezvous});
  }
  for (const std::string& p : r.problems) s.notes.push_back("unreadable: " + p);
  return {s};
}

std::vector<preflight::Results> load_run_preflights(std::vector<RunResult>& runs) {
  std::vector<preflight::Results> out;
  for (RunResult& run : runs) {
    out.push_back(preflight::load_results({run.path}));
    run.preflight = preflight::results_summary(out.back());
    run.preflight_failed = !preflight::every_node_could_rendezvous(out.back());
  }
  return out;
}

void add_run_preflights(nlohmann::ordered_json& runs_json, const std::vector<preflight::Results>& r) {
  auto& list = runs_json["runs"];
  for (std::size_t i = 0; i < r.size() && i < list.size(); ++i) {
    if (!r[i].empty()) list[i]["preflight"] = preflight::results_json(r[i]);
  }
}

}  // namespace rdzvscope::cli
