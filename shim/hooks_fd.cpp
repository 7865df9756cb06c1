// setsockopt/getsockopt, fcntl/fcntl64, close, close_range, dup2/dup3: keep the fd table true
// to the host's descriptors, read the outcome of non-blocking connects, note timeouts set.
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "clock.h"
#include "events.h"
#include "fd_table.h"
#include "guard.h"
#include "hook.h"
#include "real_calls.h"
#include "sockets.h"

using namespace rdzv;

namespace {

int64_t g_last_plain_timeo_ms = -2;  // last SO_*TIMEO recorded on a non-store socket

void note_timeout_option(int fd, uint16_t info, int optname, const void* val, socklen_t len) {
  if (!val || len < static_cast<socklen_t>(sizeof(struct timeval))) return;
  if (forget_if_stale(fd, info)) return;
  const auto* tv = static_cast<const struct timeval*>(val);
  int64_t ms = static_cast<int64_t>(tv->tv_sec) * 1000 + tv->tv_usec / 1000;
  ConnSlot* slot = conn_slot(info);
  // c10d sets SO_RCVTIMEO before every wait; only a change is worth a record.
  int64_t* last = slot ? (optname == SO_RCVTIMEO ? &slot->rcvtimeo_ms : &slot->sndtimeo_ms)
                       : &g_last_plain_timeo_ms;
  if (__atomic_exchange_n(last, ms, __ATOMIC_RELAXED) == ms) return;
  rdzv_ev_net net = net_fields();
  net.size = static_cast<uint64_t>(optname);
  net.timeout_ms = ms;
  if (slot) net.peer = slot->peer;
  record_net(call_head(RDZV_EV_SOCKOPT, RDZV_OP_SETSOCKOPT,
                       (info & kFdStore) ? RDZV_F_STORE : 0, fd, mono_ns(), 0, 0),
             net);
}

int call_fcntl(rdzv::real::fcntl_fn fn, int fd, int cmd, void* arg) {
  int r = fn(fd, cmd, arg);
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0 && fd_info(fd) && !in_guard()) {
    RecordScope scope;
    fd_copy_classification(fd, r);
  }
  if (cmd == F_SETFL && r == 0) {
    uint16_t info = fd_info(fd);
    if (info & kFdTcp) {
      int flags = static_cast<int>(reinterpret_cast<intptr_t>(arg));
      if (flags & O_NONBLOCK)
        fd_info_update(fd, kFdNonblock, 0);
      else
        fd_info_update(fd, 0, kFdNonblock);
    }
  }
  return r;
}

// dup2/dup3 close newfd silently when it is open: what newfd was is forgotten (a store socket
// gets its close record), and it becomes a traced copy when oldfd is a traced socket.
void after_dup_over(int oldfd, int newfd) {
  uint16_t info = fd_info(newfd);
  if (!info && !fd_info(oldfd)) return;
  RecordScope scope;
  if (info) note_socket_closing(newfd, info, RDZV_OP_CLOSE, true);
  fd_copy_classification(oldfd, newfd);
}

}  // namespace

// The hooks, in the shim's one form (hook.h).
extern "C" {

RDZV_EXPORT int setsockopt(int fd, int level, int optname, const void* val, socklen_t len) {
  int r = real::setsockopt()(fd, level, optname, val, len);
  if (r == 0 && level == SOL_SOCKET && (optname == SO_RCVTIMEO || optname == SO_SNDTIMEO) &&
      !in_guard()) {
    uint16_t info = fd_info(fd);
    if (info & kFdTcp) {
      RecordScope scope;
      note_timeout_option(fd, info, optname, val, len);
    }
  }
  return r;
}

RDZV_EXPORT int getsockopt(int fd, int level, int optname, void* val, socklen_t* len) {
  int r = real::getsockopt()(fd, level, optname, val, len);
  if (r == 0 && level == SOL_SOCKET && optname == SO_ERROR && val && len &&
      *len >= static_cast<socklen_t>(sizeof(int)) && !in_guard()) {
    uint16_t info = fd_info(fd);
    if (info & kFdPending) {
      RecordScope scope;
      int so_error = *static_cast<int*>(val);
      // SO_ERROR 0 also means "nothing yet" while the handshake is still running.
      if (so_error != 0 || tcp_state_of(fd) != TCP_SYN_SENT)
        complete_pending_connect(fd, info, so_error, RDZV_OP_GETSOCKOPT);
    }
  }
  return r;
}

// fcntl is variadic; its third argument is an int or a pointer, passed in the same register
// on every ABI we build for, so it is forwarded as a pointer-sized value, as glibc does.
RDZV_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return call_fcntl(real::fcntl(), fd, cmd, arg);
}

RDZV_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  auto fn = real::fcntl64();
  return call_fcntl(fn ? reinterpret_cast<rdzv::real::fcntl_fn>(fn) : real::fcntl(), fd, cmd, arg);
}

RDZV_EXPORT int close(int fd) {
  uint16_t info = fd_info(fd);
  if (__builtin_expect(info != 0, 0)) {
    if (in_guard()) {
      fd_forget(fd);  // one of the shim's own descriptors: nothing to record, errno untouched
    } else {
      RecordScope scope;
      note_socket_closing(fd, info, RDZV_OP_CLOSE, false);
    }
  }
  return real::close()(fd);
}

RDZV_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  auto fn = real::close_range();
  if (!fn) {
    errno = ENOSYS;
    return -1;
  }
  int r = fn(first, last, flags);
  if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && first < static_cast<unsigned>(kMaxTrackedFd)) {
    unsigned end = last < static_cast<unsigned>(kMaxTrackedFd) ? last
                                                             : static_cast<unsigned>(kMaxTrackedFd) - 1;
    RecordScope scope;
    for (unsigned fd = first; fd <= end; ++fd) {
      uint16_t info = fd_info(static_cast<int>(fd));
      if (info) note_socket_closing(static_cast<int>(fd), info, RDZV_OP_CLOSE, true);
    }
  }
  return r;
}

RDZV_EXPORT int dup(int oldfd) {
  int r = real::dup()(oldfd);
  if (r >= 0 && fd_info(oldfd) && !in_guard()) {
    RecordScope scope;
    fd_copy_classification(oldfd, r);
  }
  return r;
}

RDZV_EXPORT int dup2(int oldfd, int newfd) {
  int r = real::dup2()(oldfd, newfd);
  if (r >= 0 && oldfd != newfd && !in_guard()) after_dup_over(oldfd, newfd);
  return r;
}

RDZV_EXPORT int dup3(int oldfd, int newfd, int flags) {
  int r = real::dup3()(oldfd, newfd, flags);
  if (r >= 0 && !in_guard()) after_dup_over(oldfd, newfd);
  return r;
}

}  // extern "C"
