#include "supervise.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "model/endings.h"  // signal_name

namespace rdzvscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// SIGCHLD and every forwarded signal: the parent takes them with sigwaitinfo, never through
// a handler, so no signal can arrive between "is the child still there" and "forward it".
sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int s : kForwardedSignals) sigaddset(&set, s);
  return set;
}

// In the child: the parent's mask restored, then the command. An exec failure is written to
// the close-on-exec pipe, so the parent tells "could not start" from "exited 127".
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const sigset_t& original_mask, int error_pipe) {
  ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const int err = errno;
  [[maybe_unused]] const ssize_t n = ::write(error_pipe, &err, sizeof err);
  ::_exit(127);
}

// The errno of a failed exec, or 0 once the exec succeeded (the pipe closed on exec).
int exec_errno(int error_pipe) {
  int err = 0;
  ssize_t n;
  do n = ::read(error_pipe, &err, sizeof err);
  while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof err) ? err : 0;
}

// A signal the kernel generated for the terminal's foreground group (^C, ^\, a hangup) has
// reached the command already; one the command sent its parent is its own business.
bool should_forward(const siginfo_t& info, pid_t child) {
  if (info.si_code == SI_KERNEL) return false;
  return info.si_pid != child;
}

void record_end(ChildEnd& end, int status) {
  if (WIFSIGNALED(status)) {
    end.signaled = true;
    end.term_signal = WTERMSIG(status);
  } else {
    end.exit_code = WEXITSTATUS(status);
  }
}

}  // namespace

ChildEnd run_supervised(const std::vector<std::string>& argv) {
  ChildEnd end;
  const sigset_t watched = watched_signals();
  sigset_t original;
  ::sigprocmask(SIG_BLOCK, &watched, &original);
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    end.error = fmt::format("cannot create a pipe: {}", std::strerror(errno));
    end.exit_code = 127;
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    return end;
  }
  const Clock::time_point start = Clock::now();
  const pid_t child = ::fork();
  if (child == 0) exec_child(argv, original, error_pipe[1]);
  ::close(error_pipe[1]);
  if (child < 0) {
    end.error = fmt::format("cannot fork: {}", std::strerror(errno));
    end.exit_code = 127;
    ::close(error_pipe[0]);
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    return end;
  }
  const int exec_error = exec_errno(error_pipe[0]);
  ::close(error_pipe[0]);
  end.started = exec_error == 0;
  if (!end.started) end.error = fmt::format("{}: {}", argv[0], std::strerror(exec_error));

  for (;;) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&watched, &info);
    if (sig < 0) continue;  // EINTR: a signal outside the set (SIGCONT after a stop)
    if (sig == SIGCHLD) {
      int status = 0;
      if (::waitpid(child, &status, WNOHANG) == child) {
        record_end(end, status);
        break;
      }
      continue;
    }
    if (!should_forward(info, child)) continue;
    ::kill(child, sig);
    if (!end.first_forwarded) end.first_forwarded = ForwardedSignal{sig, info.si_pid, seconds_since(start)};
  }
  end.ran_s = seconds_since(start);
  ::sigprocmask(SIG_SETMASK, &original, nullptr);
  return end;
}

void end_like(const ChildEnd& end) {
  if (end.signaled) {
    // No core file of rdzvscope's own for a command that dumped one (or was meant to).
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(end.term_signal, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, end.term_signal);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(end.term_signal);
    ::_exit(128 + end.term_signal);  // a signal whose default action does not end a process
  }
  std::fflush(nullptr);
  ::_exit(end.exit_code);
}

std::string describe_end(const ChildEnd& end) {
  if (!end.started) return fmt::format("could not start ({})", end.error);
  std::string how = end.signaled ? fmt::format("was killed by {}", signal_name(end.term_signal))
                                 : fmt::format("exited with status {}", end.exit_code);
  how += fmt::format(" after {:.1f} s", end.ran_s);
  if (const auto& f = end.first_forwarded) {
    how += fmt::format("; rdzvscope passed on {}", signal_name(f->signal));
    if (f->sender > 0) how += fmt::format(" from pid {}", f->sender);
    how += fmt::format(" at {:.1f} s", f->after_s);
  }
  return how;
}

}  // namespace rdzvscope::cli
