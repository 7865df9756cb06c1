// One rule per failure class (rule_<class>.cpp). Each looks at the whole context and answers
// with a candidate verdict or nothing; diagnose() keeps the one with the highest priority.
// Priorities follow causality: a cause outranks the symptoms it produces (a port conflict
// makes clients time out; a collision makes pipes break; a dead store makes stragglers).
#pragma once

#include <optional>

#include "context.h"

namespace rdzvscope {

namespace priority {
inline constexpr int kRdzvCollision = 95;
inline constexpr int kPortConflict = 90;
inline constexpr int kNameResolution = 85;
inline constexpr int kPeerDied = 80;
inline constexpr int kConnectTimeout = 75;
inline constexpr int kStraggler = 70;
inline constexpr int kStoreNotReady = 65;
inline constexpr int kTcpStoreBug = 60;
inline constexpr int kTransientRecv = 40;
}  // namespace priority

std::optional<Candidate> rule_rdzv_collision(const Context& c);
std::optional<Candidate> rule_port_conflict(const Context& c);
std::optional<Candidate> rule_name_resolution(const Context& c);
std::optional<Candidate> rule_broken_pipe(const Context& c);
std::optional<Candidate> rule_connect_timeout(const Context& c);
std::optional<Candidate> rule_straggler(const Context& c);
std::optional<Candidate> rule_store_not_ready(const Context& c);
std::optional<Candidate> rule_transient_recv(const Context& c);

Diagnosis diagnose(const TraceInputs& traces, const LogFacts& logs);

}  // namespace rdzvscope
