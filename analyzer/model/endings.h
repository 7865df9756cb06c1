// How each traced process ended, from what the traces can show: its own exit record, its
// parent's reap record (the exit status or the signal waitpid gave), the signals other traced
// processes sent it (a torchrun agent stopping its workers), and, for a process that vanished
// (killed by a signal: no record of its own), the moment another process read the end of one
// of its store connections (or of its process group's pairs, issue 28) that it never closed itself: the kernel closes a dead process's
// sockets, so it was dead by then.
//
// On these: a *dead* rank is one that ended on its own (an exit with a non-zero status, a
// signal nobody traced sent) without a rendezvous error of its own; the first of them, when
// the others were still alive after it and failed later, is where the failure began
// (Context::first_death; docs/classes.md, "Dead ranks").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel_log.h"
#include "process_model.h"

namespace rdzvscope {

struct ProcessFacts;

struct Ending {
  enum class How {
    Exited,    // its own exit record (or its parent's reap of an exit)
    Signaled,  // its parent's reap record: ended by a signal
    Vanished,  // no exit record and no reap: killed by a signal, or still running
  };
  How how = How::Vanished;
  std::optional<int> status;  // Exited: the exit status (nullopt: not known)
  int signal = 0;             // Signaled: the signal that ended it
  std::int64_t last_seen_ns = 0;  // its last record: it was alive until then
  // When it was surely over: its exit record, else the earlier of its parent's reap and the
  // first read of the end of one of its store connections by another process (hangup_ns).
  // nullopt: not known.
  std::optional<std::int64_t> over_ns;
  std::optional<std::int64_t> reaped_ns;  // its parent's reap record, when there is one
  // attach recorded its death by a signal (a PROC_EXIT with RDZV_F_SIGNALED): when, and the
  // signal. How it is judged does not change (no exit: Vanished unless a reap says more, as
  // the shim's file of the same death); its words say what attach saw.
  std::optional<std::int64_t> killed_seen_ns;
  int killed_seen_signal = 0;
  // Vanished: another process (hangup_seen_by) read the end of its store connection at
  // hangup_ns (0 bytes, or a reset), and it had recorded no close of that socket.
  // Also set for a process that exited: its sockets are closed at its exit as well.
  std::optional<std::int64_t> hangup_ns;
  const Process* hangup_seen_by = nullptr;
  const Event* hangup_event = nullptr;  // the read, in hangup_seen_by's events
  // The first signal a traced process sent it (kill, or killpg of its process group) before
  // it was over, and who sent it: its launcher stopping it.
  const Process* signalled_by = nullptr;
  int sent_signal = 0;
  std::int64_t sent_ns = 0;

  // The kernel's log says its OOM killer chose it (kernel_log.h): only when the analysis ran
  // on its node, in the boot it ran in.
  std::optional<OomKill> oom_kill;

  // It did not exit 0: a non-zero or unknown-failure exit, a signal, or it vanished.
  bool failed() const { return how != How::Exited || (status && *status != 0); }
  bool stopped() const { return signalled_by != nullptr; }
};

// One Ending per fact, in the same order.
std::vector<Ending> find_endings(const std::vector<ProcessFacts>& facts, const TraceInputs& traces);

// "SIGTERM", "SIGKILL", "signal 42".
std::string signal_name(int sig);

}  // namespace rdzvscope
