// The CLI's own messages on stderr (not the reports, which go to stdout): one spdlog logger
// per subcommand, named as the user typed it, so that every line reads "rdzvscope analyze:
// ..." whatever its level. -q/--quiet keeps warnings and errors only; -v/--verbose adds what
// each step read and how long it took (debug).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace rdzvscope::cli {

enum class Verbosity { Quiet, Normal, Verbose };

// Applies to every logger, made before or after.
void set_verbosity(Verbosity v);
// "analyze" -> the logger "rdzvscope analyze"; "" -> "rdzvscope".
std::shared_ptr<spdlog::logger> log_for(const std::string& command);

// Now on the wall clock (CLOCK_REALTIME), ns: the traces' time base.
inline std::int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// For --verbose: the time since the last lap, as "0.123 s".
class Stopwatch {
 public:
  std::string lap() {
    const auto now = std::chrono::steady_clock::now();
    const std::chrono::duration<double> d = now - last_;
    last_ = now;
    return fmt::format("{:.3f} s", d.count());
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace rdzvscope::cli
