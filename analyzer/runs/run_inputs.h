// The inputs of `analyze --runs`: one directory per run, its trace files and logs found
// anywhere below it, and the run's id.
#pragma once

#include <string>
#include <vector>

#include "model/process_model.h"
#include "reader/error.h"

namespace rdzvscope {

struct RunDir {
  std::string path;
  std::vector<std::string> traces;  // every *.rzt below path, sorted
  std::vector<std::string> logs;    // every *.log below path, sorted
};

struct RunDirs {
  std::vector<RunDir> runs;
  std::vector<Error> errors;  // a path that is not a directory, or holds neither traces nor logs
};

// Each path is one run. A single path whose top level holds no trace or log file, and at
// least two of whose subdirectories hold trace files, is a directory of runs: it stands for
// its subdirectories, sorted by name. Never throws; symbolic links to directories are not
// followed, and the search stops 8 levels down.
RunDirs find_runs(const std::vector<std::string>& paths);

// Files below dir (recursively) whose names end in suffix, sorted.
std::vector<std::string> files_below(const std::string& dir, const std::string& suffix);

// The run's id: the TORCHELASTIC_RUN_ID or SLURM_JOB_ID most of its processes carry (for a
// torchrun agent, which has neither, the --rdzv-id of its command line; "none", torchrun's
// default, is no id), else the directory's name.
std::string run_id(const TraceInputs& traces, const std::string& path);

// Makes ids unique: a repeated id gets " (DIRNAME)" appended (retries in one Slurm
// allocation share SLURM_JOB_ID).
void disambiguate_ids(std::vector<std::string>& ids, const std::vector<std::string>& paths);

}  // namespace rdzvscope
