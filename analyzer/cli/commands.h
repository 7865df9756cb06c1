// One file per subcommand (cmd_<name>.cpp). Each registers its options on the app and
// returns how to run it once the command line has been parsed; main() picks the one parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace rdzvscope::cli {

// Exit status: 0 done, 2 bad usage or unreadable input, 3 a problem found under
// --fail-on-problem (docs/commands.md), 127 exec failed.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitProblem = 3;  // --fail-on-problem: the verdict is not healthy
inline constexpr int kExitExecFailed = 127;
// RDZVSCOPE_STRICT=1 (the test suite): a verdict contradicted its own facts (rules/consistency.h).
inline constexpr int kExitContradiction = 70;

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_dump_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);
Command add_attach_command(CLI::App& app);
Command add_preflight_command(CLI::App& app);
Command add_watch_command(CLI::App& app);

}  // namespace rdzvscope::cli
