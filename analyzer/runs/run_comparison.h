// Several runs of one job (retries), each diagnosed on its own, then compared: did the failure
// stay on one node (that node's configuration), on one rank, or move from run to run (the
// TCPStore bug of PyTorch <= 2.7, or a transient)? Whether the failing rank is random, tied to
// a node, or different each run needs more than one run to answer (docs/commands.md: --runs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/diagnosis.h"

namespace rdzvscope {

// One analyzed run: its id (TORCHELASTIC_RUN_ID / SLURM_JOB_ID, else the directory name), the
// directory it came from, and its diagnosis.
struct RunResult {
  std::string id;
  std::string path;
  Diagnosis diagnosis;
  // What rdzvscope preflight said before this run's job started, read by the caller from the
  // run's directory (preflight/results.h): one line, "" when it left no report; and whether a
  // node could not rendezvous then (the run is marked: its failure was foretold).
  std::string preflight = {};
  bool preflight_failed = false;
};

// What failed in one run, read off its diagnosis.
struct RunOutcome {
  std::vector<int> failed_ranks;
  std::vector<std::string> failed_hosts;    // hosts of the failed ranks, sorted, unique
  std::optional<double> seconds_to_failure;  // launch to the first failure
  bool multi_host = false;                   // its ranks ran on more than one host
};
RunOutcome outcome_of(const Diagnosis& d);

// The patterns, in the JSON's comparison.pattern.
namespace pattern {
inline constexpr const char* kSingleRun = "single_run";
inline constexpr const char* kAllHealthy = "all_healthy";
inline constexpr const char* kMixedClasses = "mixed_classes";
inline constexpr const char* kSameHost = "same_host";
inline constexpr const char* kSameRank = "same_rank";
inline constexpr const char* kMoving = "moving";
inline constexpr const char* kSameClass = "same_class";  // same class, no initiating rank to compare
}  // namespace pattern

struct RunComparison {
  std::string pattern;
  std::optional<FailureClass> cls;  // the class every run shares, else nullopt
  std::string summary;             // one sentence, with the run ids
  std::string next_step;
  std::vector<RunOutcome> outcomes;  // per run, in the order of the runs
};

// Needs at least one run; with none, pattern single_run and a summary that says so.
RunComparison compare_runs(const std::vector<RunResult>& runs);

}  // namespace rdzvscope
