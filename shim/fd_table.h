// What the shim knows about each file descriptor, in 2 bytes per fd so that the check on
// every send/recv/read/write of the host is one load. Sockets that need more state (store
// sockets and connects still in progress) get a slot in a small fixed table.
#pragma once

#include <stdint.h>

#include "rdzvscope/recorder_core.h"
#include "rdzvscope/trace_format.h"

namespace rdzv {

constexpr int kMaxTrackedFd = 65536;  // higher fds pass untraced (docs/trace-format.md: limits)
constexpr uint16_t kFdTcp = 0x8000;      // a TCP socket we saw connect, bind or accept
constexpr uint16_t kFdPending = 0x4000;  // non-blocking connect whose outcome is not read yet
constexpr uint16_t kFdNonblock = 0x2000;
constexpr uint16_t kFdStore = 0x1000;    // store socket: per-call events are recorded
// Peer socket: a TCP connection to or from a process other than the store, made after this
// process reached a store (gloo's pairs): its first calls and its failures are recorded.
// Always set together with a slot, never with kFdStore.
constexpr uint16_t kFdPeer = 0x0800;
constexpr uint16_t kFdTracedIo = kFdStore | kFdPeer;  // the I/O hooks leave the fast path
constexpr uint16_t kFdSlotMask = 0x07FF; // slot index + 1, 0 = none
constexpr int kMaxConnSlots = 1024;
static_assert(kMaxConnSlots < kFdSlotMask, "slot index + 1 fits the slot bits");

struct ConnSlot {
  int32_t owner_fd;  // -1 when free; claimed with a compare-and-swap
  uint32_t store;
  uint64_t opened_ns;         // connect start or accept time (monotonic)
  rdzv_sockaddr peer;
  rdzv_sockaddr local;
  uint64_t bytes_sent, bytes_recv, calls_send, calls_recv;  // relaxed atomics
  uint32_t events_recorded;   // per-call events written so far (atomic)
  uint32_t detail_limit;      // per-call events recorded one by one (store or peer socket)
  uint32_t failures_recorded; // failure / 0-byte events written after those (atomic)
  int64_t rcvtimeo_ms, sndtimeo_ms;  // last values recorded, to record only changes
  uint64_t inode;  // the socket's inode: tells our socket from a file that reused its number
};

extern uint16_t g_fd_info[kMaxTrackedFd];

inline uint16_t fd_info(int fd) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxTrackedFd)) return 0;
  return __atomic_load_n(&g_fd_info[fd], __ATOMIC_RELAXED);
}

void fd_info_set(int fd, uint16_t info);
void fd_info_update(int fd, uint16_t set_bits, uint16_t clear_bits);

extern ConnSlot g_conn_slots[kMaxConnSlots];

inline ConnSlot* conn_slot(uint16_t info) {
  uint16_t idx = info & kFdSlotMask;
  return idx ? &g_conn_slots[idx - 1] : nullptr;
}

// Claims a slot for fd, initialised; null when the table is full.
ConnSlot* conn_slot_claim(int fd, bool store, uint64_t opened_ns, const rdzv_sockaddr& peer);

// Every recorder that reads a slot asks this first: true (and fd forgotten) when fd no longer
// refers to the socket its slot was made for. glibc closes some fds internally (fclose of an
// fdopen()ed socket, posix_spawn file actions), past our close hook. One fstat, on recording paths only, never per send.
bool forget_if_stale(int fd, uint16_t info);

// dup/dup2/dup3/F_DUPFD: the copy is the same socket and is traced like the original.
void fd_copy_classification(int oldfd, int newfd);

// The kFdSlotMask bits that point at s (0 for null).
uint16_t conn_slot_bits(const ConnSlot* s);

// Forgets fd: frees its slot and clears its bits. Returns the old info.
uint16_t fd_forget(int fd);

// Number of fds that are store sockets or pending connects; waits that time out are only
// examined when this is non-zero.
extern int g_watched_fds;
extern int g_store_pending;  // pending connects to a store port (for epoll timeouts)
// Peer sockets open now: at most the recorder core's RDZV_PEER_SOCKETS_MAX (attach's too), so
// that the slots left keep room for store sockets (a large gloo job has a pair per other rank);
// the ones past it stay plain.
extern int g_peer_sockets;
static_assert(RDZV_PEER_SOCKETS_MAX <= kMaxConnSlots / 2, "peer sockets leave half the slots to store sockets");

// After fork: per-socket counters restart at zero in the child.
void fd_table_reset_counters();

}  // namespace rdzv
