#include "run_env.h"

#include <algorithm>
#include <charconv>

#include "../../shim/inject_spec.h"

namespace rdzvscope::cli {

Result<std::vector<std::uint16_t>> parse_ports(std::string_view text) {
  std::vector<std::uint16_t> ports;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    const std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    unsigned long value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 1 ||
        value > 65535) {
      return Error{"", "invalid port '" + std::string(item) + "' in --ports '" +
                           std::string(text) + "' (want integers 1..65535, comma separated)",
                   std::nullopt};
    }
    const auto port = static_cast<std::uint16_t>(value);
    if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(port);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return ports;
}

Result<std::string> inject_env(const std::vector<std::string>& faults) {
  std::string spec;
  for (const auto& f : faults) {
    char err[256];
    rdzv::InjectSpec one;
    if (!rdzv::inject_parse(f.c_str(), &one, err, sizeof err))
      return Error{"", "--inject '" + f + "': " + err, std::nullopt};
    if (!spec.empty()) spec += ',';
    spec += f;
  }
  rdzv::InjectSpec all;
  char err[256];
  if (!spec.empty() && !rdzv::inject_parse(spec.c_str(), &all, err, sizeof err))
    return Error{"", "--inject: " + std::string(err), std::nullopt};
  return spec;
}

std::string join_ports(const std::vector<std::uint16_t>& ports) {
  std::string out;
  for (auto p : ports) {
    if (!out.empty()) out += ',';
    out += std::to_string(p);
  }
  return out;
}

namespace {

bool is_rdzvscope_shim(std::string_view entry, std::string_view shim_abs) {
  if (entry == shim_abs) return true;
  const std::size_t slash = entry.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? entry : entry.substr(slash + 1);
  return base == "librdzvscope.so";
}

}  // namespace

std::string merge_ld_preload(const std::string& shim_abs, const char* existing) {
  std::string out = shim_abs;
  if (existing == nullptr) return out;
  // ld.so separates LD_PRELOAD entries by colons or spaces.
  const std::string_view all(existing);
  std::size_t pos = 0;
  while (pos <= all.size()) {
    std::size_t end = all.find_first_of(": ", pos);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view entry = all.substr(pos, end - pos);
    if (!entry.empty() && !is_rdzvscope_shim(entry, shim_abs)) {
      out += ':';
      out += entry;
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace rdzvscope::cli
