// The re-entrancy guard: while a thread is inside the shim's own work (recording, opening the
// trace, reading /proc, the resolver's internal sockets), every intercepted call it makes goes
// straight to libc. initial-exec TLS keeps the check to one load; the shim is always loaded at
// start-up through LD_PRELOAD, so static TLS space is there for it.
#pragma once

namespace rdzv {

extern __thread int t_guard_depth __attribute__((tls_model("initial-exec")));

inline bool in_guard() { return t_guard_depth != 0; }

class Guard {
 public:
  Guard() { ++t_guard_depth; }
  ~Guard() { --t_guard_depth; }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};

}  // namespace rdzv
