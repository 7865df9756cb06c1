#include "log_facts.h"

#include <algorithm>

namespace rdzvscope {

std::vector<const LogEvent*> LogFacts::of(std::initializer_list<LogFamily> families) const {
  std::vector<const LogEvent*> out;
  // A line can match several families (a "recvValue failed ...: got 0 bytes" is both a
  // send/recv failure and a zero read): any of them counts.
  for (const auto& e : events)
    if (std::any_of(families.begin(), families.end(), [&](LogFamily f) { return e.has(f); })) out.push_back(&e);
  return out;
}

namespace {

// torchrun's name for a launch setting of its INFO block; min_nodes and max_nodes make "nnodes".
const char* option_of(const std::string& setting) {
  if (setting == "run_id") return "rdzv-id";
  if (setting == "rdzv_endpoint") return "rdzv-endpoint";
  if (setting == "rdzv_backend") return "rdzv-backend";
  if (setting == "nproc_per_node") return "nproc-per-node";
  if (setting == "min_nodes") return "min-nodes";
  if (setting == "max_nodes") return "max-nodes";
  return nullptr;
}

// One agent's launch configuration per block of setting lines of one source (launch_configs).
void add_launch_setting(std::vector<LogFacts::LaunchConfig>& configs, const LogEvent& e) {
  const char* option = option_of(e.setting);
  if (!option) return;
  LogFacts::LaunchConfig* current = nullptr;
  for (auto it = configs.rbegin(); it != configs.rend(); ++it)
    if (it->file == e.file && it->origin == e.origin) {
      current = &*it;
      break;
    }
  if (!current || current->settings.count(option)) {
    configs.push_back({e.file, e.origin, e.line, {}});
    current = &configs.back();
  }
  current->settings[option] = e.setting_value;
}

// "nnodes" from min-nodes and max-nodes, as --nnodes gives it: N, or MIN:MAX.
void settle_nnodes(LogFacts::LaunchConfig& c) {
  auto lo = c.settings.find("min-nodes"), hi = c.settings.find("max-nodes");
  if (lo != c.settings.end() && hi != c.settings.end())
    c.settings["nnodes"] = lo->second == hi->second ? lo->second : lo->second + ":" + hi->second;
  c.settings.erase("min-nodes");
  c.settings.erase("max-nodes");
}

}  // namespace

LogFacts load_logs(const std::vector<std::string>& paths) {
  LogFacts facts;
  for (const auto& path : paths) {
    facts.stats.add(Stat::LogFiles);
    auto scan = rdzv::logs::scan_log(path);
    if (!scan) facts.errors.push_back(Error{"", scan.error().message, std::nullopt});  // names the file
    // A log cut short (a truncated .gz) still holds what came before the cut: it is used.
    rdzv::logs::LogScan* read = scan ? &scan.value() : scan.partial();
    if (!read) continue;
    if (!scan) facts.stats.add(Stat::PartialLogFiles);
    auto& s = *read;
    facts.stats.add(Stat::LogLines, s.lines);
    facts.stats.add(Stat::LogLinesMatched, s.matched);
    if (facts.torch_version.empty()) facts.torch_version = s.torch_version;
    if (facts.version_hint.empty()) facts.version_hint = rdzv::logs::version_hint(s);
    for (auto& e : s.events) {
      if (e.family == LogFamily::LaunchSetting)
        add_launch_setting(facts.launch_configs, e);
      else if (rdzv::logs::is_other_error(e.family))
        facts.other_errors.push_back(std::move(e));
      else
        facts.events.push_back(std::move(e));
    }
  }
  for (auto& c : facts.launch_configs) settle_nnodes(c);
  return facts;
}

}  // namespace rdzvscope
