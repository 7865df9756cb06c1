// rdzvscope: diagnose PyTorch distributed rendezvous failures. See docs/architecture.md
// for the parts; this file only dispatches to the subcommands (cmd_*.cpp).
#include <exception>
#include <vector>

#include "commands.h"
#include "diagnostics.h"

#ifndef RDZVSCOPE_VERSION
#define RDZVSCOPE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace rdzvscope::cli;
  CLI::App app{"rdzvscope: diagnose PyTorch distributed rendezvous failures", "rdzvscope"};
  app.set_version_flag("--version", std::string("rdzvscope ") + RDZVSCOPE_VERSION);
  app.require_subcommand(1);

  std::vector<Command> commands{add_run_command(app), add_dump_command(app),
                                add_analyze_command(app)};
  commands.push_back(add_attach_command(app));
  commands.push_back(add_preflight_command(app));
  commands.push_back(add_watch_command(app));
  // Every subcommand takes them, where a user puts them: after its name.
  bool verbose = false, quiet = false;
  for (const auto& c : commands) {
    auto* v = c.app->add_flag("-v,--verbose", verbose, "Also say what was read and how long each step took");
    auto* q = c.app->add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
    v->excludes(q);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" to CLI11 with exit code 0; anything else is bad
    // usage, and docs/commands.md promises exit status 2 for that.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  set_verbosity(quiet ? Verbosity::Quiet : verbose ? Verbosity::Verbose : Verbosity::Normal);
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
  } catch (const std::exception& e) {
    // Last resort: the commands report errors as values; this is for the unforeseen
    // (bad_alloc, filesystem errors), so that the user gets a message, not an abort.
    log_for("")->error("internal error: {}", e.what());
    return kExitUsage;
  }
  return kExitUsage;
}
