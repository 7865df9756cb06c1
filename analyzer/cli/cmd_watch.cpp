// rdzvscope watch DIR... [--world-size N] [--interval S] [--once] [--format text|json]
//                 [--prom FILE]:
// while a job starts (or hangs), who has joined the rendezvous and what each missing rank is
// doing, from the trace files as they are written (docs/commands.md). In a terminal the screen
// is redrawn every interval until `q`; piped, or with --once, one report is printed.
// Exit: 0, or 2 for bad usage (a path that does not exist, a file --prom cannot write).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "report/report.h"
#include "rules/rules.h"
#include "diagnostics.h"
#include "live/trace_follower.h"
#include "output_file.h"
#include "terminal.h"

namespace rdzvscope::cli {
namespace {

std::shared_ptr<spdlog::logger> watch_log() { return log_for("watch"); }

struct WatchOptions {
  std::vector<std::string> paths;
  std::optional<int> world_size;
  double interval_s = 1.0;
  bool once = false;
  int count = 1;  // refreshes before the report, with --once or a pipe
  std::string format = "text";
  std::string prom;
};

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// One refresh: what the traces say now, as the analyzer's model and the join states (which
// point into the model: the three live and die together).
struct Snapshot {
  std::unique_ptr<TraceInputs> traces;
  std::unique_ptr<Context> model;
  Diagnosis diagnosis;
  JoinStatus status;
  TraceFollower::Stats read;
  double cpu_s = 0;
};

Snapshot take_snapshot(TraceFollower& follower, const WatchOptions& opt) {
  static const LogFacts kNoLogs;
  const double cpu0 = cpu_seconds();
  Snapshot snap;
  snap.traces = std::make_unique<TraceInputs>(follower.refresh());
  snap.read = follower.last_refresh();
  snap.model = std::make_unique<Context>(*snap.traces, kNoLogs, opt.world_size);
  snap.diagnosis = diagnose(*snap.model);
  snap.status = join_status(*snap.model, wall_clock_ns());
  snap.cpu_s = cpu_seconds() - cpu0;
  watch_log()->debug("refresh: {} trace file(s), {} decoded again, {:.3f} s of CPU", snap.read.files,
               snap.read.decoded, snap.cpu_s);
  return snap;
}

bool write_prom(const WatchOptions& opt, const Snapshot& snap) {
  if (opt.prom.empty()) return true;
  if (auto err = write_file_atomically(opt.prom, prometheus_text(snap.status, snap.diagnosis,
                                                                 wall_clock_ns()))) {
    watch_log()->error("{}", err->message());
    return false;
  }
  return true;
}

std::string report_once(const WatchOptions& opt, const Snapshot& snap) {
  if (opt.format == "json") {
    auto j = join_status_json(snap.status, snap.diagnosis);
    j["refresh"] = {{"trace_files", snap.read.files},
                    {"decoded", snap.read.decoded},
                    {"cpu_seconds", snap.cpu_s}};
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out;
  for (const auto& line : join_status_lines(snap.status, snap.diagnosis, SIZE_MAX))
    out += line + "\n";
  return out;
}

std::string title(const WatchOptions& opt, const Snapshot& snap) {
  return fmt::format("rdzvscope watch {}   {}   every {} s   q quits", fmt::join(opt.paths, " "),
                     time_of_day(snap.status.now_ns), opt.interval_s);
}

int run_live(TraceFollower& follower, const WatchOptions& opt) {
  Terminal term;
  const auto interval = std::chrono::milliseconds(
      static_cast<long>(std::lround(opt.interval_s * 1000)));
  while (!term.quit_requested()) {
    const Snapshot snap = take_snapshot(follower, opt);
    if (!write_prom(opt, snap)) return kExitUsage;
    const int rows = term.size().rows;
    std::vector<std::string> lines{title(opt, snap), ""};
    const auto body = join_status_lines(snap.status, snap.diagnosis,
                                        static_cast<std::size_t>(std::max(rows - 2, 1)));
    lines.insert(lines.end(), body.begin(), body.end());
    term.draw(lines);
    // Sleep until the next refresh, or a key; a resize or a signal redraws at once.
    const auto next = std::chrono::steady_clock::now() + interval;
    for (auto now = std::chrono::steady_clock::now(); now < next && !term.quit_requested();
         now = std::chrono::steady_clock::now()) {
      const char key = term.wait_key(
          std::chrono::duration_cast<std::chrono::milliseconds>(next - now));
      if (key == 'q' || key == 'Q') return kExitOk;
      if (key == 0) break;
    }
  }
  return kExitOk;
}

int run_watch(const WatchOptions& opt) {
  bool all_there = true;
  for (const auto& p : opt.paths)
    if (::access(p.c_str(), F_OK) != 0) {
      watch_log()->error("{}: {}", p, std::strerror(errno));
      all_there = false;
    }
  if (!all_there) return kExitUsage;
  TraceFollower follower(opt.paths);
  if (opt.once || !::isatty(STDOUT_FILENO)) {
    Snapshot snap = take_snapshot(follower, opt);
    for (int i = 1; i < opt.count; ++i) {
      if (!write_prom(opt, snap)) return kExitUsage;
      std::this_thread::sleep_for(std::chrono::duration<double>(opt.interval_s));
      snap = take_snapshot(follower, opt);
    }
    if (!write_prom(opt, snap)) return kExitUsage;
    const std::string out = report_once(opt, snap);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
  }
  return run_live(follower, opt);
}

}  // namespace

Command add_watch_command(CLI::App& app) {
  auto opt = std::make_shared<WatchOptions>();
  CLI::App* sub = app.add_subcommand("watch",
                                     "While a job starts or hangs: which ranks have not joined the "
                                     "rendezvous, and what each is doing");
  sub->add_option("paths", opt->paths, "Trace directories being written (rdzvscope run --out)")
      ->type_name("DIR...")
      ->required();
  sub->add_option("--world-size", opt->world_size,
                  "Ranks the job expects (default: WORLD_SIZE from the traces)")
      ->check(CLI::Range(1, 1 << 20))
      ->type_name("N");
  sub->add_option("--interval", opt->interval_s, "Seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->type_name("S")
      ->capture_default_str();
  sub->add_flag("--once", opt->once,
                "Print one report and exit (also what happens when stdout is not a terminal)");
  sub->add_option(
         "--count", opt->count,
         "With --once or a pipe: refresh this many times, --interval apart, then report the last "
         "(its refresh figures are the last refresh's: what following a live job costs)")
      ->check(CLI::Range(1, 1000000))
      ->type_name("N")
      ->capture_default_str();
  sub->add_option("--format", opt->format, "Report format for --once or a pipe")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("text|json")
      ->capture_default_str();
  sub->add_option("--prom", opt->prom,
                  "Also write Prometheus metrics at every refresh (node_exporter textfile format; "
                  "written whole, "
                  "then renamed)")
      ->type_name("FILE");
  return {sub, [opt] { return run_watch(*opt); }};
}

}  // namespace rdzvscope::cli
