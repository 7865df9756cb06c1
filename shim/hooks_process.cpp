// Process life: fork/vfork/posix_spawn, the exec family, exit/_exit/_Exit and the return
// from main; the signals a process sends (kill, killpg) and the children it reaps (waitpid,
// wait4, wait): how a launcher stopped its workers, and how each of them ended. None of these creates a trace file: a job script's sed/date/mkdir processes
// leave nothing behind; they are recorded only in a process that already traces.
#include <alloca.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "env_inject.h"
#include "events.h"
#include "guard.h"
#include "hook.h"
#include "real_calls.h"
#include "text.h"

extern char** environ;

using namespace rdzv;

namespace {

void record_proc(rdzv_kind kind, rdzv_op op, int64_t ret, int err, int child, const char* path,
                 int status = 0, uint16_t flags = 0) {
  EventHead head{static_cast<uint8_t>(kind), static_cast<uint8_t>(op), flags};
  head.ts_ns = mono_ns();
  head.ret = ret;
  head.err = err;
  if (Slot s = new_record(Create::OnlyIfOpen, head)) {
    s.rec->u.proc.child_pid = child;
    s.rec->u.proc.status = status;
    if (copy_cut(s.rec->u.proc.path, sizeof s.rec->u.proc.path, path))
      s.rec->flags |= RDZV_F_TRUNCATED;
    commit_record(s);
  }
}

int g_exit_recorded;

void record_exit(rdzv_op op, int status, uint16_t flags) {
  if (__atomic_exchange_n(&g_exit_recorded, 1, __ATOMIC_RELAXED)) return;
  if (!trace_is_open()) return;
  record_torch_version_once();
  record_snapshot(Create::OnlyIfOpen, RDZV_SNAP_EXIT);
  record_proc(RDZV_EV_PROC_EXIT, op, status, 0, -1, nullptr, status, flags);
}

// The environment to exec with, built on this frame's caller stack by the macro below.
#define RDZV_EXEC_ENV(envp, out_env)                                                        \
  char* const* out_env = (envp);                                                            \
  do {                                                                                      \
    long count_ = env_count(envp);                                                          \
    if (count_ >= 0 && count_ < 16384) {                                                    \
      char** slots_ = static_cast<char**>(alloca(sizeof(char*) * (count_ + kInjectedVars + 1))); \
      char* text_ = static_cast<char*>(alloca(kInjectTextSize));                            \
      Guard guard_;                                                                         \
      out_env = env_for_exec(envp, count_, slots_, text_);                                  \
    }                                                                                       \
  } while (0)

void before_exec(const char* path) {
  RecordScope scope;
  record_proc(RDZV_EV_EXEC, RDZV_OP_EXEC, 0, 0, -1, path);
}

// Right after the exec call returned (it failed): r and errno are the call's.
int after_failed_exec(const char* path, int r) {
  RecordScope scope;
  record_proc(RDZV_EV_EXEC, RDZV_OP_EXEC, r, scope.call_errno(), -1, path);
  return r;
}

// posix_spawn and posix_spawnp: same arguments, same recording; the child gets the
// environment with tracing put back (RDZV_EXEC_ENV).
int traced_spawn(real::posix_spawn_fn fn, rdzv_op op, pid_t* pid, const char* path,
                 const posix_spawn_file_actions_t* fa, const posix_spawnattr_t* attr,
                 char* const argv[], char* const envp[]) {
  if (in_guard() || !envp) return fn(pid, path, fa, attr, argv, envp);
  RDZV_EXEC_ENV(envp, env);
  pid_t child = -1;
  int r = fn(&child, path, fa, attr, argv, env);
  if (pid && r == 0) *pid = child;
  RecordScope scope;
  record_proc(RDZV_EV_SPAWN, op, r, r, r == 0 ? child : -1, path);
  return r;
}

// A signal sent (kill, killpg), recorded once the call returned: a signal that ends the sender
// itself (kill(getpid(), SIGKILL)) leaves no record, as a kill by anyone else would not.
int sent_signal(rdzv_op op, pid_t target, int sig, int r) {
  if (sig == 0 || in_guard()) return r;  // signal 0 only asks whether the target exists
  RecordScope scope;
  record_proc(RDZV_EV_SIGNAL, op, r, r < 0 ? scope.call_errno() : 0, target, nullptr, sig);
  return r;
}

// A child reaped: its pid and wait status (an exit or the signal that ended it; a child that
// only stopped or continued is not reaped).
pid_t reaped(rdzv_op op, pid_t r, int status) {
  if (r <= 0 || in_guard() || !(WIFEXITED(status) || WIFSIGNALED(status))) return r;
  RecordScope scope;
  record_proc(RDZV_EV_REAP, op, r, 0, r, nullptr, status);
  return r;
}

pid_t vfork_unavailable() {
  errno = ENOSYS;
  return -1;
}

}  // namespace

