// analyze beside preflight (preflight/results.h): the preflight reports found in the trace
// directories, in the views that the diagnose library draws without knowing preflight: the
// HTML page's section, and each run of --runs (its one-line summary and its JSON).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.h"
#include "runs/run_comparison.h"
#include "preflight/results.h"

namespace rdzvscope::cli {

// The page's "Preflight" section: one row per node (failed ones marked), its failed checks with
// their fix, the unreadable files; nothing when there is no report.
std::vector<HtmlSection> preflight_html(const preflight::Results& r);

// Reads the preflight reports of each run's directory into runs[i] (summary, failed) and
// returns them, in the order of the runs.
std::vector<preflight::Results> load_run_preflights(std::vector<RunResult>& runs);

// runs_json's "runs"[i]."preflight" (results_json), for the runs that had reports.
void add_run_preflights(nlohmann::ordered_json& runs_json, const std::vector<preflight::Results>& r);

}  // namespace rdzvscope::cli
