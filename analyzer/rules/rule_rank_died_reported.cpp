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
// SIGKILL (the OOM killer's, a scheduler's hard limit), SIGSEGV, SIGBUS... torchrun and
// torch.multiprocessing stop the other workers with SIGTERM (SIGKILL only 30 s later), a user
// with SIGINT or SIGTERM: an end by those says the process was stopped, not that it died.
// SIGABRT neither: NCCL's watchdog aborts a rank whose collective timed out, a rank that waited.
bool died_on_its_own_signal(const std::string& name) {
  return !name.empty() && name != "SIGTERM" && name != "SIGINT" && name != "SIGHUP" && name != "SIGABRT";
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
  // DeepSpeed's launcher killing its workers says a worker ended non-zero without its status;
  // the launcher's "exits with return code = N" line says it, where the log has it.
  const bool status_known = std::any_of(logs.deaths.begin(), logs.deaths.end(), [](const LogEvent& d) {
    return d.setting_value != "nonzero";
  });
  for (const LogEvent& d : logs.deaths) {
    if (d.setting_value == "nonzero" && status_known) continue;
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

// The reporters name a worker by its local rank (torch.multiprocessing's spawn index, the old
// and DeepSpeed's launchers' --local_rank, torchrun's local_rank), never by its global rank.
std::string process_words(const LogEvent& d) {
  if (!d.died_process) return "a process";
  return "process " + std::to_string(*d.died_process) + " (its local rank on its node)";
}

// A reporter that says the process was killed for memory (the kernel's OOM killer, Ray's
// memory monitor).
bool killed_for_memory(const LogEvent& d) {
  return d.reason.find("OOM") != std::string::npos || d.reason.find("memory") != std::string::npos;
}

std::string end_words(const LogEvent& d) {
  if (d.setting == "signal") return "was killed by " + d.setting_value;
  if (d.setting_value == "exception") return "ended with an exception";
  if (d.setting_value == "nonzero")
    return "ended with a non-zero status (DeepSpeed's launcher then killed its workers; the launcher "
           "does the same when it is itself stopped, by Ctrl-C or a scheduler's SIGTERM)";
  return "exited with code " + d.setting_value;
}

// An exception line of a known rank (its prefix or its file): not gloo's or NCCL's transport
// lines, not an NCCL warning, not a traceback header, not C++'s terminate (the NCCL watchdog's
// abort of a rank that waited).
bool is_own_exception_of_a_rank(const LogEvent& e) {
  return e.family == LogFamily::ErrorLine && e.rank >= 0 && e.text.find("NCCL") == std::string::npos &&
         e.text.find("Traceback (most recent call last)") == std::string::npos &&
         e.text.find("terminate called") == std::string::npos;
}

// A worker's own exception and the others' rendezvous errors: a rank whose lines raise an
// exception that no rendezvous family matches, and which logs no rendezvous error of its own,
// while other ranks do (their waits for it, their connections to it): an uncaught exception
// ends a Python process, so that rank died of it and the others' errors followed. One such rank
// only; two are two crashes the logs cannot order.
std::optional<OwnDeath> rank_raised_while_others_waited(const LogFacts& logs) {
  const LogEvent* raised = nullptr;
  for (const LogEvent& e : logs.other_errors) {
    if (!is_own_exception_of_a_rank(e)) continue;
    if (raised && raised->rank != e.rank) return std::nullopt;
    if (!raised) raised = &e;
  }
  if (!raised) return std::nullopt;
  bool others_failed = false;
  for (const LogEvent& e : logs.events) {
    if (e.rank == raised->rank) return std::nullopt;  // it had a rendezvous error of its own
    others_failed = others_failed || e.rank >= 0;
  }
  if (!others_failed) return std::nullopt;
  return OwnDeath{raised, {raised, false}};
}

// THC's failed-check line is printed just before the RuntimeError it raises ("cuda runtime
// error (N) : <what>"): one failure, in two lines.
bool is_thc_check(const LogEvent& e) { return e.text.find("THCudaCheck FAIL") != std::string::npos; }

// An exception that a process raises of its own resources or code, never of a peer or of the
// network: CUDA's errors on its own device (a GPU index past the visible ones, its memory),
// host memory, a module or file it cannot find, its own code's syntax and names. Any other
// exception may be a distributed failure in words no family knows (a collective mismatch, an
// interface gloo cannot find, a framework's barrier that gave up on other ranks): not this.
bool is_process_local_exception(const LogEvent& e) {
  if (e.family != LogFamily::ErrorLine) return false;
  auto has = [&](const char* w) { return e.text.find(w) != std::string::npos; };
  if (has("NCCL") || has("nccl") || has("gloo") || has("Gloo") || has("Dist") || has("torch.distributed") ||
      has("rank"))
    return false;
  return has("CUDA out of memory") || has("OutOfMemoryError") || has("CUDA error") || has("cuda runtime error") ||
         is_thc_check(e) ||
         has("MemoryError") || has("ModuleNotFoundError") || has("ImportError") || has("FileNotFoundError") ||
         has("SyntaxError") || has("NameError");
}

// A process-local exception and nothing else failing: no rendezvous error, no transport line,
// no other exception, and one text (several ranks may print it: each raised the same). An
// uncaught exception ends a Python process, and a distributed job cannot go on without any of
// its ranks: the job died of it. nullptr when anything else failed or two exceptions differ.
const LogEvent* raised_alone(const LogFacts& logs) {
  if (logs.any_rendezvous_error()) return nullptr;
  const LogEvent* raised = nullptr;
  const LogEvent* thc = nullptr;  // stands for the exception when the excerpt lost it
  for (const LogEvent& e : logs.other_errors) {
    if (e.family != LogFamily::ErrorLine) return nullptr;  // a transport line: not this
    if (e.text.find("Traceback (most recent call last)") != std::string::npos ||
        e.text.find("ChildFailedError") != std::string::npos)
      continue;
    if (!is_process_local_exception(e)) return nullptr;
    const LogEvent*& same = is_thc_check(e) ? thc : raised;
    if (same && same->text != e.text) return nullptr;
    if (!same) same = &e;
  }
  return raised ? raised : thc;
}

// The hint a well-known own exception carries for a distributed job.
std::string exception_hint(const LogEvent& raised) {
  // torch.cuda.set_device(local_rank) with a local rank past the GPUs the process sees: more
  // workers on the node than visible GPUs.
  if (raised.text.find("invalid device ordinal") != std::string::npos)
    return "; `invalid device ordinal` is a GPU index past the GPUs the process sees: a launcher starting more "
           "workers on the node than it has visible GPUs (--nproc-per-node against CUDA_VISIBLE_DEVICES and "
           "`nvidia-smi -L`) is the usual cause";
  return "";
}

// A death the logs show by an exception, not by the process's end: rank_died, exited, low.
Candidate raised_candidate() {
  Candidate out;
  out.death_shown = true;
  out.verdict.cls = FailureClass::RankDied;
  out.verdict.cause = "exited";
  out.verdict.confidence = "low";
  return out;
}

// raised_alone's verdict: low, for the logs show the exception, not the end of the process.
Candidate raised_alone_words(const LogEvent& raised) {
  Candidate out = raised_candidate();
  Verdict& v = out.verdict;
  if (raised.rank >= 0) v.initiating_rank = raised.rank;
  v.summary = std::string(raised.rank >= 0 ? "rank " + std::to_string(raised.rank) : std::string("a process")) +
              " raised an exception that is no rendezvous error (" + log_line_words(raised) +
              ") and nothing else in the logs failed: an uncaught exception ends its process, and the job cannot "
              "go on without it, so it died of it";
  v.next_step = "read its traceback and fix what it raised" + exception_hint(raised) +
                "; its exit status (the launcher's summary) would confirm that it ended there";
  out.findings.push_back(log_finding(FailureClass::RankDied, raised));
  return out;
}

// rank_raised_while_others_waited's verdict: low, since the logs show the exception, not the
// end of the process (a caught exception that was only logged reads the same).
Candidate raised_words(const Context& c, const LogEvent& raised) {
  std::vector<int> others;
  for (const LogEvent& e : c.logs.events)
    if (e.rank >= 0 && std::find(others.begin(), others.end(), e.rank) == others.end()) others.push_back(e.rank);
  std::sort(others.begin(), others.end());
  Candidate out = raised_candidate();
  Verdict& v = out.verdict;
  v.initiating_rank = raised.rank;
  v.summary = "rank " + std::to_string(raised.rank) + " raised an exception that is no rendezvous error (" +
              log_line_words(raised) + ") and logged no rendezvous error of its own, while rank(s) " +
              rank_list(others) + " failed on the store or in a collective: an uncaught exception ends its process, "
              "so it most likely died of it and the others' errors followed (a dead rank is not late)";
  v.next_step = "read rank " + std::to_string(raised.rank) + "'s traceback and fix what it died of; its exit status "
                "(the launcher's summary) would confirm that it ended there";
  out.findings.push_back(log_finding(FailureClass::RankDied, raised));
  return out;
}

// SIGBUS is a touch of a mapped page with nothing behind it; in a container that is most often
// /dev/shm full (a tmpfs of 64 MB under docker's default), where NCCL and the data loaders'
// workers map their shared buffers.
constexpr const char* kSigbusNextStep =
    "SIGBUS is a mapped page with nothing behind it, most often a full /dev/shm (docker gives 64 MB unless "
    "told otherwise; NCCL and the data loaders' workers map their buffers there): `df -h /dev/shm` in the "
    "job's container, then --shm-size or --ipc=host (or fewer data-loader workers)";

// The verdict on a reported end: medium, the report and the exception it died of.
Candidate reported_words(const OwnDeath& own) {
  const LogEvent& d = *own.report;
  const bool killed = d.setting == "signal";
  Candidate out;
  out.death_shown = true;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RankDied;
  v.cause = killed ? "killed" : "exited";
  // A launcher killing its workers without the status: a worker's end, or the launcher's own.
  v.confidence = d.setting_value == "nonzero" ? "low" : "medium";
  const std::string exception =
      own.exception.line ? "; its exception: " + log_line_words(*own.exception.line) : std::string();
  v.summary = process_words(d) + " " + end_words(d) + " (" + d.reason + ", " + d.file + ":" + std::to_string(d.line) +
              ")" + exception +
              (killed ? ": a signal no launcher sends first and c10d never raises, so it died on its own"
                      : ": it died of its own error, not of the rendezvous") +
              "; a dead process is not late: the other ranks' errors (their waits for it, their connections to "
              "it reset) are consequences of its death";
  v.next_step = killed && killed_for_memory(d)
                    ? "its node ran out of memory: find what grew (host memory of the data loaders, a checkpoint "
                      "loaded on every rank, caches), lower it or give the job more memory; "
                      "`journalctl -k | grep -i -E 'oom|killed'` on that node shows the kernel's side"
                : killed && d.setting_value == "SIGBUS" ? kSigbusNextStep
                : killed ? "find what killed it: `journalctl -k | grep -i -E 'oom|killed'` on its node (the OOM "
                         "killer, a scheduler's memory or time limit) around the time of the report"
                       : "read its traceback (above) and fix what it died of; the other ranks' errors follow from it";
  out.findings.push_back(log_finding(FailureClass::RankDied, d));
  if (own.exception.line) out.findings.push_back(log_finding(FailureClass::RankDied, *own.exception.line));
  return out;
}

// The survivors' side of a death, where the dead process printed nothing: gloo and NCCL close
// a rank's peer connections only when the process at the other end ends (its exit closes its
// sockets; the kernel resets what is still in flight) or when that process gave up first on a
// timeout of its own, and a timeout prints its line (gloo's "Timed out waiting", NCCL's
// watchdog, the store's). With no such line and no store error anywhere, the process at the
// other end most likely died: rank_died, low, with no rank (the line names an address, not a
// rank), and a peer that timed out first as the runner-up. The first such line, or nullptr.
const LogEvent* peer_went_away_without_a_timeout(const LogFacts& logs) {
  if (logs.any_rendezvous_error()) return nullptr;
  const LogEvent* first = nullptr;
  for (const LogEvent& e : logs.other_errors)
    if (says_peer_went_away(e) && (!first || e.file < first->file || (e.file == first->file && e.line < first->line)))
      first = &e;
  return first;
}

Candidate peer_gone_words(const LogEvent& line) {
  const LogEvent* first = &line;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RankDied;
  v.cause = "peer_gone";
  v.confidence = "low";
  v.summary = "a peer connection of the process group was closed from its other end (" + log_line_words(*first) +
              ") and no log line shows a timeout or a store error: gloo and NCCL lose a peer connection when the "
              "process at its other end ends, so that process most likely died (its own log, or the launcher's "
              "report of its exit, would say how); the errors here are consequences of its death";
  v.next_step = "find the process at the other end of that connection (the address in the line names its host) and "
                "read how it ended: its own log, the launcher's summary, `journalctl -k | grep -i -E 'oom|killed'` "
                "on its node";
  Finding seen = log_finding(FailureClass::RankDied, *first);
  seen.rank.reset();  // the line's rank is a survivor's, not the dead one's
  out.findings.push_back(seen);
  out.alternatives.push_back({FailureClass::StragglerTimeout, std::nullopt,
                              "a peer that gave up waiting first (a timeout of its own) closes its connections too",
                              "that peer's own log: a timeout line there, or its exit status"});
  return out;
}

}  // namespace

std::optional<Candidate> rank_died_from_reported_deaths(const Context& c) {
  if (c.has_traces()) return std::nullopt;
  auto own = first_own_death(c.logs);
  if (!own) own = rank_raised_while_others_waited(c.logs);
  if (!own) {
    if (const LogEvent* line = peer_went_away_without_a_timeout(c.logs)) return peer_gone_words(*line);
    if (const LogEvent* raised = raised_alone(c.logs)) return raised_alone_words(*raised);
    return std::nullopt;
  }
  if (own->report->family == LogFamily::ErrorLine) return raised_words(c, *own->report);
  return reported_words(*own);
}

}  // namespace rdzvscope
