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

LogFacts load_logs(const std::vector<std::string>& paths) {
  LogFacts facts;
  for (const auto& path : paths) {
    ++facts.files;
    auto scan = rdzv::logs::scan_log(path);
    if (!scan) facts.errors.push_back(Error{"", scan.error().message, std::nullopt});  // names the file
    // A log cut short (a truncated .gz) still holds what came before the cut: it is used.
    rdzv::logs::LogScan* read = scan ? &scan.value() : scan.partial();
    if (!read) continue;
    if (!scan) ++facts.partial_files;
    auto& s = *read;
    facts.lines += s.lines;
    facts.matched += s.matched;
    if (facts.torch_version.empty()) facts.torch_version = s.torch_version;
    if (facts.version_hint.empty()) facts.version_hint = rdzv::logs::version_hint(s);
    for (auto& e : s.events) {
      if (rdzv::logs::is_other_error(e.family))
        facts.other_errors.push_back(std::move(e));
      else
        facts.events.push_back(std::move(e));
    }
  }
  return facts;
}

}  // namespace rdzvscope
