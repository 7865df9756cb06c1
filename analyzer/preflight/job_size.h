// How many processes will connect to the store at once: what the somaxconn and open-file
// checks weigh the store host's limits against. Before the job starts only its environment
// can tell: WORLD_SIZE (a job script that sets it for init_process_group), else torchrun's
// PET_NNODES x (PET_NPROC_PER_NODE + 1) (the workers and each node's agent, NNODES "MIN:MAX" taken at
// MAX), else the number of nodes meeting (--world-size: one torchrun agent each).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reader/error.h"

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

// The nodes that take part in the meeting, and their names. In order: --nodes (names, N their
// count); else N from --world-size / --nnodes, else from PET_NNODES (torchrun's --nnodes as
// the job will see it: "N", or "MIN:MAX" with MIN == MAX); the names, when --nodes is not
// given, from SLURM_JOB_NODELIST (hostlist.h), which also sets N when nothing else did, and is
// set aside (note) when it names another number of nodes than N. 0 nodes: no meeting.
struct NodeSetEnv {
  std::optional<std::string> pet_nnodes, slurm_job_nodelist;
};
NodeSetEnv node_set_env_from_process();

struct NodeSet {
  unsigned world_size = 0;
  std::string world_size_source;  // "--world-size", "--nnodes", "--nodes", "PET_NNODES", ...
  std::vector<std::string> names;
  std::string names_source;  // "--nodes", "SLURM_JOB_NODELIST", "" when none
  std::string note;          // why an environment variable was not used, "" when none
};
// world_size: --world-size (or --nnodes, text "N" or "N:N"; `nnodes_option` names which).
Result<NodeSet> node_set(std::optional<unsigned> world_size, const std::string& world_size_option,
                         const std::vector<std::string>& nodes, const NodeSetEnv& env);

// "4", "4:4" -> 4; "1:4" (elastic), "0", "x" -> nothing.
std::optional<unsigned> fixed_nnodes(const std::string& text);

// Which node this is, for the report: torchrun's node rank (PET_NODE_RANK, as the agent will
// get --node-rank), else Slurm's (SLURM_NODEID), else GROUP_RANK (a worker's environment),
// else this host's place in the node list; the host name always.
struct NodeIdEnv {
  std::optional<std::string> pet_node_rank, slurm_nodeid, group_rank;
};
NodeIdEnv node_id_env_from_process();

struct NodeId {
  std::optional<unsigned> rank;
  std::string source;  // "PET_NODE_RANK", "SLURM_NODEID", "GROUP_RANK", "node list", ""
};
NodeId node_id(const NodeIdEnv& env, const std::string& hostname,
               const std::vector<std::string>& names);

// Which job this preflight is for, so that the meeting belongs to one job (hello.h): --job-id,
// else torchrun's rendezvous id (PET_RDZV_ID, what the agent will get as --rdzv-id; then
// TORCHELASTIC_RUN_ID, a worker's), else Slurm's job (SLURM_JOB_ID); none when nothing says.
// torchrun's default rendezvous id "none" is no job key: every job has it.
struct JobKeyEnv {
  std::optional<std::string> pet_rdzv_id, torchelastic_run_id, slurm_job_id;
};
JobKeyEnv job_key_env_from_process();

struct JobKey {
  std::string key;     // "" when none
  std::string source;  // "--job-id", "PET_RDZV_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", ""
};
// An --job-id that is empty, longer than kMaxJobKey bytes or not printable ASCII without
// spaces is an Error (one line); the environment's values are taken sanitized (hello.h).
Result<JobKey> job_key(const std::optional<std::string>& option, const JobKeyEnv& env);

}  // namespace rdzvscope::preflight
