#include "run_verdict.h"

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "diagnostics.h"
#include "model/context.h"
#include "model/log_facts.h"
#include "model/process_model.h"
#include "report/report.h"
#include "rules/rules.h"
#include "verdict_check.h"

namespace rdzvscope::cli {
namespace {

void write_stderr(const std::string& text) {
  std::fflush(stdout);  // the command's output first, where a terminal interleaves them
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::string heading(const ChildEnd& end, const std::string& dir) {
  return fmt::format("\nrdzvscope: the command {}; the verdict from the traces in {}:\n", describe_end(end), dir);
}

// What to run next for the full picture: the logs and the views analyze adds.
std::string footer(const std::string& dir) {
  return fmt::format("rdzvscope: with the job's logs, and as a page: rdzvscope analyze {} --log LOGS --html report.html\n",
                     dir);
}

}  // namespace

bool print_run_verdict(const std::string& dir, const ChildEnd& end) {
  Stopwatch took;
  TraceInputs traces = load_traces({dir});
  read_kernel_log_of_this_boot(traces);
  if (traces.processes.empty()) {
    write_stderr(fmt::format("\nrdzvscope: the command {}; none of its processes used the network or the resolver, "
                             "so {} holds no trace and there is no verdict\n",
                             describe_end(end), dir));
    return false;
  }
  const LogFacts no_logs;
  const Context model(traces, no_logs);
  const Diagnosis d = diagnose(model);
  write_stderr(heading(end, dir) + diagnosis_text(d) + footer(dir));
  log_for("run")->debug("analyzed {} processes in {}", traces.processes.size(), took.lap());
  return contradicts_itself(d, "run");
}

}  // namespace rdzvscope::cli
