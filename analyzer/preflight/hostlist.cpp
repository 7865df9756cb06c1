#include "preflight/hostlist.h"

#include <charconv>
#include <cstdint>

namespace rdzvscope::preflight {

namespace {

Error bad(std::string_view text, const std::string& detail) {
  return Error{"", "hostlist '" + std::string(text) + "': " + detail, std::nullopt};
}

// One bracket group's numbers, as strings of their width: "0-3,7" -> 0 1 2 3 7.
Result<std::vector<std::string>> expand_group(std::string_view all, std::string_view g) {
  std::vector<std::string> out;
  if (g.empty()) return bad(all, "empty brackets []");
  std::size_t pos = 0;
  while (pos <= g.size()) {
    std::size_t comma = g.find(',', pos);
    if (comma == std::string_view::npos) comma = g.size();
    const std::string_view r = g.substr(pos, comma - pos);
    if (r.empty()) return bad(all, "empty range in [" + std::string(g) + "]");
    const std::size_t dash = r.find('-');
    const std::string_view lo_s = r.substr(0, dash);
    const std::string_view hi_s = dash == std::string_view::npos ? lo_s : r.substr(dash + 1);
    auto number = [&](std::string_view s, std::uint64_t& v) {
      if (s.empty() || s.size() > 18) return false;
      for (char c : s)
        if (c < '0' || c > '9') return false;
      std::from_chars(s.data(), s.data() + s.size(), v);
      return true;
    };
    std::uint64_t lo = 0, hi = 0;
    if (!number(lo_s, lo) || !number(hi_s, hi))
      return bad(all, "'" + std::string(r) + "' in [" + std::string(g) +
                          "] is not a number or a range N-M");
    if (hi < lo) return bad(all, "range " + std::string(r) + " runs backwards");
    if (hi - lo >= kMaxHosts || out.size() + (hi - lo + 1) > kMaxHosts)
      return bad(all, "more than " + std::to_string(kMaxHosts) + " names");
    const std::size_t width = lo_s.size() > 1 && lo_s.front() == '0' ? lo_s.size() : 0;
    for (std::uint64_t v = lo; v <= hi; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      out.push_back(std::move(n));
    }
    pos = comma + 1;
  }
  return out;
}

// One item without top-level commas: "rack[1-2]-n[1-2]" -> its names.
Result<std::vector<std::string>> expand_item(std::string_view all, std::string_view item,
                                             std::size_t already) {
  std::vector<std::string> names{""};
  std::size_t pos = 0;
  while (pos < item.size()) {
    const std::size_t open = item.find('[', pos);
    const std::string_view literal = item.substr(pos, open == std::string_view::npos ? item.npos : open - pos);
    if (literal.find(']') != std::string_view::npos) return bad(all, "']' without '['");
    for (std::string& n : names) n += literal;
    if (open == std::string_view::npos) break;
    const std::size_t close = item.find(']', open);
    if (close == std::string_view::npos) return bad(all, "'[' without ']'");
    const std::string_view group = item.substr(open + 1, close - open - 1);
    if (group.find('[') != std::string_view::npos) return bad(all, "nested '['");
    auto numbers = expand_group(all, group);
    if (!numbers) return numbers.error();
    if ((already + names.size()) * numbers.value().size() > kMaxHosts)
      return bad(all, "more than " + std::to_string(kMaxHosts) + " names");
    std::vector<std::string> next;
    next.reserve(names.size() * numbers.value().size());
    for (const std::string& n : names)
      for (const std::string& v : numbers.value()) next.push_back(n + v);
    names = std::move(next);
    pos = close + 1;
  }
  return names;
}

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '[' || c == ']' || c == ',';
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view text) {
  if (text.empty()) return bad(text, "empty");
  for (char c : text)
    if (!allowed(c))
      return bad(text, c == ' ' ? std::string("a space") : "character '" + std::string(1, c) + "'");
  std::vector<std::string> out;
  std::size_t pos = 0, depth_open = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '[') ++depth_open;
    if (c == ']') {
      if (depth_open == 0) return bad(text, "']' without '['");
      --depth_open;
    }
    if (c != ',' || (depth_open > 0 && i < text.size())) continue;
    if (depth_open > 0) return bad(text, "'[' without ']'");
    const std::string_view item = text.substr(pos, i - pos);
    if (item.empty()) return bad(text, "empty name between commas");
    auto names = expand_item(text, item, out.size());
    if (!names) return names.error();
    for (std::string& n : names.value()) out.push_back(std::move(n));
    pos = i + 1;
  }
  return out;
}

}  // namespace rdzvscope::preflight
