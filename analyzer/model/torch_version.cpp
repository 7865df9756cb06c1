#include "torch_version.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "log_facts.h"
#include "process_model.h"


namespace rdzvscope {

namespace {

// "2.13.0+cpu" -> (2, 13); nullopt for a range (">=2.5") or anything else.
std::optional<std::pair<int, int>> major_minor(const std::string& version) {
  int a = 0, b = 0;
  if (version.empty() || version[0] < '0' || version[0] > '9') return std::nullopt;
  if (std::sscanf(version.c_str(), "%d.%d", &a, &b) != 2) return std::nullopt;
  return std::pair{a, b};
}

bool recorded_by_a_job_process(const Process& p) {
  return p.role != Role::Helper && (p.header.features & RDZV_FEAT_TORCH_VERSION) && !p.header.torch_version.empty();
}

std::string who(const Process& p) { return p.rank >= 0 ? "rank " + std::to_string(p.rank) : "pid " + std::to_string(p.pid); }

}  // namespace

bool TorchVersion::known_at_most(int major, int minor) const {
  const auto v = source == Source::MessageStyle ? std::nullopt : major_minor(version);
  return v && (v->first < major || (v->first == major && v->second <= minor));
}

bool TorchVersion::known_newer_than(int major, int minor) const {
  const auto v = source == Source::MessageStyle ? std::nullopt : major_minor(version);
  return v && !known_at_most(major, minor);
}

std::string TorchVersion::words() const {
  std::string s = version;
  if (source == Source::MessageStyle) s += " (guessed from message style)";
  if (!others.empty()) {
    s += " (also";
    for (std::size_t i = 0; i < others.size(); ++i) s += (i ? ", " : " ") + others[i];
    s += ")";
  }
  return s;
}

std::optional<TorchVersion> traced_torch_version(const std::vector<Process>& processes) {
  std::map<std::string, int> count;
  for (const Process& p : processes)
    if (recorded_by_a_job_process(p)) ++count[p.header.torch_version];
  if (count.empty()) return std::nullopt;
  const auto most = std::max_element(count.begin(), count.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  TorchVersion out{most->first, TorchVersion::Source::Traces, {}};
  for (const Process& p : processes)
    if (recorded_by_a_job_process(p) && p.header.torch_version != out.version)
      out.others.push_back(p.header.torch_version + " (" + who(p) + ")");
  return out;
}

std::optional<TorchVersion> find_torch_version(const std::vector<Process>& processes, const LogFacts& logs) {
  if (auto traced = traced_torch_version(processes)) return traced;
  if (!logs.torch_version.empty()) return TorchVersion{logs.torch_version, TorchVersion::Source::Logs, {}};
  if (!logs.version_hint.empty()) return TorchVersion{logs.version_hint, TorchVersion::Source::MessageStyle, {}};
  return std::nullopt;
}

}  // namespace rdzvscope
