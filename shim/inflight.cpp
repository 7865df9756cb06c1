#include "inflight.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"

namespace rdzv {

rdzv_file_header* g_inflight_header = nullptr;
__thread uint32_t t_inflight_tid __attribute__((tls_model("initial-exec"))) = 0;

uint32_t inflight_tid_slow() {
  t_inflight_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_inflight_tid;
}

void inflight_forget_after_fork() {
  // Only the forking thread exists in the child; it has a new id, and the parent's mapping is
  // gone (writer_forget_after_fork).
  g_inflight_header = nullptr;
  t_inflight_tid = 0;
}

// The slot is filled by the recorder core, as attach's loader fills its own.
rdzv_inflight* inflight_begin_socket(uint8_t kind, uint8_t op, uint16_t flags, int fd,
                                     uint64_t start_ns, int64_t timeout_ms,
                                     const rdzv_sockaddr* peer) {
  rdzv_file_header* h = __atomic_load_n(&g_inflight_header, __ATOMIC_ACQUIRE);
  if (!h) return nullptr;
  uint32_t tid = t_inflight_tid;
  if (!tid) tid = inflight_tid_slow();
  return rdzv_inflight_begin_socket(h, tid, kind, op, flags, fd, start_ns, timeout_ms, peer);
}

rdzv_inflight* inflight_begin_lookup(uint8_t op, const char* host, uint64_t start_ns) {
  if (!__atomic_load_n(&g_inflight_header, __ATOMIC_ACQUIRE)) {
    Guard guard;  // creating the file makes calls of its own
    if (!ensure_trace_open()) return nullptr;
  }
  rdzv_file_header* h = __atomic_load_n(&g_inflight_header, __ATOMIC_ACQUIRE);
  if (!h) return nullptr;
  uint32_t tid = t_inflight_tid;
  if (!tid) tid = inflight_tid_slow();
  return rdzv_inflight_begin_lookup(h, tid, op, 0, host, start_ns);
}

}  // namespace rdzv
