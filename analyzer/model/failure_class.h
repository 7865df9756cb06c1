// The failure classes: what a verdict names. The enum is what the analyzer compares; the
// name is what reports and the JSON print. Everything else about a class (its precedence,
// its rule, how runs of it compare) is its row in the registry (class_registry.h).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace rdzvscope {

enum class FailureClass {
  Healthy,
  Unknown,
  RdzvCollision,
  PortConflict,
  NameResolution,
  BrokenPipe,
  ConnectTimeout,
  StragglerTimeout,
  StoreNotReady,
  TransientRecv,
  ConfigMismatch,
  StoreUnreachable,
  StalePeerAddress,
  RankDied,
  StoreUnresponsive,
};

// "straggler_timeout": the name in reports and in rdzvscope.diagnosis/1.
std::string_view name_of(FailureClass c);
std::optional<FailureClass> class_named(std::string_view name);

// For test frameworks and anything else that prints values.
std::ostream& operator<<(std::ostream& os, FailureClass c);

}  // namespace rdzvscope
