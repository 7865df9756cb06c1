// rdzvscope analyze PATH... [--log FILE...] [--format text|json|markdown] [--timeline FILE]
//                   [--html FILE] [--fail-on-problem]:
// what broke, where it started, the evidence and the next command (docs/commands.md).
// rdzvscope analyze --runs RUN_DIR... [--format ...] [--fail-on-problem]: several runs of one
// job compared (analyze_runs.h).
// Exit: 0 when the analysis ran (whatever it found), 2 for bad usage or when no input could be
// read at all, 3 with --fail-on-problem when the verdict is not healthy. Damaged inputs are
// reported one line each on stderr and counted in the report; the analysis goes on.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyze_runs.h"
#include "commands.h"
#include "diagnostics.h"
#include "output_file.h"
#include "verdict_check.h"
#include "model/log_facts.h"
#include "report/report.h"
#include "rules/rules.h"
#include "runs/sequential_runs.h"
#include "analyze_preflight.h"  // preflight --out reports beside the traces (HTML)
#include "preflight/results.h"  // preflight --out reports beside the traces
#include "logs/log_source.h"

#include <fmt/ranges.h>

namespace rdzvscope::cli {
namespace {


std::shared_ptr<spdlog::logger> analyze_log() { return log_for("analyze"); }

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::vector<std::string> logs;
  std::vector<std::string> flight_recorder;  // Flight Recorder dumps: files or directories
  std::string format = "text";
  std::string timeline;  // Chrome/Perfetto trace-event JSON, beside the report on stdout
  std::string html;      // self-contained HTML page
  std::string prom;      // Prometheus textfile
  bool fail_on_problem = false;
  bool runs = false;     // every path is one run; compared (analyze_runs.h)
};

// Writes a side output (--timeline, --html, --prom) whole; false, said on stderr, when it cannot.
bool write_file(const std::string& path, const std::string& text) {
  if (auto err = write_file_atomically(path, text)) {
    analyze_log()->error("{}", err->message());
    return false;
  }
  return true;
}

// The moment a finished job's states describe: the last thing its traces show.
std::int64_t end_of_traces(const TraceInputs& traces) {
  std::int64_t end = 0;
  for (const Process& p : traces.processes) end = std::max({end, p.last_event_ns(), p.exit_ns.value_or(0)});
  return end;
}

bool exists(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return true;
  analyze_log()->error("{}: {}", path, std::strerror(errno));
  return false;
}

// One line per unreadable or damaged input, up to a screenful: a directory of thousands of
// bad files must not bury the report (they are all counted in it).
void report_input_errors(const std::vector<Error>& trace_errors, const std::vector<Error>& log_errors) {
  constexpr std::size_t kShown = 20;
  std::size_t n = 0;
  for (const auto* errors : {&trace_errors, &log_errors})
    for (const auto& e : *errors)
      if (n++ < kShown) analyze_log()->error("{}", e.message());
  if (n > kShown) analyze_log()->error("... and {} more unreadable or damaged input(s) (counted in the report)", n - kShown);
}

// Retries one after the other in one directory are read as one job: say so, once.
void warn_sequential_runs(const TraceInputs& traces) {
  const std::vector<RunSpan> runs = sequential_runs(traces);
  if (runs.empty()) return;
  std::vector<std::string> ids;
  for (const RunSpan& r : runs) ids.push_back(fmt::format("{} ({} processes)", r.id, r.processes));
  analyze_log()->warn("the traces hold {} runs one after the other ({}), analyzed here as one job; "
              "put each run's traces in its own directory and compare them with --runs",
              runs.size(), fmt::join(ids, ", "));
}

// --runs: each path is one run, diagnosed alone, then compared (analyze_runs.h).
int run_analyze_runs_mode(const AnalyzeOptions& opt) {
  const char* refused = !opt.logs.empty()       ? "--log"
                        : !opt.flight_recorder.empty() ? "--flight-recorder"
                        : !opt.timeline.empty() ? "--timeline"
                        : !opt.html.empty()     ? "--html"
                        : !opt.prom.empty()     ? "--prom"
                                                : nullptr;
  if (refused) {
    analyze_log()->error("{} cannot be used with --runs (each run's *.log files are found in its directory; "
                 "for one run's timeline or HTML page, analyze that run's directory alone)",
                 refused);
    return kExitUsage;
  }
  bool all_there = true;
  for (const auto& p : opt.paths) all_there &= exists(p);
  if (!all_there) return kExitUsage;
  return run_analyze_runs(opt.paths, opt.format, opt.fail_on_problem);
}

// The traces and logs the options name, read; nullopt (said why) when they are unusable.
struct AnalyzeInputs {
  TraceInputs traces;
  LogFacts logs;
  FrInputs flight_recorder;
};

// --flight-recorder PATH..., and the dumps named as by default in the trace directories. A dump
// that cannot be read is an error: the verdict would rest on the ranks it leaves out.
bool read_flight_recorder_inputs(const AnalyzeOptions& opt, AnalyzeInputs& in) {
  for (const auto& p : opt.flight_recorder)
    if (!exists(p)) return false;
  in.flight_recorder = load_flight_recorder(opt.flight_recorder, opt.paths);
  for (const Error& e : in.flight_recorder.errors) analyze_log()->error("{}", e.message());
  if (!opt.flight_recorder.empty() && in.flight_recorder.empty() && in.flight_recorder.errors.empty()) {
    analyze_log()->error("no Flight Recorder dump in {} (files named <prefix><rank> that hold a pickle)",
                         fmt::join(opt.flight_recorder, ", "));
    return false;
  }
  analyze_log()->debug("read {} Flight Recorder dump(s)", in.flight_recorder.dumps.size());
  return in.flight_recorder.errors.empty();
}

std::optional<AnalyzeInputs> read_analyze_inputs(const AnalyzeOptions& opt) {
  if (opt.paths.empty() && opt.logs.empty() && opt.flight_recorder.empty()) {
    analyze_log()->error("give trace directories/files, logs with --log, or dumps with --flight-recorder");
    return std::nullopt;
  }
  bool all_there = true;
  for (const auto& p : opt.paths) all_there &= exists(p);
  // --log FILE, DIR or - (standard input): the files they stand for (logs/log_source.h).
  const rdzv::logs::LogInputs log_inputs = rdzv::logs::expand_log_args(opt.logs);
  for (const auto& e : log_inputs.errors) analyze_log()->error("{}", e);
  for (const auto& n : log_inputs.notes) analyze_log()->info("{}", n);
  if (!all_there || !log_inputs.errors.empty()) return std::nullopt;

  Stopwatch step;
  AnalyzeInputs in{load_traces(opt.paths), {}, {}};
  if (!read_flight_recorder_inputs(opt, in)) return std::nullopt;
  read_kernel_log_of_this_boot(in.traces);
  const TraceInputs& traces = in.traces;
  analyze_log()->debug("read {} trace file(s): {} processes, {} events, {} lost, {} damaged file(s) in {}",
                       traces.stats[Stat::TraceFiles], traces.processes.size(), traces.stats[Stat::Events],
                       traces.stats[Stat::LostEvents], traces.stats[Stat::DamagedFiles], step.lap());
  in.logs = load_logs(log_inputs.files);
  const LogFacts& logs = in.logs;
  analyze_log()->debug("read {} log(s): {} lines, {} matched in {}", logs.stats[Stat::LogFiles],
                       logs.stats[Stat::LogLines], logs.stats[Stat::LogLinesMatched], step.lap());
  report_input_errors(traces.errors, logs.errors);
  const std::uint64_t unreadable_logs = logs.errors.size() - logs.stats[Stat::PartialLogFiles];
  if (traces.processes.empty() && logs.stats[Stat::LogFiles] == unreadable_logs && in.flight_recorder.empty()) {
    analyze_log()->error("no readable trace or log among the inputs");
    return std::nullopt;
  }
  return in;
}

// --timeline, --html, --prom: the views written to files. False when one could not be.
bool write_analyze_views(const AnalyzeOptions& opt, const Diagnosis& d, const Context& model,
                      const preflight::Results& preflight) {
  if (!opt.timeline.empty() && !write_file(opt.timeline, timeline_json(d, model) + "\n")) return false;
  if (!opt.html.empty() && !write_file(opt.html, diagnosis_html(d, preflight_html(preflight)))) return false;
  if (!opt.prom.empty() &&
      !write_file(opt.prom, prometheus_text(join_status(model, end_of_traces(model.traces)), d, wall_clock_ns())))
    return false;
  return true;
}

// The report on stdout in the chosen --format, the preflight section after it.
std::string analyze_report(const std::string& format, const Diagnosis& d, const Context& model,
                             const preflight::Results& preflight) {
  if (format == "json") {
    nlohmann::ordered_json j = diagnosis_json(d);
    if (!preflight.empty()) j["preflight"] = preflight::results_json(preflight);  // preflight section
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format == "markdown") return diagnosis_markdown(d, model) + preflight::results_markdown(preflight);
  return diagnosis_text(d) + preflight::results_text(preflight);
}

int run_analyze(const AnalyzeOptions& opt) {
  if (opt.runs) return run_analyze_runs_mode(opt);
  const std::optional<AnalyzeInputs> in = read_analyze_inputs(opt);
  if (!in) return kExitUsage;

  Stopwatch step;
  warn_sequential_runs(in->traces);
  const Context model(in->traces, in->logs, std::nullopt, &in->flight_recorder);  // the facts, derived once for the verdict and every view
  analyze_log()->debug("derived the facts of {} processes in {}", model.facts.size(), step.lap());
  Diagnosis d = diagnose(model);
  analyze_log()->debug("diagnosed {} in {}", name_of(d.verdict.cls), step.lap());
  const preflight::Results preflight = preflight::load_results(opt.paths);  // preflight section
  if (!write_analyze_views(opt, d, model, preflight)) return kExitUsage;
  const std::string out = analyze_report(opt.format, d, model, preflight);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) {
    analyze_log()->error("writing the report: {}", std::strerror(errno));
    return kExitUsage;
  }
  if (contradicts_itself(d, "analyze")) return kExitContradiction;
  return opt.fail_on_problem && d.verdict.cls != FailureClass::Healthy ? kExitProblem : kExitOk;
}

}  // namespace

