#include "preflight/job_size.h"

#include <charconv>
#include <cstdlib>

namespace rdzvscope::preflight {

namespace {

std::optional<unsigned long> positive(const std::string& s) {
  unsigned long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

}  // namespace

JobSizeEnv job_size_env_from_process() {
  auto get = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v && *v ? std::optional<std::string>(v) : std::nullopt;
  };
  return JobSizeEnv{get("WORLD_SIZE"), get("PET_NNODES"), get("PET_NPROC_PER_NODE")};
}

RankCount rank_count(std::optional<unsigned long> option, const JobSizeEnv& env, unsigned nodes) {
  if (option) return RankCount{*option, "--ranks"};
  if (env.world_size) {
    if (const auto n = positive(*env.world_size)) return RankCount{*n, "WORLD_SIZE"};
  }
  if (env.pet_nnodes && env.pet_nproc_per_node) {
    const std::string& nn = *env.pet_nnodes;
    const auto colon = nn.find(':');
    const auto nodes_max = positive(colon == std::string::npos ? nn : nn.substr(colon + 1));
    const auto per_node = positive(*env.pet_nproc_per_node);  // "gpu", "auto": not known here
    // Each node's agent connects to the rendezvous store as well as its workers.
    if (nodes_max && per_node)
      return RankCount{*nodes_max * (*per_node + 1), "PET_NNODES x (PET_NPROC_PER_NODE + 1)"};
  }
  if (nodes > 0) return RankCount{nodes, "--world-size"};
  return RankCount{1, "default"};
}

}  // namespace rdzvscope::preflight
