#include "diagnostics.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace rdzvscope::cli {

namespace {

spdlog::level::level_enum g_level = spdlog::level::info;

spdlog::level::level_enum level_of(Verbosity v) {
  switch (v) {
    case Verbosity::Quiet: return spdlog::level::warn;
    case Verbosity::Verbose: return spdlog::level::debug;
    case Verbosity::Normal: break;
  }
  return spdlog::level::info;
}

}  // namespace

void set_verbosity(Verbosity v) {
  g_level = level_of(v);
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->set_level(g_level); });
}

std::shared_ptr<spdlog::logger> log_for(const std::string& command) {
  const std::string name = command.empty() ? "rdzvscope" : "rdzvscope " + command;
  if (auto existing = spdlog::get(name)) return existing;
  // Plain stderr, no colour and no level tag: the lines are read by people and by scripts
  // that grep "rdzvscope analyze: ...". Flushed at once, so that they interleave with the
  // traced command's own output in order.
  auto logger = spdlog::stderr_logger_st(name);
  logger->set_pattern("%n: %v");
  logger->set_level(g_level);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

}  // namespace rdzvscope::cli
