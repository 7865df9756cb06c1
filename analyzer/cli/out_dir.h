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
// writable directory. Returns the absolute path. A directory with placeholders (%h, %j, %Y,
// %m, %d: RDZVSCOPE_DIR's, see recorder_core.h) is prepared up to its first placeholder, and
// returned with the placeholders left for each traced process to expand.
Result<std::string> prepare_out_dir(const std::string& dir);

// The placeholders expanded as a process on this host would expand them now (attach, which
// writes every process's file itself).
std::string expand_out_dir(const std::string& pattern);

// The directory that holds this job's traces on every host, for a reader on this host: the
// pattern cut before its first component that names the host (%h: each host writes its own
// directory below it), the other placeholders expanded as here, now. "/s/%j/%h" -> "/s/31".
std::string job_trace_root(const std::string& pattern);

}  // namespace rdzvscope::cli
