#include "failure_class.h"

#include <array>
#include <ostream>
#include <utility>

namespace rdzvscope {

namespace {

// Kept in enum order; a test checks that every enumerator has its name (test_rules.cpp).
constexpr std::array<std::pair<FailureClass, std::string_view>, 15> kNames{{
    {FailureClass::Healthy, "healthy"},
    {FailureClass::Unknown, "unknown"},
    {FailureClass::RdzvCollision, "rdzv_collision"},
    {FailureClass::PortConflict, "port_conflict"},
    {FailureClass::NameResolution, "name_resolution"},
    {FailureClass::BrokenPipe, "broken_pipe"},
    {FailureClass::ConnectTimeout, "connect_timeout"},
    {FailureClass::StragglerTimeout, "straggler_timeout"},
    {FailureClass::StoreNotReady, "store_not_ready"},
    {FailureClass::TransientRecv, "transient_recv"},
    {FailureClass::ConfigMismatch, "config_mismatch"},
    {FailureClass::StoreUnreachable, "store_unreachable"},
    {FailureClass::StalePeerAddress, "stale_peer_address"},
    {FailureClass::RankDied, "rank_died"},
    {FailureClass::StoreUnresponsive, "store_unresponsive"},
}};

}  // namespace

std::string_view name_of(FailureClass c) {
  for (const auto& [cls, name] : kNames)
    if (cls == c) return name;
  return "unknown";
}

std::optional<FailureClass> class_named(std::string_view name) {
  for (const auto& [cls, n] : kNames)
    if (n == name) return cls;
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, FailureClass c) { return os << name_of(c); }

}  // namespace rdzvscope
