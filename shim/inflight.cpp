#include "inflight.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"
#include "text.h"

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

rdzv_inflight* inflight_begin_socket(uint8_t kind, uint8_t op, uint16_t flags, int fd,
                                     uint64_t start_ns, int64_t timeout_ms,
                                     const rdzv_sockaddr* peer) {
  rdzv_inflight* s = inflight_claim();
  if (!s) return nullptr;
  inflight_fill(s, kind, op, flags, fd, start_ns);
  memset(&s->u, 0, sizeof s->u);
  if (timeout_ms >= 0) {
    s->timeout_ms = timeout_ms;
    s->has |= RDZV_INFLIGHT_HAS_TIMEOUT;
  }
  if (peer && peer->family) {
    s->u.peer = *peer;
    s->has |= RDZV_INFLIGHT_HAS_PEER;
  }
  rdzv_inflight_publish(s);
  return s;
}

rdzv_inflight* inflight_begin_lookup(uint8_t op, const char* host, uint64_t start_ns) {
  if (!__atomic_load_n(&g_inflight_header, __ATOMIC_ACQUIRE)) {
    Guard guard;  // creating the file makes calls of its own
    if (!ensure_trace_open()) return nullptr;
  }
  rdzv_inflight* s = inflight_claim();
  if (!s) return nullptr;
  inflight_fill(s, RDZV_EV_RESOLVE, op, 0, -1, start_ns);
  memset(&s->u, 0, sizeof s->u);
  if (host) {
    if (copy_cut(s->u.host, sizeof s->u.host, host)) s->flags |= RDZV_F_TRUNCATED;
    s->has |= RDZV_INFLIGHT_HAS_HOST;
  }
  rdzv_inflight_publish(s);
  return s;
}

}  // namespace rdzv
