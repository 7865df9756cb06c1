// How many processes will connect to the store at once: what the somaxconn and open-file
// checks weigh the store host's limits against. Before the job starts only its environment
// can tell: WORLD_SIZE (a job script that sets it for init_process_group), else torchrun's
// PET_NNODES x (PET_NPROC_PER_NODE + 1) (the workers and each node's agent, NNODES "MIN:MAX" taken at
// MAX), else the number of nodes meeting (--world-size: one torchrun agent each).
#pragma once

#include <optional>
#include <string>

namespace rdzvscope::preflight {

struct RankCount {
  unsigned long count = 1;
  std::string
      source;  // "--ranks", "WORLD_SIZE", "PET_NNODES x (PET_NPROC_PER_NODE + 1)", "--world-size", "default"
};

struct JobSizeEnv {
  std::optional<std::string> world_size, pet_nnodes, pet_nproc_per_node;
};
JobSizeEnv job_size_env_from_process();

RankCount rank_count(std::optional<unsigned long> option, const JobSizeEnv& env, unsigned nodes);

}  // namespace rdzvscope::preflight
