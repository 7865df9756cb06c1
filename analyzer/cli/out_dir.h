// The trace directory of `rdzvscope run`. Traces hold host names, command lines and
// addresses, so a directory we create is private to the user (0700).
#pragma once

#include <ctime>
#include <string>

#include "reader/error.h"

namespace rdzvscope::cli {

// "rdzvscope-<SLURM_JOB_ID>" inside a Slurm job (one directory per job, shared by its
// steps), else "rdzvscope-YYYYmmdd-HHMMSS" (local time).
std::string default_out_dir(const char* slurm_job_id, std::time_t now);

// Creates `dir` (and missing parents) with mode 0700, or checks that an existing one is a
// writable directory. Returns the absolute path.
Result<std::string> prepare_out_dir(const std::string& dir);

}  // namespace rdzvscope::cli
