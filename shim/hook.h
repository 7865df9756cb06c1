// How every hook of the shim is written (hooks_*.cpp):
//
//   extern "C" {
//   RDZV_EXPORT int connect(int fd, const struct sockaddr* addr, socklen_t len) {
//     auto fn = real::connect();                        // libc's, real_calls.h
//     if (in_guard() || <not ours>) return fn(...);     // our own calls go straight through
//     int r = fn(...);                                  // the real call, always made once
//     if (<worth recording>) {
//       RecordScope scope;                              // errno kept, guard held
//       record_...(...);
//     }
//     return r;                                         // the caller sees libc's result
//   }
//   }
//
// The hot I/O entry points (send, recv, read, write... hooks_io.cpp) take the same steps
// through one macro whose exported part is a leaf that tail-calls libc unless the fd is a
// store socket. The exported names are listed once, in exports.map (the version script);
// each has its libc counterpart in real_calls.h (RDZV_REAL_FUNCTIONS), but for execv, execvp,
// execl, execlp and execle, which are built on execve/execvpe (tests/unit: test_shim.cpp).
#pragma once

#include <errno.h>

#include "guard.h"

// An intercepted libc function: the only symbols the shim exports (exports.map keeps it so).
#define RDZV_EXPORT __attribute__((visibility("default")))

namespace rdzv {

// Recording after (or around) a real call: holds the re-entrancy guard, so that what the
// recorder calls goes straight to libc, and gives the caller back the errno the real call
// left, whatever the recorder did to it.
class RecordScope {
 public:
  RecordScope() : saved_errno_(errno) {}
  ~RecordScope() { errno = saved_errno_; }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

  // The errno the real call left (what the caller will see).
  int call_errno() const { return saved_errno_; }

 private:
  int saved_errno_;
  Guard guard_;
};

}  // namespace rdzv
