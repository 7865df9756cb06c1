// rdzvscope run [--out DIR] [--ports P,...] [--shim PATH] [--max-mb N] [--inject FAULT]...
//               -- CMD [ARGS...]
// Sets up the environment that makes every process of CMD (and its children, which inherit
// it) load the shim and write its trace into DIR, then becomes CMD through exec: no
// wrapper process stays in between, so signals, exit status and job control are CMD's own.
// With --verdict it stays CMD's parent instead (supervise.h): it forwards the scheduler's
// signals and, when CMD fails or is cancelled, prints the verdict on stderr (run_verdict.h)
// before ending with CMD's own status.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "diagnostics.h"
#include "out_dir.h"
#include "run_env.h"
#include "run_verdict.h"
#include "shim_locator.h"

#ifndef RDZVSCOPE_LIBDIR
#define RDZVSCOPE_LIBDIR "lib"
#endif

namespace rdzvscope::cli {
namespace {

struct RunOptions {
  std::string out;
  std::optional<std::string> ports;  // given but empty is an error, not "no ports"
  std::string shim;
  std::optional<unsigned> max_mb;
  std::vector<std::string> inject;  // --inject FAULT, repeatable
  bool verdict = false;             // stay the parent; the verdict on stderr when CMD fails
  std::vector<std::string> command;
};

int run_fail(const std::string& message) {
  log_for("run")->error("{}", message);
  return kExitUsage;
}

std::string exe_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// --verdict: CMD as a child; its failure or cancellation analyzed; its status given back.
int run_with_verdict(const std::vector<std::string>& command, const std::string& dir) {
  const ChildEnd end = run_supervised(command);
  if (!end.started) {
    log_for("run")->error("{}", end.error);
    return kExitExecFailed;
  }
  if (end.failed() && print_run_verdict(dir, end)) return kExitContradiction;
  end_like(end);
}

int run_run(const RunOptions& opt) {
  if (opt.command.empty()) return run_fail("no command given (usage: rdzvscope run [OPTIONS] -- CMD [ARGS...])");

  std::string explicit_shim = opt.shim;
  if (explicit_shim.empty()) {
    if (const char* env = std::getenv("RDZVSCOPE_SHIM")) explicit_shim = env;
  }
  auto shim = find_shim(explicit_shim, exe_dir(), RDZVSCOPE_LIBDIR);
  if (!shim) return run_fail(shim.error().message());
  // ld.so splits LD_PRELOAD at colons and spaces: such a path cannot be preloaded.
  if (shim.value().find_first_of(": ") != std::string::npos) {
    return run_fail(shim.value() + ": the shim path contains a colon or space, which LD_PRELOAD cannot carry");
  }

  std::string ports;
  if (opt.ports) {
    auto parsed = parse_ports(*opt.ports);
    if (!parsed) return run_fail(parsed.error().message());
    ports = join_ports(parsed.value());
  }

  auto inject = inject_env(opt.inject);
  if (!inject) return run_fail(inject.error().message());

  const std::string out = opt.out.empty()
                              ? default_out_dir(std::getenv("SLURM_JOB_ID"), std::time(nullptr))
                              : opt.out;
  auto dir = prepare_out_dir(out);
  if (!dir) return run_fail(dir.error().message());

  const std::string preload = merge_ld_preload(shim.value(), std::getenv("LD_PRELOAD"));
  ::setenv("RDZVSCOPE_DIR", dir.value().c_str(), 1);
  ::setenv("RDZVSCOPE_SHIM", shim.value().c_str(), 1);
  if (!ports.empty()) ::setenv("RDZVSCOPE_PORTS", ports.c_str(), 1);
  if (opt.max_mb) ::setenv("RDZVSCOPE_MAX_MB", std::to_string(*opt.max_mb).c_str(), 1);
  // Injection only when asked for on this command line, never inherited.
  if (inject.value().empty()) ::unsetenv("RDZVSCOPE_INJECT");
  else ::setenv("RDZVSCOPE_INJECT", inject.value().c_str(), 1);
  ::setenv("LD_PRELOAD", preload.c_str(), 1);

  log_for("run")->debug("LD_PRELOAD={} RDZVSCOPE_DIR={}{}", preload, dir.value(),
                         ports.empty() ? std::string() : " RDZVSCOPE_PORTS=" + ports);
  log_for("")->info("tracing into {}", dir.value());
  if (!inject.value().empty())
    log_for("")->warn("rehearsal: injecting {} (every injected call is marked in the trace)",
                      inject.value());

  if (opt.verdict) return run_with_verdict(opt.command, job_trace_root(dir.value()));

  std::vector<char*> argv;
  for (const auto& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  log_for("run")->error("{}: {}", argv[0], std::strerror(errno));
  return kExitExecFailed;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run CMD with the tracing shim preloaded; every process writes DIR/<host>.<pid>.rzt");
  sub->add_option("--out,-o", opt->out,
                  "Trace directory, created 0700 (default: rdzvscope-$SLURM_JOB_ID, else "
                  "rdzvscope-YYYYmmdd-HHMMSS)")
      ->type_name("DIR");
  sub->add_option("--ports", opt->ports,
                  "Extra rendezvous (store) ports, comma separated, besides MASTER_PORT, 29400, 29500")
      ->type_name("P,...");
  sub->add_option("--shim", opt->shim,
                  "Path of librdzvscope.so (default: $RDZVSCOPE_SHIM, else ../lib beside rdzvscope)")
      ->type_name("PATH");
  sub->add_option("--max-mb", opt->max_mb, "Size limit of each trace file in MiB")
      ->type_name("N")
      ->check(CLI::Range(1u, 1024u));  // the shim caps a file at 1024 MiB
  sub->add_option("--inject", opt->inject,
                  "Rehearse a failure: FAULT[:rank=R][:DURATION], repeatable; FAULT is "
                  "resolve-fail, connect-refused, connect-timeout, late, port-taken or "
                  "store-reset[:bytes=N] (docs/commands.md)")
      ->type_name("FAULT")
      ->allow_extra_args(false);  // one FAULT per --inject
  sub->add_flag("--verdict", opt->verdict,
               "Stay the parent of CMD: forward SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1/2 to it and, when it "
               "fails or is cancelled, print the verdict from DIR on stderr; the exit status stays CMD's");
  sub->add_option("command", opt->command, "The command to trace, after --")->type_name("CMD [ARGS...]");
  return Command{sub, [opt] { return run_run(*opt); }};
}

}  // namespace rdzvscope::cli
