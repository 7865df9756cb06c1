// Traces of several runs in one directory are read as one job. When its processes carry
// distinct run ids (TORCHELASTIC_RUN_ID / SLURM_JOB_ID) whose time spans do not overlap, they
// were retries one after the other, not a collision (two jobs at once on one store, which
// rule_rdzv_collision judges): the CLI says so and points at --runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/process_model.h"

namespace rdzvscope {

struct RunSpan {
  std::string id;
  std::int64_t first_ns = 0, last_ns = 0;  // earliest launch, latest event
  std::size_t processes = 0;
};

// The runs, by first launch, when there are two or more ids and no two spans overlap;
// empty otherwise (one run, runs at the same time, or processes without an id).
std::vector<RunSpan> sequential_runs(const TraceInputs& traces);

}  // namespace rdzvscope
