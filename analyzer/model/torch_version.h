// Which PyTorch the job ran (issue 32): the traces say it when the shim recorded it (the
// header's torch_version, read from the loaded package's version.py); else the logs, when a
// line printed it; else the logs' message styles allow a guess. The traces come first: they
// are what the processes really loaded, where a log may be of another run or environment.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rdzvscope {

struct Process;   // process_model.h
struct LogFacts;  // log_facts.h

struct TorchVersion {
  enum class Source { Traces, Logs, MessageStyle };
  std::string version;  // "2.13.0+cpu"; for MessageStyle a range (">=2.5")
  Source source = Source::Traces;
  // Traced processes that recorded another version than `version` (the most common one),
  // "1.13.0a0 (rank 3)": a job mixing installations.
  std::vector<std::string> others;

  // Whether `version` is an exact release (not a guessed range) no newer than major.minor.
  bool known_at_most(int major, int minor) const;
  // Whether it is an exact release newer than major.minor.
  bool known_newer_than(int major, int minor) const;
  // For people: "2.13.0+cpu", "2.13.0+cpu (also 1.13.0a0 (rank 3))",
  // ">=2.5 (guessed from message style)".
  std::string words() const;
};

// The version of the job's ranks, agents and store host as recorded in their traces; the most
// common one when they differ. nullopt when no trace recorded one.
std::optional<TorchVersion> traced_torch_version(const std::vector<Process>& processes);

// Traces, then the logs' printed version, then the message-style guess; nullopt when none.
std::optional<TorchVersion> find_torch_version(const std::vector<Process>& processes, const LogFacts& logs);

}  // namespace rdzvscope
