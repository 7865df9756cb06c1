// One rule per failure class (rule_<class>.cpp). Each looks at the whole context and answers
// with a candidate verdict or nothing; diagnose() keeps the one whose class has the highest
// precedence in the registry (class_registry.h).
#pragma once

#include <optional>

#include "model/context.h"

namespace rdzvscope {

std::optional<Candidate> rule_rdzv_collision(const Context& c);
std::optional<Candidate> rule_port_conflict(const Context& c);
std::optional<Candidate> rule_name_resolution(const Context& c);
std::optional<Candidate> rule_config_mismatch(const Context& c);
std::optional<Candidate> rule_store_unreachable(const Context& c);
std::optional<Candidate> rule_broken_pipe(const Context& c);
std::optional<Candidate> rule_connect_timeout(const Context& c);
std::optional<Candidate> rule_straggler(const Context& c);
std::optional<Candidate> rule_store_not_ready(const Context& c);
std::optional<Candidate> rule_transient_recv(const Context& c);
std::optional<Candidate> rule_stale_peer_address(const Context& c);
std::optional<Candidate> rule_rank_died(const Context& c);
std::optional<Candidate> rule_store_unresponsive(const Context& c);
// rule_straggler's case of a job ended while the others still waited on the store for a rank
// that never came, before any timeout fired (rule_straggler_inflight.cpp).
std::optional<Candidate> straggler_from_calls_in_flight(const Context& c);
// rule_straggler's part after the rendezvous: a rank that never entered the first collective
// (rule_straggler_collective.cpp).
std::optional<Candidate> straggler_at_first_collective(const Context& c);
// rule_straggler's log-only cases where no rank's line says it timed out waiting for another
// (rule_straggler_unarrived.cpp, issue 29): clients that waited out their connect timeout on a
// loopback store (its host, rank 0, late), and ranks that never announced init_process_group.
std::optional<Candidate> straggler_store_host_late(const Context& c);
std::optional<Candidate> straggler_never_announced(const Context& c);
// And tracebacks out of main_process_first's entry: replicas that waited for the main process.
std::optional<Candidate> straggler_main_process_first(const Context& c);
// The same from PyTorch's Flight Recorder dumps where the traces do not show it (NCCL's own
// transports, no trace at all): the collective where the dumped ranks part.
std::optional<Candidate> straggler_from_flight_recorder(const Context& c);
// rule_store_unreachable's and rule_connect_timeout's case of a rank still blocked in a store
// connect when the job was ended, the others at the store or not (rule_connect_inflight.cpp).
std::optional<Candidate> store_unreachable_from_calls_in_flight(const Context& c);

// The ranks of LogFacts::ranks_twice that nobody announced, as the end of a summary:
// ", and rank(s) 4-7 never came, so the rendezvous could not complete", "" when none is missing.
// rule_rdzv_collision (more announcements than the world) and rule_config_mismatch (no more)
// both say it.
std::string ranks_never_came_words(const LogFacts::RanksTwice& t);
std::optional<Candidate> connect_timeout_from_calls_in_flight(const Context& c);
// rule_rank_died's case of a process end the shell, the kernel, torch.multiprocessing or the
// old launcher reported in the logs (rule_rank_died_reported.cpp).
std::optional<Candidate> rank_died_from_reported_deaths(const Context& c);
// rule_config_mismatch's case of a launcher environment missing or out of range in the logs
// (rule_config_launcher_env.cpp).
std::optional<Candidate> config_mismatch_from_launcher_env(const Context& c);

// The verdict on one model (Context: the facts derived once from the traces and logs). The
// reports that need more than the Diagnosis (timeline, markdown) take the same model, so
// that nothing is derived twice.
Diagnosis diagnose(const Context& model);
// The same, for callers that need nothing but the Diagnosis (--runs, tests).
Diagnosis diagnose(const TraceInputs& traces, const LogFacts& logs);

}  // namespace rdzvscope