Command add_analyze_command(CLI::App& app) {
  auto opt = std::make_shared<AnalyzeOptions>();
  CLI::App* sub = app.add_subcommand(
      "analyze",
      "Diagnose a failed or hung rendezvous from trace directories (rdzvscope run --out) and/or logs");
  sub->add_option("paths", opt->paths, "Trace directories or *.rzt files")->type_name("PATH...");
  sub->add_option("--log", opt->logs,
                  "Rank logs (one per rank, or one merged file): files, plain or .gz; directories (their log files, "
                  "recursively); - for standard input")
      ->type_name("FILE|DIR|-...");
  sub->add_option("--flight-recorder", opt->flight_recorder,
                  "PyTorch Flight Recorder dumps (TORCH_FR_BUFFER_SIZE; one file per rank, <prefix><rank>, written by "
                  "NCCL's watchdog on a timeout): files, or directories of them. Dumps named nccl_trace_rank_<N> in "
                  "the trace directories are read too")
      ->type_name("FILE|DIR...");
  sub->add_option("--format", opt->format, "Report format")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->type_name("text|json|markdown");
  sub->add_option("--timeline", opt->timeline, "Also write the rendezvous as Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing)")
      ->type_name("FILE");
  sub->add_option("--html", opt->html, "Also write a self-contained HTML report (no scripts, no network)")->type_name("FILE");
  sub->add_option("--prom", opt->prom,
                  "Also write Prometheus metrics (node_exporter textfile format; written whole, then renamed)")
      ->type_name("FILE");
  sub->add_flag("--fail-on-problem", opt->fail_on_problem, "Exit 3 when the verdict is not healthy (with --runs: in any run)");
  sub->add_flag("--runs", opt->runs,
                "Each PATH is one run of the same job (a directory; one directory of run directories stands for "
                "them): diagnose each, then compare where and how they failed. Logs: the *.log files in each run's "
                "directory; not with --log, --timeline, --html");
  return Command{sub, [opt] { return run_analyze(*opt); }};
}

}  // namespace rdzvscope::cli
