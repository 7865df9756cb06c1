// rdzvscope dump FILE|DIR...: every trace as JSON lines (header, events, summary), for
// scripts and for looking at a trace by eye. Damage is reported on stderr, one line per
// problem, and the other files are still dumped; exit 2 at the end if anything was wrong.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "diagnostics.h"
#include "model/process_model.h"
#include "reader/dump_json.h"
#include "reader/trace_reader.h"

namespace rdzvscope::cli {
namespace {

struct DumpOptions {
  std::vector<std::string> paths;
};

void report(const Error& e) { log_for("dump")->error("{}", e.message()); }

void print_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

// Dumps one file; returns false when anything was wrong with it.
bool dump_file(const std::string& path) {
  auto result = read_trace(path);
  if (!result) {
    report(result.error());
    return false;
  }
  const Trace& trace = result.value();
  print_line(json_line(header_json(trace)));
  for (const auto& rec : trace.records) print_line(json_line(event_json(trace.header, rec)));
  for (const auto& call : trace.inflight) print_line(json_line(inflight_json(trace, call)));
  print_line(json_line(summary_json(trace)));
  if (trace.damage) {
    std::fflush(stdout);  // keep stdout and stderr in a sensible order on a terminal
    report(*trace.damage);
    return false;
  }
  return true;
}

int run_dump(const DumpOptions& opt) {
  bool all_ok = true;
  for (const auto& path : opt.paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      report(Error{path, std::strerror(errno), std::nullopt});
      all_ok = false;
      continue;
    }
    std::vector<std::string> files{path};
    if (S_ISDIR(st.st_mode)) {
      auto listed = trace_files_in(path);
      if (!listed) {
        report(listed.error());
        all_ok = false;
        continue;
      }
      files = std::move(listed.value());
    }
    for (const auto& f : files) all_ok = dump_file(f) && all_ok;
  }
  // A full disk or a closed pipe must not look like a complete dump.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    log_for("dump")->error("writing the output: {}", std::strerror(errno));
    return kExitUsage;
  }
  return all_ok ? kExitOk : kExitUsage;
}

}  // namespace

Command add_dump_command(CLI::App& app) {
  auto opt = std::make_shared<DumpOptions>();
  CLI::App* sub = app.add_subcommand("dump", "Print trace files as JSON lines (header, events, summary)");
  sub->add_option("paths", opt->paths, "Trace files, or directories of *.rzt files")
      ->required()
      ->type_name("FILE|DIR");
  return Command{sub, [opt] { return run_dump(*opt); }};
}

}  // namespace rdzvscope::cli
