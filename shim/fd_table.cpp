#include "fd_table.h"

#include <string.h>
#include <sys/stat.h>

#include "rdzvscope/recorder_core.h"

namespace rdzv {

uint16_t g_fd_info[kMaxTrackedFd];
ConnSlot g_conn_slots[kMaxConnSlots];
int g_watched_fds;
int g_store_pending;
int g_peer_sockets;

namespace {

bool g_conn_slots_ready;

void init_slots() {
  // Static storage starts zeroed, and fd 0 is a real fd: mark every slot free once.
  if (__atomic_load_n(&g_conn_slots_ready, __ATOMIC_ACQUIRE)) return;
  for (auto& s : g_conn_slots) {
    int32_t zero = 0;
    __atomic_compare_exchange_n(&s.owner_fd, &zero, -1, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
  }
  __atomic_store_n(&g_conn_slots_ready, true, __ATOMIC_RELEASE);
}

bool watched(uint16_t info) { return info & (kFdStore | kFdPending); }

void account_watch(uint16_t before, uint16_t after) {
  int delta = static_cast<int>(watched(after)) - static_cast<int>(watched(before));
  if (delta) __atomic_fetch_add(&g_watched_fds, delta, __ATOMIC_RELAXED);
  auto store_pending = [](uint16_t i) { return (i & kFdStore) && (i & kFdPending); };
  delta = static_cast<int>(store_pending(after)) - static_cast<int>(store_pending(before));
  if (delta) __atomic_fetch_add(&g_store_pending, delta, __ATOMIC_RELAXED);
  delta = static_cast<int>((after & kFdPeer) != 0) - static_cast<int>((before & kFdPeer) != 0);
  if (delta) __atomic_fetch_add(&g_peer_sockets, delta, __ATOMIC_RELAXED);
}

}  // namespace

void fd_info_set(int fd, uint16_t info) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxTrackedFd)) return;
  uint16_t before = __atomic_exchange_n(&g_fd_info[fd], info, __ATOMIC_RELAXED);
  account_watch(before, info);
}

void fd_info_update(int fd, uint16_t set_bits, uint16_t clear_bits) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxTrackedFd)) return;
  uint16_t before = __atomic_load_n(&g_fd_info[fd], __ATOMIC_RELAXED);
  uint16_t after;
  do {
    after = static_cast<uint16_t>((before | set_bits) & ~clear_bits);
  } while (!__atomic_compare_exchange_n(&g_fd_info[fd], &before, after, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  account_watch(before, after);
}

ConnSlot* conn_slot_claim(int fd, bool store, uint64_t opened_ns, const rdzv_sockaddr& peer) {
  init_slots();
  for (auto& s : g_conn_slots) {
    int32_t free_mark = -1;
    if (__atomic_load_n(&s.owner_fd, __ATOMIC_RELAXED) != -1) continue;
    if (!__atomic_compare_exchange_n(&s.owner_fd, &free_mark, fd, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
      continue;
    s.store = store;
    s.opened_ns = opened_ns;
    s.peer = peer;
    memset(&s.local, 0, sizeof s.local);
    s.bytes_sent = s.bytes_recv = s.calls_send = s.calls_recv = 0;
    s.events_recorded = s.failures_recorded = 0;
    s.detail_limit = RDZV_IO_DETAIL_EVENTS;
    s.rcvtimeo_ms = s.sndtimeo_ms = -2;  // -2: nothing recorded yet
    struct stat st;
    s.inode = fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
    return &s;
  }
  return nullptr;
}

namespace {
bool slot_owns_fd(const ConnSlot* s, int fd) {
  struct stat st;
  if (!s || fstat(fd, &st) != 0) return false;
  return S_ISSOCK(st.st_mode) && static_cast<uint64_t>(st.st_ino) == s->inode;
}
}  // namespace

bool forget_if_stale(int fd, uint16_t info) {
  ConnSlot* s = conn_slot(info);
  if (!s || slot_owns_fd(s, fd)) return false;
  fd_forget(fd);
  return true;
}

void fd_copy_classification(int oldfd, int newfd) {
  uint16_t info = fd_info(oldfd);
  if (!info || oldfd == newfd || forget_if_stale(oldfd, info)) return;
  info = static_cast<uint16_t>(info & ~kFdPending);
  ConnSlot* from = conn_slot(info);
  ConnSlot* copy = nullptr;
  if (from) {
    copy = conn_slot_claim(newfd, from->store, from->opened_ns, from->peer);
    if (copy) copy->local = from->local;
  }
  uint16_t bits = static_cast<uint16_t>(info & ~(kFdSlotMask | kFdStore | kFdPeer));
  if (copy) bits |= copy->store ? kFdStore : (info & kFdPeer);
  fd_info_set(newfd, static_cast<uint16_t>(bits | conn_slot_bits(copy)));
}

uint16_t fd_forget(int fd) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxTrackedFd)) return 0;
  uint16_t before = __atomic_exchange_n(&g_fd_info[fd], uint16_t{0}, __ATOMIC_RELAXED);
  account_watch(before, 0);
  if (ConnSlot* s = conn_slot(before)) __atomic_store_n(&s->owner_fd, -1, __ATOMIC_RELEASE);
  return before;
}

uint16_t conn_slot_bits(const ConnSlot* s) {
  return s ? static_cast<uint16_t>((s - g_conn_slots) + 1) : 0;
}

void fd_table_reset_counters() {
  for (auto& s : g_conn_slots) {
    s.bytes_sent = s.bytes_recv = s.calls_send = s.calls_recv = 0;
    s.events_recorded = s.failures_recorded = 0;
  }
}

}  // namespace rdzv
