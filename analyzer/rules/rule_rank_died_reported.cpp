// rank_died from logs alone (issue 29): a process end that whoever reaped it reported (the
// shell's "Killed", the kernel's OOM killer, torch.multiprocessing's spawn, the old launcher's
// CalledProcessError; LogFacts::deaths). A process that ended so did not come late: it is gone,
// and what the others logged after it (their waits for its key, their connections to it reset)
// are consequences of its death (candidates_of in diagnose.cpp lets such a candidate go ahead
// of those symptoms' classes).
#include <algorithm>
#include <csignal>
#include <string>

#include "rules.h"

namespace rdzvscope {

namespace {

// A signal that no launcher sends to stop a worker and c10d never raises in its own process:
// SIGKILL (the OOM killer's, a scheduler's hard limit), SIGSEGV, SIGABRT, SIGBUS... torchrun and
// torch.multiprocessing stop the other workers with SIGTERM (SIGKILL only 30 s later), a user
// with SIGINT or SIGTERM: an end by those says the process was stopped, not that it died.
bool died_on_its_own_signal(const std::string& name) {
  return !name.empty() && name != "SIGTERM" && name != "SIGINT" && name != "SIGHUP";
}

// The exception the process died of: the first exception line after the report in the same
// file, within the traceback that torch.multiprocessing prints below "terminated with the
// following error" (a rendezvous error among events, any other among other_errors).
struct ItsException {
  const LogEvent* line = nullptr;
  bool rendezvous = false;  // a store / rendezvous failure: it died of one, it did not cause one
};

ItsException exception_after(const LogFacts& logs, const LogEvent& death) {
  constexpr std::uint64_t kTracebackLines = 200;
  ItsException out;
  auto consider = [&](const LogEvent& e, bool rendezvous) {
    if (e.file != death.file || e.line <= death.line || e.line - death.line > kTracebackLines) return;
    if (e.text.find("Traceback (most recent call last)") != std::string::npos) return;
    if (!out.line || e.line < out.line->line) out = {&e, rendezvous};
  };
  for (const LogEvent& e : logs.events) consider(e, true);
  for (const LogEvent& e : logs.other_errors)
    if (e.family == LogFamily::ErrorLine) consider(e, false);
  return out;
}

struct OwnDeath {
  const LogEvent* report = nullptr;
  ItsException exception;
};

// The first reported end that is a death of its own: a signal of its own, or an exception that
// is no rendezvous failure; an exit code alone (no exception shown) only where the logs hold
// no rendezvous error at all (else the process may have exited of one of them).
std::optional<OwnDeath> first_own_death(const LogFacts& logs) {
  for (const LogEvent& d : logs.deaths) {
    if (d.setting == "signal") {
      if (died_on_its_own_signal(d.setting_value)) return OwnDeath{&d, {}};
      continue;
    }
    const ItsException ex = d.setting_value == "exception" ? exception_after(logs, d) : ItsException{};
    if (ex.line && !ex.rendezvous) return OwnDeath{&d, ex};
    if (!ex.line && logs.events.empty()) return OwnDeath{&d, ex};
  }
  return std::nullopt;
}

std::string process_words(const LogEvent& d) {
  if (!d.died_process) return "a process";
  return "process " + std::to_string(*d.died_process) + " (its local rank: torch.multiprocessing's spawn index, "
         "the old launcher's --local_rank)";
}

std::string end_words(const LogEvent& d) {
  if (d.setting == "signal") return "was killed by " + d.setting_value;
  if (d.setting_value == "exception") return "ended with an exception";
  return "exited with code " + d.setting_value;
}

}  // namespace

std::optional<Candidate> rank_died_from_reported_deaths(const Context& c) {
  if (c.has_traces()) return std::nullopt;
  const auto own = first_own_death(c.logs);
  if (!own) return std::nullopt;
  const LogEvent& d = *own->report;
  const bool killed = d.setting == "signal";
  Candidate out;
  out.death_shown = true;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RankDied;
  v.cause = killed ? "killed" : "exited";
  v.confidence = "medium";
  const std::string exception =
      own->exception.line ? "; its exception: " + log_line_words(*own->exception.line) : std::string();
  v.summary = process_words(d) + " " + end_words(d) + " (" + d.reason + ", " + d.file + ":" + std::to_string(d.line) +
              ")" + exception +
              (killed ? ": a signal no launcher sends first and c10d never raises, so it died on its own"
                      : ": it died of its own error, not of the rendezvous") +
              "; a dead process is not late: the other ranks' errors (their waits for it, their connections to "
              "it reset) are consequences of its death";
  v.next_step = killed ? "find what killed it: `journalctl -k | grep -i -E 'oom|killed'` on its node (the OOM "
                         "killer, a scheduler's memory or time limit) around the time of the report"
                       : "read its traceback (above) and fix what it died of; the other ranks' errors follow from it";
  out.findings.push_back(log_finding(FailureClass::RankDied, d));
  if (own->exception.line) out.findings.push_back(log_finding(FailureClass::RankDied, *own->exception.line));
  return out;
}

}  // namespace rdzvscope
