#include "launcher_options.h"

#include <charconv>
#include <vector>

namespace rdzvscope {

namespace {

std::vector<std::string> words_of(const std::string& cmdline) {
  std::vector<std::string> words;
  for (std::size_t i = 0; i < cmdline.size();) {
    std::size_t j = cmdline.find(' ', i);
    if (j == std::string::npos) j = cmdline.size();
    if (j > i) words.push_back(cmdline.substr(i, j - i));
    i = j + 1;
  }
  return words;
}

}  // namespace

std::map<std::string, std::string> torchrun_options(const std::string& cmdline) {
  static const std::pair<const char*, const char*> kOptions[] = {
      {"rdzv-endpoint", "--rdzv-endpoint"}, {"rdzv-id", "--rdzv-id"},
      {"rdzv-backend", "--rdzv-backend"},   {"nnodes", "--nnodes"},
      {"master-addr", "--master-addr"},     {"master-port", "--master-port"},
  };
  const std::vector<std::string> words = words_of(cmdline);
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string w = words[i];
    if (w.rfind("--", 0) != 0) continue;
    for (char& ch : w)
      if (ch == '_') ch = '-';
    std::string value;
    std::string key = w;
    if (auto eq = w.find('='); eq != std::string::npos) {
      key = w.substr(0, eq);
      value = words[i].substr(eq + 1);
    } else if (i + 1 < words.size()) {
      value = words[i + 1];
    }
    for (const auto& [name, option] : kOptions)
      if (key == option && !value.empty() && !out.count(name)) out[name] = value;
  }
  return out;
}

std::optional<int> torchrun_min_nodes(const std::map<std::string, std::string>& options) {
  const auto it = options.find("nnodes");
  if (it == options.end()) return std::nullopt;
  const std::string& v = it->second;
  const std::size_t end = v.find(':') == std::string::npos ? v.size() : v.find(':');
  int n = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + end, n);
  constexpr int kMaxNodes = 1 << 20;
  if (ec != std::errc() || ptr != v.data() + end || n < 1 || n > kMaxNodes) return std::nullopt;
  return n;
}

}  // namespace rdzvscope
