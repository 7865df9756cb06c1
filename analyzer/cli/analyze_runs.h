// rdzvscope analyze --runs RUN_DIR...: each directory one run of the same job, each diagnosed
// on its own, then compared (runs/run_comparison.h). Logs are the *.log files found in
// each run's directory; --log, --timeline and --html are refused with --runs.
#pragma once

#include <string>
#include <vector>

namespace rdzvscope::cli {

// Exit: 0 when at least one run was analyzed, 2 when none could be (or bad usage), 3 with
// fail_on_problem when any run's verdict is not healthy.
int run_analyze_runs(const std::vector<std::string>& paths, const std::string& format, bool fail_on_problem);

}  // namespace rdzvscope::cli
