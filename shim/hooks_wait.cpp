// poll, ppoll, select, pselect, epoll_wait, epoll_pwait. Only a wait that ends by its timeout
// while a store socket or a connect in progress is among the descriptors is recorded: that is
// c10d's barrier wait expiring, or a connect given up by the caller's own deadline.
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "clock.h"
#include "events.h"
#include "fd_table.h"
#include "guard.h"
#include "hook.h"
#include "inflight.h"
#include "real_calls.h"

using namespace rdzv;

namespace {

inline bool anything_watched() { return __atomic_load_n(&g_watched_fds, __ATOMIC_RELAXED) > 0; }

int64_t timespec_ms(const struct timespec* ts) {
  if (!ts) return -1;
  return static_cast<int64_t>(ts->tv_sec) * 1000 + ts->tv_nsec / 1000000;
}

int64_t timeval_ms(const struct timeval* tv) {
  if (!tv) return -1;
  return static_cast<int64_t>(tv->tv_sec) * 1000 + tv->tv_usec / 1000;
}

__attribute__((noinline)) void record_wait_timeout(rdzv_op op, int fd, uint16_t info,
                                                   int64_t timeout_ms, uint32_t nfds) {
  RecordScope scope;
  if (forget_if_stale(fd, info)) return;
  uint64_t now = mono_ns();
  uint64_t waited = timeout_ms > 0 ? static_cast<uint64_t>(timeout_ms) * 1000000 : 0;
  EventHead head{RDZV_EV_POLL, static_cast<uint8_t>(op)};
  head.flags = static_cast<uint16_t>(RDZV_F_TIMEOUT | ((info & kFdStore) ? RDZV_F_STORE : 0) |
                                     ((info & kFdPending) ? RDZV_F_NONBLOCK : 0));
  head.fd = fd;
  head.ts_ns = now > waited ? now - waited : 0;
  head.dur_ns = waited;
  rdzv_ev_net net = net_fields();
  if (ConnSlot* slot = conn_slot(info)) {
    net.peer = slot->peer;
    net.local = slot->local;
  }
  net.timeout_ms = timeout_ms;
  net.nfds = nfds;
  if (info & kFdPending) net.tcp_state = tcp_state_of(fd);
  record_net(head, net);
}

void poll_timed_out(rdzv_op op, const struct pollfd* fds, nfds_t n, int64_t timeout_ms) {
  for (nfds_t i = 0; fds && i < n; ++i) {
    uint16_t info = fd_info(fds[i].fd);
    if (info & (kFdStore | kFdPending)) {
      record_wait_timeout(op, fds[i].fd, info, timeout_ms, static_cast<uint32_t>(n));
      return;
    }
  }
}

// select() clears the sets when it times out, so the watched fd is found before the call.
int watched_in_sets(int nfds, const fd_set* r, const fd_set* w, const fd_set* e) {
  if (nfds > FD_SETSIZE) nfds = FD_SETSIZE;
  for (int fd = 0; fd < nfds; ++fd) {
    bool in = (r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e));
    if (in && (fd_info(fd) & (kFdStore | kFdPending))) return fd;
  }
  return -1;
}

// The first store socket or pending connect among the pollfds, or -1.
int watched_in_pollfds(const struct pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; fds && i < n; ++i)
    if (fd_info(fds[i].fd) & (kFdStore | kFdPending)) return fds[i].fd;
  return -1;
}

// A wait that can block on a store socket or a store connect in progress is published in
// flight while it runs: a client waiting for the store's reply, a connect waiting for the
// handshake, a store host waiting for its clients.
__attribute__((noinline)) rdzv_inflight* inflight_wait(rdzv_op op, int fd, uint16_t info,
                                                       int64_t timeout_ms) {
  if (fd < 0 || timeout_ms == 0) return nullptr;
  RecordScope scope;
  const ConnSlot* slot = conn_slot(info);
  const uint16_t flags = static_cast<uint16_t>(((info & kFdStore) ? RDZV_F_STORE : 0) |
                                               ((info & kFdPending) ? RDZV_F_NONBLOCK : 0));
  return inflight_begin_socket(RDZV_EV_POLL, static_cast<uint8_t>(op), flags, fd, mono_ns(),
                               timeout_ms, slot ? &slot->peer : nullptr);
}

__attribute__((noinline)) rdzv_inflight* inflight_poll(rdzv_op op, const struct pollfd* fds,
                                                       nfds_t n, int64_t timeout_ms) {
  if (timeout_ms == 0) return nullptr;
  const int fd = watched_in_pollfds(fds, n);
  return fd < 0 ? nullptr : inflight_wait(op, fd, fd_info(fd), timeout_ms);
}

}  // namespace

