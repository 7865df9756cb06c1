#include "attempts.h"

#include <optional>

namespace rdzvscope {

namespace {

// The role a worker of an earlier attempt had before it was marked EarlierAttempt: the store
// host when it listened on a store port (a rank 0 hosting the workers' store, as with
// TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1), else a worker.
Role role_in_own_attempt(const Process& p) {
  for (const Event& e : p.events)
    if (e.kind == RDZV_EV_LISTEN && e.ret == 0 && e.on_store_socket()) return Role::StoreServer;
  return Role::Worker;
}

bool of_later_attempt(const Process& p, int attempt) {
  return p.rank >= 0 && p.role != Role::Agent && p.restart_count > attempt;
}

// When the next attempt's first worker was launched: where attempt `attempt` ended.
std::optional<std::int64_t> next_attempt_start(const TraceInputs& in, int attempt) {
  std::optional<std::int64_t> out;
  for (const Process& p : in.processes)
    if (p.rank >= 0 && p.role != Role::Agent && p.restart_count == attempt + 1 && (!out || p.launched_ns < *out))
      out = p.launched_ns;
  return out;
}

// An agent outlives the attempt: in its view it is seen until the attempt's end (its exit, of
// unknown status, there), so that what is measured to the end of the job (how long a late
// rank was still missing) is measured to the end of the attempt.
void end_agent_at(Process& agent, std::int64_t end_ns) {
  if (agent.exit_ns && *agent.exit_ns <= end_ns) return;
  std::erase_if(agent.events, [end_ns](const Event& e) { return e.wall_ns >= end_ns; });
  agent.exit_ns = end_ns;
  agent.exit_status.reset();
}

}  // namespace

TraceInputs attempt_view(const TraceInputs& in, int attempt) {
  TraceInputs out = in;  // whole, so that what is read beside the processes stays as it was
  out.attempts = attempt + 1;
  std::erase_if(out.processes, [attempt](const Process& p) { return of_later_attempt(p, attempt); });
  const auto end = next_attempt_start(in, attempt);
  for (Process& p : out.processes) {
    if (p.role == Role::EarlierAttempt && p.restart_count == attempt) p.role = role_in_own_attempt(p);
    if (p.role == Role::Agent && end) end_agent_at(p, *end);
  }
  return out;
}

}  // namespace rdzvscope
