// Internal: the families of log lines as data. One row per Family (log_scan.h), in the order
// the classifier tries them: its name, the anchors the prefilter looks for, what it matches,
// what it extracts, the PyTorch versions that print it, and one real line of it.
//
// Adding a family: a Family value, one row in families.cpp (its matcher beside it when no
// list of words says it), its anchors in bench/logscan/patterns.txt when they are new, and a
// test of its variants in tests/logs/test_families.cpp. The compiler checks that every family
// has one row; tests/logs checks that every row's example lands in its row.
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "logs/log_scan.h"

namespace rdzv::logs::detail {

// How a row's match combines with the other rows' (classify.cpp, detect). The table holds the
// rows in this order (the compiler checks it), and by priority within a scope.
enum class Scope : unsigned char {
  Alone,     // the line is this family and no other: the first Alone row that matches decides
  Ranked,    // the first Ranked row that matches is the line's family, later ones go to `also`
  Fallback,  // tried only when no Ranked row matched
  Error,     // the line's family when no other row matched, else one more in `also`
  Setting,   // tried only when no row matched the line, even unwrapped: it states no failure
};
inline constexpr int kScopeCount = static_cast<int>(Scope::Setting) + 1;

// What a line of the family says about a PyTorch version that the log does not state
// (version_hint).
enum class Era {
  Any,            // nothing
  Since2_5,       // 2.5 or later
  UpTo2_4,        // 2.4 or older
  ByTimeoutUnit,  // a timeout in ms: 2.5 or later; in s: 2.4 or older
};

struct FamilyRow {
  Family family;
  std::string_view name;  // snake_case, as reports print it (family_name); a literal, so
                          // name.data() ends in '\0'
  Scope scope = Scope::Ranked;
  // Every line the row matches holds one of these (each at least 4 bytes: prefilter.h).
  std::array<std::string_view, 6> anchors{};
  bool (*matches)(std::string_view body) = nullptr;
  // LogEvent::reason: the text after the first of these keys that the line holds.
  std::array<std::string_view, 2> reason_after = {"with error: "};
  // The values that only this family's lines carry (nullptr: none).
  void (*values)(std::string_view body, LogEvent& ev) = nullptr;
  Era era = Era::Any;
  std::string_view versions;  // the PyTorch versions seen printing it
  std::string_view example;   // one line as PyTorch (or gloo, NCCL, torchrun) printed it
};

// In the order the classifier tries them.
std::span<const FamilyRow> family_table();
// The rows of one scope, in the table's order.
std::span<const FamilyRow> family_rows(Scope scope);
const FamilyRow& family_row(Family f);

}  // namespace rdzv::logs::detail
