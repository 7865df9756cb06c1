// `rdzvscope run --verdict`: run the command as a child instead of becoming it, so that
// something is left to speak when it ends. The parent forwards the signals a scheduler sends
// (Slurm's scancel and time limit, Kubernetes' pod deletion, kill(1)) and reports how the
// child ended; the caller then analyzes the traces and gives the command's own status back.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <optional>
#include <string>
#include <vector>

namespace rdzvscope::cli {

// The signals forwarded to the command: what schedulers and shells send to end or poke a job.
inline constexpr int kForwardedSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

// A signal the parent received from another process and passed on.
struct ForwardedSignal {
  int signal = 0;
  pid_t sender = 0;          // 0 when the kernel did not say
  double after_s = 0;        // seconds after the command started
};

struct ChildEnd {
  bool started = false;           // false: exec failed (exit_code is 127, error says why)
  std::string error;
  bool signaled = false;          // ended by a signal (term_signal), else exited (exit_code)
  int exit_code = 0;
  int term_signal = 0;
  double ran_s = 0;               // how long it ran
  std::optional<ForwardedSignal> first_forwarded;  // the first signal passed on, if any

  bool failed() const { return signaled || exit_code != 0; }
};

// Runs argv as a child in this process group, forwarding kForwardedSignals that another
// process sent (a terminal's ^C already reaches the whole foreground group, so signals the
// kernel generated are not sent twice), and waits for it to end.
ChildEnd run_supervised(const std::vector<std::string>& argv);

// Ends this process as the child ended: the same exit code, or the same signal re-raised
// (with its default action) so that the shell and the scheduler see what they would have
// seen without rdzvscope in between.
[[noreturn]] void end_like(const ChildEnd& end);

// "exited with status 1", "was killed by SIGKILL", "was ended by SIGTERM (sent by pid 812 and
// forwarded to it 25.0 s after it started)".
std::string describe_end(const ChildEnd& end);

}  // namespace rdzvscope::cli
