// The forms of a comparison of runs (analyze --runs): JSON (schema rdzvscope.runs/1, each
// run's full rdzvscope.diagnosis/1 object inside), a text table with the verdict across runs,
// and a Markdown section for a ticket ("did it reproduce?").
#pragma once

#include <string>
#include <vector>

#include "reader/error.h"
#include "run_comparison.h"

namespace rdzvscope {

nlohmann::ordered_json runs_json(const std::vector<RunResult>& runs, const RunComparison& c,
                                 const std::vector<Error>& skipped);
std::string runs_text(const std::vector<RunResult>& runs, const RunComparison& c, const std::vector<Error>& skipped);
std::string runs_markdown(const std::vector<RunResult>& runs, const RunComparison& c,
                          const std::vector<Error>& skipped);

}  // namespace rdzvscope