// The hooks, in the shim's one form (hook.h); the recorder, record_wait_timeout, holds the
// RecordScope.
extern "C" {

// glibc declares poll's and ppoll's fds write-only (access attribute); they are read by the
// kernel too (events), and read here before the call, as the kernel does.
// GCC's warning; clang has no such group (and -Werror refuses an unknown one).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

RDZV_EXPORT int poll(struct pollfd* fds, nfds_t n, int timeout) {
  rdzv_inflight* inflight = nullptr;
  if (__builtin_expect(anything_watched(), 0) && !in_guard())
    inflight = inflight_poll(RDZV_OP_POLL, fds, n, timeout);
  int r = real::poll()(fds, n, timeout);
  inflight_end(inflight);
  if (__builtin_expect(r == 0 && timeout > 0, 0) && anything_watched() && !in_guard())
    poll_timed_out(RDZV_OP_POLL, fds, n, timeout);
  return r;
}

RDZV_EXPORT int __poll_chk(struct pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  rdzv_inflight* inflight = nullptr;
  if (__builtin_expect(anything_watched(), 0) && !in_guard())
    inflight = inflight_poll(RDZV_OP_POLL, fds, n, timeout);
  int r = real::__poll_chk()(fds, n, timeout, fdslen);
  inflight_end(inflight);
  if (__builtin_expect(r == 0 && timeout > 0, 0) && anything_watched() && !in_guard())
    poll_timed_out(RDZV_OP_POLL, fds, n, timeout);
  return r;
}

RDZV_EXPORT int ppoll(struct pollfd* fds, nfds_t n, const struct timespec* ts,
                      const sigset_t* mask) {
  rdzv_inflight* inflight = nullptr;
  if (__builtin_expect(anything_watched(), 0) && !in_guard())
    inflight = inflight_poll(RDZV_OP_PPOLL, fds, n, timespec_ms(ts));
  int r = real::ppoll()(fds, n, ts, mask);
  inflight_end(inflight);
  if (__builtin_expect(r == 0 && ts != nullptr, 0) && anything_watched() && !in_guard())
    poll_timed_out(RDZV_OP_PPOLL, fds, n, timespec_ms(ts));
  return r;
}

RDZV_EXPORT int __ppoll_chk(struct pollfd* fds, nfds_t n, const struct timespec* ts,
                            const sigset_t* mask, size_t fdslen) {
  rdzv_inflight* inflight = nullptr;
  if (__builtin_expect(anything_watched(), 0) && !in_guard())
    inflight = inflight_poll(RDZV_OP_PPOLL, fds, n, timespec_ms(ts));
  int r = real::__ppoll_chk()(fds, n, ts, mask, fdslen);
  inflight_end(inflight);
  if (__builtin_expect(r == 0 && ts != nullptr, 0) && anything_watched() && !in_guard())
    poll_timed_out(RDZV_OP_PPOLL, fds, n, timespec_ms(ts));
  return r;
}

RDZV_EXPORT int select(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, struct timeval* tv) {
  auto fn = real::select();
  if (!tv || !anything_watched() || in_guard()) return fn(nfds, rd, wr, ex, tv);
  int watched = watched_in_sets(nfds, rd, wr, ex);
  int64_t ms = timeval_ms(tv);  // Linux updates *tv with the time left
  rdzv_inflight* inflight =
      watched >= 0 ? inflight_wait(RDZV_OP_SELECT, watched, fd_info(watched), ms) : nullptr;
  int r = fn(nfds, rd, wr, ex, tv);
  inflight_end(inflight);
  if (r == 0 && watched >= 0 && ms > 0)
    record_wait_timeout(RDZV_OP_SELECT, watched, fd_info(watched), ms, static_cast<uint32_t>(nfds));
  return r;
}

RDZV_EXPORT int pselect(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, const struct timespec* ts,
                        const sigset_t* mask) {
  auto fn = real::pselect();
  if (!ts || !anything_watched() || in_guard()) return fn(nfds, rd, wr, ex, ts, mask);
  int watched = watched_in_sets(nfds, rd, wr, ex);
  rdzv_inflight* inflight = watched >= 0 ? inflight_wait(RDZV_OP_PSELECT, watched,
                                                         fd_info(watched), timespec_ms(ts))
                                         : nullptr;
  int r = fn(nfds, rd, wr, ex, ts, mask);
  inflight_end(inflight);
  int64_t ms = timespec_ms(ts);
  if (r == 0 && watched >= 0 && ms > 0)
    record_wait_timeout(RDZV_OP_PSELECT, watched, fd_info(watched), ms,
                        static_cast<uint32_t>(nfds));
  return r;
}

// epoll reports user data, not fds, so a timeout is attributed to the epoll fd, and only while
// a store connect is in progress.
RDZV_EXPORT int epoll_wait(int epfd, struct epoll_event* ev, int max, int timeout) {
  rdzv_inflight* inflight = nullptr;
  if (__builtin_expect(__atomic_load_n(&g_store_pending, __ATOMIC_RELAXED) > 0, 0) && !in_guard())
    inflight = inflight_wait(RDZV_OP_EPOLL_WAIT, epfd, kFdStore, timeout);
  int r = real::epoll_wait()(epfd, ev, max, timeout);
  inflight_end(inflight);
  if (__builtin_expect(r == 0 && timeout > 0, 0) &&
      __atomic_load_n(&g_store_pending, __ATOMIC_RELAXED) > 0 && !in_guard())
    record_wait_timeout(RDZV_OP_EPOLL_WAIT, epfd, kFdStore, timeout, 0);
  return r;
}

RDZV_EXPORT int epoll_pwait(int epfd, struct epoll_event* ev, int max, int timeout,
                            const sigset_t* mask) {
  rdzv_inflight* inflight = nullptr;
  if (__builtin_expect(__atomic_load_n(&g_store_pending, __ATOMIC_RELAXED) > 0, 0) && !in_guard())
    inflight = inflight_wait(RDZV_OP_EPOLL_PWAIT, epfd, kFdStore, timeout);
  int r = real::epoll_pwait()(epfd, ev, max, timeout, mask);
  inflight_end(inflight);
  if (__builtin_expect(r == 0 && timeout > 0, 0) &&
      __atomic_load_n(&g_store_pending, __ATOMIC_RELAXED) > 0 && !in_guard())
    record_wait_timeout(RDZV_OP_EPOLL_PWAIT, epfd, kFdStore, timeout, 0);
  return r;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // extern "C"
