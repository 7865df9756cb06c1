#include "analyze_runs.h"

#include "analyze_preflight.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "diagnostics.h"
#include "model/log_facts.h"
#include "runs/report_runs.h"
#include "rules/rules.h"
#include "runs/run_inputs.h"

namespace rdzvscope::cli {

namespace {


void say(const std::string& line) { log_for("analyze")->error("{}", line); }

}  // namespace

int run_analyze_runs(const std::vector<std::string>& paths, const std::string& format, bool fail_on_problem) {
  if (paths.empty()) {
    say("--runs needs the run directories: rdzvscope analyze --runs RUN1 RUN2 ... (or one directory of runs)");
    return kExitUsage;
  }
  RunDirs dirs = find_runs(paths);
  std::vector<Error> skipped = dirs.errors;
  for (const Error& e : dirs.errors) say(e.message());

  std::vector<RunResult> results;
  std::vector<std::string> ids, where;
  for (const RunDir& run : dirs.runs) {
    TraceInputs traces = run.traces.empty() ? TraceInputs{} : load_traces(run.traces);
    LogFacts logs = load_logs(run.logs);
    for (const auto& e : traces.errors) say(e.message());
    for (const auto& e : logs.errors) say(e.message());
    if (traces.processes.empty() && logs.stats[Stat::LogFiles] == logs.errors.size()) {
      Error e{run.path, "no readable trace or log in this run directory: run left out", std::nullopt};
      say(e.message());
      skipped.push_back(e);
      continue;
    }
    ids.push_back(run_id(traces, run.path));
    where.push_back(run.path);
    results.push_back(RunResult{"", run.path, diagnose(traces, logs)});
  }
  if (results.empty()) {
    say("no run could be analyzed");
    return kExitUsage;
  }
  disambiguate_ids(ids, where);
  for (std::size_t i = 0; i < results.size(); ++i) results[i].id = ids[i];

  const std::vector<preflight::Results> preflights = load_run_preflights(results);  // preflight per run
  const RunComparison c = compare_runs(results);
  std::string out;
  if (format == "json") {
    nlohmann::ordered_json j = runs_json(results, c, skipped);
    add_run_preflights(j, preflights);
    out = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  else if (format == "markdown") out = runs_markdown(results, c, skipped);
  else out = runs_text(results, c, skipped);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) {
    say(std::string("writing the report: ") + std::strerror(errno));
    return kExitUsage;
  }
  bool problem = false;
  for (const auto& r : results) problem |= r.diagnosis.verdict.cls != FailureClass::Healthy;
  return fail_on_problem && problem ? kExitProblem : kExitOk;
}

}  // namespace rdzvscope::cli
