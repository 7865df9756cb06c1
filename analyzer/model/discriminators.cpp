// Discriminators (diagnosis.h): kept in the order set, and worded for the text and HTML views.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "context.h"
#include "diagnosis.h"

namespace rdzvscope {

void Discriminators::set(std::string_view name, DiscriminatorValue value) {
  for (Discriminator& d : items_)
    if (d.name == name) {
      d.value = std::move(value);
      return;
    }
  items_.push_back(Discriminator{std::string(name), std::move(value)});
}

const DiscriminatorValue* Discriminators::find(std::string_view name) const {
  for (const Discriminator& d : items_)
    if (d.name == name) return &d.value;
  return nullptr;
}

namespace {

constexpr const char* kNone = "none";

std::string names_words(const std::vector<std::string>& names) {
  return names.empty() ? kNone : fmt::format("{}", fmt::join(names, ", "));
}

std::string timeout_words(const TimeoutFact& t) {
  return fmt::format("{} ({}: {})", fmt_seconds(static_cast<double>(t.ms) / 1000.0),
                     t.internal_default ? "internal default" : "configured", t.note);
}

std::string after_rendezvous_words(const AfterRendezvous& a) {
  return fmt::format("completed at {}; rank {} failed first, at {}", a.at, a.first_failed_rank, a.first_failure);
}

std::string absent_nodes_words(const std::vector<AbsentNode>& nodes) {
  std::vector<std::string> each;
  for (const AbsentNode& n : nodes)
    each.push_back(fmt::format("node {} by {}: rank(s) {}", n.index, n.index_var, rank_list(n.ranks)));
  return names_words(each);
}

// "MASTER_PORT expected 29500: 29500 on rank 0, rank 1; 29501 on rank 2 (differing: rank 2)".
std::string mismatched_words(const std::vector<MismatchedSetting>& settings) {
  std::vector<std::string> each;
  for (const MismatchedSetting& m : settings) {
    std::vector<std::string> values;
    for (const auto& [value, who] : m.values) values.push_back(fmt::format("{} on {}", value, names_words(who)));
    each.push_back(fmt::format("{} expected {}: {} (differing: {})", m.setting, m.expected, fmt::join(values, "; "),
                               names_words(m.differing)));
  }
  return fmt::format("{}", fmt::join(each, " | "));
}

struct Words {
  std::string operator()(const NotKnown&) const { return kNone; }
  std::string operator()(std::int64_t n) const { return std::to_string(n); }
  std::string operator()(const std::string& s) const { return s.empty() ? kNone : s; }
  std::string operator()(const Seconds& s) const { return fmt_seconds(s.s); }
  std::string operator()(const RankSet& r) const { return r.ranks.empty() ? kNone : rank_list(r.ranks); }
  std::string operator()(const NameList& n) const { return names_words(n.names); }
  std::string operator()(const TimeoutFact& t) const { return timeout_words(t); }
  std::string operator()(const AfterRendezvous& a) const { return after_rendezvous_words(a); }
  std::string operator()(const std::vector<AbsentNode>& n) const { return absent_nodes_words(n); }
  std::string operator()(const std::vector<MismatchedSetting>& m) const { return mismatched_words(m); }
};

}  // namespace

std::string discriminator_words(const DiscriminatorValue& v) { return std::visit(Words{}, v); }

std::string alternative_words(const Alternative& a) {
  return std::string(name_of(a.cls)) + (a.cause ? " (" + *a.cause + ")" : "") + ": " + a.why +
         "; what would tell: " + a.settle;
}

}  // namespace rdzvscope
