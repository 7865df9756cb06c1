#include "preflight/job_size.h"

#include <charconv>
#include <cstdlib>
#include <strings.h>

#include "preflight/hello.h"
#include "preflight/hostlist.h"

namespace rdzvscope::preflight {

namespace {

std::optional<unsigned long> positive(const std::string& s) {
  unsigned long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

std::optional<std::string> get_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::optional<std::string>(v) : std::nullopt;
}

std::optional<unsigned> small_number(const std::string& s) {
  const auto v = positive(s);
  if (!v || *v > (1ul << 20)) return std::nullopt;
  return static_cast<unsigned>(*v);
}

std::string short_name(const std::string& h) { return h.substr(0, h.find('.')); }

}  // namespace

std::optional<unsigned> fixed_nnodes(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return small_number(text);
  const auto lo = small_number(text.substr(0, colon));
  const auto hi = small_number(text.substr(colon + 1));
  if (lo && hi && *lo == *hi) return lo;
  return std::nullopt;
}

NodeSetEnv node_set_env_from_process() {
  return NodeSetEnv{get_env("PET_NNODES"), get_env("SLURM_JOB_NODELIST")};
}

Result<NodeSet> node_set(std::optional<unsigned> world_size, const std::string& world_size_option,
                         const std::vector<std::string>& nodes, const NodeSetEnv& env) {
  NodeSet s;
  if (!nodes.empty()) {
    if (world_size && *world_size != nodes.size())
      return Error{"", world_size_option + " " + std::to_string(*world_size) + " but --nodes names " +
                           std::to_string(nodes.size()) + " node(s)",
                   std::nullopt};
    s.world_size = static_cast<unsigned>(nodes.size());
    s.world_size_source = "--nodes";
    s.names = nodes;
    s.names_source = "--nodes";
    return s;
  }
  if (world_size) {
    s.world_size = *world_size;
    s.world_size_source = world_size_option;
  } else if (env.pet_nnodes) {
    if (const auto n = fixed_nnodes(*env.pet_nnodes)) {
      s.world_size = *n;
      s.world_size_source = "PET_NNODES";
    } else {
      s.note = "PET_NNODES=" + *env.pet_nnodes + " is no fixed number of nodes: not used";
    }
  }
  if (env.slurm_job_nodelist) {
    auto names = expand_hostlist(*env.slurm_job_nodelist);
    if (!names) return Error{"SLURM_JOB_NODELIST", names.error().detail, std::nullopt};
    if (s.world_size && names.value().size() != s.world_size) {
      s.note = "SLURM_JOB_NODELIST names " + std::to_string(names.value().size()) +
               " node(s), the job " + std::to_string(s.world_size) + " (" + s.world_size_source +
               "): its names are not used";
    } else {
      if (!s.world_size) {
        s.world_size = static_cast<unsigned>(names.value().size());
        s.world_size_source = "SLURM_JOB_NODELIST";
      }
      s.names = std::move(names.value());
      s.names_source = "SLURM_JOB_NODELIST";
    }
  }
  return s;
}

NodeIdEnv node_id_env_from_process() {
  return NodeIdEnv{get_env("PET_NODE_RANK"), get_env("SLURM_NODEID"), get_env("GROUP_RANK")};
}

NodeId node_id(const NodeIdEnv& env, const std::string& hostname,
               const std::vector<std::string>& names) {
  const std::pair<const std::optional<std::string>*, const char*> vars[] = {
      {&env.pet_node_rank, "PET_NODE_RANK"}, {&env.slurm_nodeid, "SLURM_NODEID"},
      {&env.group_rank, "GROUP_RANK"}};
  for (const auto& [value, name] : vars) {
    if (!*value) continue;
    if (**value == "0") return NodeId{0u, name};
    if (const auto n = small_number(**value)) return NodeId{*n, name};
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (strcasecmp(names[i].c_str(), hostname.c_str()) == 0 ||
        strcasecmp(names[i].c_str(), short_name(hostname).c_str()) == 0)
      return NodeId{static_cast<unsigned>(i), "node list"};
  return NodeId{std::nullopt, ""};
}

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

JobKeyEnv job_key_env_from_process() {
  return JobKeyEnv{get_env("PET_RDZV_ID"), get_env("TORCHELASTIC_RUN_ID"), get_env("SLURM_JOB_ID")};
}

Result<JobKey> job_key(const std::optional<std::string>& option, const JobKeyEnv& env) {
  if (option) {
    if (option->empty() || option->size() > kMaxJobKey || sanitized_job(*option) != *option)
      return Error{"", "--job-id '" + sanitized_job(*option) + "': want 1 to " +
                           std::to_string(kMaxJobKey) + " printable characters without spaces",
                   std::nullopt};
    return JobKey{*option, "--job-id"};
  }
  const std::pair<const std::optional<std::string>*, const char*> vars[] = {
      {&env.pet_rdzv_id, "PET_RDZV_ID"},
      {&env.torchelastic_run_id, "TORCHELASTIC_RUN_ID"},
      {&env.slurm_job_id, "SLURM_JOB_ID"}};
  for (const auto& [value, name] : vars) {
    if (*value && !(*value)->empty() && **value != "none") return JobKey{sanitized_job(**value), name};
  }
  return JobKey{};
}

}  // namespace rdzvscope::preflight
