// config_mismatch from logs alone (issue 29): the launcher's environment was missing or does
// not add up. env:// rendezvous (init_process_group's default) reads RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT, which a launcher (torchrun, torch.distributed.launch, a
// scheduler's wrapper) sets for each worker; a process started without it, or whose
// environment lost them, stops at the first one missing ("environment variable X expected, but
// not set", or a script's own KeyError on it). A RANK at or past WORLD_SIZE is refused by the
// backend that sizes its world ("rank < size" in gloo, "Invalid rank requested" in NCCL): the
// ranks' settings disagree with the world they were given.
#include "rules.h"

namespace rdzvscope {

namespace {

// A config_mismatch candidate of one log line: its cause, its confidence, the line's rank.
Candidate from_line(const LogEvent& e, const char* cause, const char* confidence) {
  Candidate out;
  out.verdict.cls = FailureClass::ConfigMismatch;
  out.verdict.cause = cause;
  out.verdict.confidence = confidence;
  if (auto r = rank_of(e)) out.verdict.initiating_rank = r;
  out.findings.push_back(log_finding(FailureClass::ConfigMismatch, e));
  return out;
}

Candidate missing_variable(const LogEvent& e) {
  Candidate out = from_line(e, "launcher_env", "high");
  Verdict& v = out.verdict;
  const std::string var = e.setting_value.empty() ? std::string("a launcher variable") : e.setting_value;
  v.summary = "the process was started without the launcher's environment: " + var +
              " was not set (env:// rendezvous and scripts written for torchrun read RANK, LOCAL_RANK, WORLD_SIZE, "
              "MASTER_ADDR and MASTER_PORT, which the launcher sets for each worker)";
  v.next_step = "start it with torchrun (or set " + var +
                " for every rank: the job script, the scheduler's wrapper, a container that does not pass the "
                "environment through)";
  return out;
}

Candidate rank_past_world(const LogEvent& e) {
  Candidate out = from_line(e, "rank", "medium");
  Verdict& v = out.verdict;
  v.summary = "a rank at or past the world size was refused by the backend (" + e.text.substr(0, 160) +
              "): RANK (or the node rank times the processes per node) and WORLD_SIZE of this job disagree";
  v.next_step = "compare RANK / --node_rank and WORLD_SIZE / --nnodes x --nproc_per_node on every node: ranks must "
                "run 0 to WORLD_SIZE-1";
  return out;
}

}  // namespace

std::optional<Candidate> config_mismatch_from_launcher_env(const Context& c) {
  if (c.has_traces()) return std::nullopt;
  for (const LogEvent* e : c.logs.of({LogFamily::LauncherEnvMissing, LogFamily::RankOutOfRange}))
    return e->family == LogFamily::LauncherEnvMissing ? missing_variable(*e) : rank_past_world(*e);
  return std::nullopt;
}

}  // namespace rdzvscope