// The hooks, in the shim's one form (hook.h).
extern "C" {

RDZV_EXPORT pid_t fork(void) {
  pid_t r = real::fork()();
  if (r != 0 && !in_guard()) {  // the parent's side (the child starts afresh: lifecycle.cpp)
    RecordScope scope;
    record_proc(RDZV_EV_FORK, RDZV_OP_FORK, r, r < 0 ? scope.call_errno() : 0, r > 0 ? r : -1,
                nullptr);
  }
  return r;
}

// Called by the vfork trampoline (vfork_*.S) before it jumps to libc's vfork with the
// caller's stack untouched; a C wrapper cannot return twice from one frame. The child of a
// vfork shares our memory until it execs, so its exec is recorded in this file too.
__attribute__((visibility("hidden"))) void* rdzv_prepare_vfork(void) {
  if (!in_guard()) {
    RecordScope scope;
    record_proc(RDZV_EV_SPAWN, RDZV_OP_VFORK, 0, 0, -1, nullptr);
  }
  void* fn = reinterpret_cast<void*>(real::vfork());
  return fn ? fn : reinterpret_cast<void*>(&vfork_unavailable);
}

RDZV_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa,
                            const posix_spawnattr_t* attr, char* const argv[],
                            char* const envp[]) {
  return traced_spawn(real::posix_spawn(), RDZV_OP_POSIX_SPAWN, pid, path, fa, attr, argv, envp);
}

RDZV_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa,
                             const posix_spawnattr_t* attr, char* const argv[],
                             char* const envp[]) {
  return traced_spawn(real::posix_spawnp(), RDZV_OP_POSIX_SPAWNP, pid, file, fa, attr, argv,
                      envp);
}

RDZV_EXPORT int kill(pid_t pid, int sig) {
  return sent_signal(RDZV_OP_KILL, pid, sig, real::kill()(pid, sig));
}

RDZV_EXPORT int killpg(pid_t pgrp, int sig) {
  return sent_signal(RDZV_OP_KILLPG, pgrp, sig, real::killpg()(pgrp, sig));
}

RDZV_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  int own = 0;
  int* st = status ? status : &own;
  const pid_t r = real::waitpid()(pid, st, options);
  return reaped(RDZV_OP_WAITPID, r, *st);
}

RDZV_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  int own = 0;
  int* st = status ? status : &own;
  const pid_t r = real::wait4()(pid, st, options, usage);
  return reaped(RDZV_OP_WAIT4, r, *st);
}

RDZV_EXPORT pid_t wait(int* status) {
  int own = 0;
  int* st = status ? status : &own;
  const pid_t r = real::wait()(st);
  return reaped(RDZV_OP_WAIT, r, *st);
}

RDZV_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  if (in_guard()) return real::execve()(path, argv, envp);
  before_exec(path);
  RDZV_EXEC_ENV(envp, env);
  return after_failed_exec(path, real::execve()(path, argv, env));
}

RDZV_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (in_guard()) return real::execvpe()(file, argv, envp);
  before_exec(file);
  RDZV_EXEC_ENV(envp, env);
  return after_failed_exec(file, real::execvpe()(file, argv, env));
}

