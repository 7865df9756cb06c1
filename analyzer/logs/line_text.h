// Internal: the small readers of a log line's text that the classifier (classify.cpp) and the
// family table (families.cpp) share. Inline, as they were when one file held both: they run on
// every candidate line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rdzv::logs::detail {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alnum(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// Digits at s[pos...] (optional leading '-'): value and the position after them.
inline std::optional<int64_t> number_at(std::string_view s, size_t pos, size_t* after = nullptr) {
  bool neg = false;
  if (pos < s.size() && s[pos] == '-') {
    neg = true;
    ++pos;
  }
  const size_t start = pos;
  int64_t v = 0;
  while (pos < s.size() && is_digit(s[pos]) && pos - start < 15) v = v * 10 + (s[pos++] - '0');
  if (pos == start) return std::nullopt;
  if (after) *after = pos;
  return neg ? -v : v;
}

// The number right after the first `key` in s that has one.
inline std::optional<int64_t> number_after(std::string_view s, std::string_view key,
                                           size_t* after = nullptr) {
  for (size_t p = s.find(key); p != std::string_view::npos; p = s.find(key, p + 1)) {
    if (auto v = number_at(s, p + key.size(), after)) return v;
  }
  return std::nullopt;
}

}  // namespace rdzv::logs::detail
