// Calls in flight (trace_format.h, struct rdzv_inflight): a blocking receive on a store socket, a
// store connect or accept, a wait on a store socket and a resolver call are published in a
// slot of the trace header when they begin and the slot is emptied when they return, so that
// a call that never returns (the job hung, then was killed) is still on record.
//
// The hot path (traced_io, a store socket's receive) takes it inline: one load of the header
// pointer, one of the thread id, a compare-and-swap, the fields, the seal; on return two
// stores. Everything else goes through the out-of-line helpers.
#pragma once

#include <stdint.h>

#include "rdzvscope/recorder_core.h"
#include "trace_writer.h"

namespace rdzv {

// The open trace's header while in-flight slots may be written, else null (no file yet, or a
// fork child before its own file).
extern rdzv_file_header* g_inflight_header;
// This thread's id, 0 until first asked (and in a fork child, whose thread has a new one).
extern __thread uint32_t t_inflight_tid __attribute__((tls_model("initial-exec")));

uint32_t inflight_tid_slow();
void inflight_forget_after_fork();

// A claimed slot, filled by the caller between begin and publish.
__attribute__((always_inline)) inline rdzv_inflight* inflight_claim() {
  rdzv_file_header* h = __atomic_load_n(&g_inflight_header, __ATOMIC_ACQUIRE);
  if (__builtin_expect(!h, 0)) return nullptr;
  uint32_t tid = t_inflight_tid;
  if (__builtin_expect(!tid, 0)) tid = inflight_tid_slow();
  return rdzv_inflight_claim(h, tid);
}

// The fields every call writes (the recorder core's rdzv_inflight_fill); `has` says that none
// of the others is (the caller adds them).
__attribute__((always_inline)) inline void inflight_fill(rdzv_inflight* s, uint8_t kind,
                                                         uint8_t op, uint16_t flags, int fd,
                                                         uint64_t start_ns) {
  rdzv_inflight_fill(s, kind, op, flags, fd, start_ns);
}

// RDZV_FEAT_STORE_RECV: a receive on a store socket that began at start_ns returned bytes
// (the recorder core's rdzv_store_recv_moves), written by the core's rdzv_note_store_recv.
__attribute__((always_inline)) inline void note_store_recv(uint64_t start_ns) {
  rdzv_file_header* h = __atomic_load_n(&g_inflight_header, __ATOMIC_RELAXED);
  if (__builtin_expect(h != nullptr, 1)) rdzv_note_store_recv(h, start_ns);
}

inline void inflight_end(rdzv_inflight* s) {
  if (s) rdzv_inflight_release(s);
}

// Out of line, for the calls that are not hot (connect, accept, waits, resolver): a slot
// published with a socket's peer, or a resolver's host; null when none could be had. The
// resolver's opens the trace file first when needed (its lookup is the process's first call).
rdzv_inflight* inflight_begin_socket(uint8_t kind, uint8_t op, uint16_t flags, int fd,
                                     uint64_t start_ns, int64_t timeout_ms,
                                     const rdzv_sockaddr* peer);
rdzv_inflight* inflight_begin_lookup(uint8_t op, const char* host, uint64_t start_ns);

// Holds a slot for the length of a call (out-of-line callers).
class InFlight {
 public:
  explicit InFlight(rdzv_inflight* s) : s_(s) {}
  ~InFlight() { inflight_end(s_); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  rdzv_inflight* s_;
};

}  // namespace rdzv