RDZV_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  if (in_guard()) return real::fexecve()(fd, argv, envp);
  before_exec("(fexecve)");
  RDZV_EXEC_ENV(envp, env);
  return after_failed_exec("(fexecve)", real::fexecve()(fd, argv, env));
}

// glibc's execv/execvp/execl* call its internal execve directly, so each is wrapped here.
RDZV_EXPORT int execv(const char* path, char* const argv[]) { return execve(path, argv, environ); }

RDZV_EXPORT int execvp(const char* file, char* const argv[]) {
  return execvpe(file, argv, environ);
}

#define RDZV_COLLECT_ARGS(first, argv)                                           \
  va_list ap_;                                                                   \
  va_start(ap_, first);                                                          \
  long argc_ = 1;                                                                \
  {                                                                              \
    va_list count_ap_;                                                           \
    va_copy(count_ap_, ap_);                                                     \
    while (va_arg(count_ap_, char*) != nullptr) ++argc_;                         \
    va_end(count_ap_);                                                           \
  }                                                                              \
  char** argv = static_cast<char**>(alloca(sizeof(char*) * (argc_ + 1)));        \
  argv[0] = const_cast<char*>(first);                                            \
  for (long i_ = 1; i_ <= argc_; ++i_) argv[i_] = va_arg(ap_, char*);

RDZV_EXPORT int execl(const char* path, const char* arg, ...) {
  RDZV_COLLECT_ARGS(arg, argv);
  va_end(ap_);
  return execve(path, argv, environ);
}

RDZV_EXPORT int execlp(const char* file, const char* arg, ...) {
  RDZV_COLLECT_ARGS(arg, argv);
  va_end(ap_);
  return execvpe(file, argv, environ);
}

RDZV_EXPORT int execle(const char* path, const char* arg, ...) {
  RDZV_COLLECT_ARGS(arg, argv);
  char* const* envp = va_arg(ap_, char* const*);
  va_end(ap_);
  return execve(path, argv, envp);
}

RDZV_EXPORT __attribute__((noreturn)) void exit(int status) {
  {
    RecordScope scope;
    record_exit(RDZV_OP_EXIT, status, 0);
  }
  real::exit()(status);
  __builtin_unreachable();
}

RDZV_EXPORT __attribute__((noreturn)) void _exit(int status) {
  if (!in_guard()) {
    RecordScope scope;
    record_exit(RDZV_OP_UNDERSCORE_EXIT, status, 0);
  }
  real::_exit()(status);
  __builtin_unreachable();
}

RDZV_EXPORT __attribute__((noreturn)) void _Exit(int status) {
  if (!in_guard()) {
    RecordScope scope;
    record_exit(RDZV_OP_UNDERSCORE_EXIT, status, 0);
  }
  real::_Exit()(status);
  __builtin_unreachable();
}

}  // extern "C"

// Returning from main reaches exit() inside libc, past our exit hook; wrapping main is how the
// status of such a process (a Python script that raised, say) still gets recorded.
namespace {
int (*g_real_main)(int, char**, char**);

int traced_main(int argc, char** argv, char** envp) {
  int status = g_real_main(argc, argv, envp);
  RecordScope scope;
  record_exit(RDZV_OP_EXIT, status, 0);
  return status;
}
}  // namespace

extern "C" RDZV_EXPORT int __libc_start_main(int (*main)(int, char**, char**), int argc,
                                             char** argv, void (*init)(void), void (*fini)(void),
                                             void (*rtld_fini)(void), void* stack_end) {
  g_real_main = main;
  return real::__libc_start_main()(traced_main, argc, argv, init, fini, rtld_fini, stack_end);
}

namespace rdzv {
// Called from the library destructor: a process whose exit we did not see (main returned in
// a program whose start we did not wrap) still gets an exit record, with unknown status.
void record_exit_at_unload() { record_exit(RDZV_OP_DESTRUCTOR, 0, RDZV_F_STATUS_UNKNOWN); }
}  // namespace rdzv
