// send/recv families and read/write. This is the host's hot path: for any fd that is not a
// store socket the cost is one table load and one branch before the real call.
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "clock.h"
#include "events.h"
#include "fd_table.h"
#include "guard.h"
#include "real_calls.h"

using namespace rdzv;

namespace {

// Individual events per store socket before only totals (and failures) are kept: enough for
// the rendezvous handshake and first queries, bounded for a heartbeat that runs for days.
constexpr uint32_t kDetailedEventsPerSocket = 32;

inline bool traced(int fd, uint16_t* info) {
  *info = fd_info(fd);
  return __builtin_expect((*info & kFdStore) != 0, 0) && !in_guard();
}

size_t iov_bytes(const struct iovec* iov, long n) {
  size_t total = 0;
  for (long i = 0; iov && i < n; ++i) total += iov[i].iov_len;
  return total;
}

__attribute__((noinline)) void note_io(rdzv_kind kind, rdzv_op op, int fd, uint16_t info,
                                       size_t asked, bool dontwait, uint64_t t0, ssize_t r,
                                       int err) {
  Guard guard;
  ConnSlot* slot = conn_slot(info);
  const bool is_send = kind == RDZV_EV_SEND;
  if (slot) {
    __atomic_fetch_add(is_send ? &slot->calls_send : &slot->calls_recv, 1, __ATOMIC_RELAXED);
    if (r > 0)
      __atomic_fetch_add(is_send ? &slot->bytes_sent : &slot->bytes_recv,
                         static_cast<uint64_t>(r), __ATOMIC_RELAXED);
  }
  bool failure = false, timeout = false, zero = false;
  bool nonblock = dontwait || (info & kFdNonblock);
  if (r < 0) {
    if (err == EINTR) return;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!nonblock && is_nonblocking(fd)) {  // set by ioctl(FIONBIO) or before we saw it
        fd_info_update(fd, kFdNonblock, 0);
        nonblock = true;
      }
      if (nonblock) return;  // routine for event-loop servers (libuv)
      timeout = true;        // SO_RCVTIMEO/SO_SNDTIMEO expired: c10d's "Socket Timeout"
    }
    failure = true;
  } else if (r == 0 && !is_send && asked > 0) {
    zero = true;
  }
  bool detail = false;
  if (slot && __atomic_load_n(&slot->events_recorded, __ATOMIC_RELAXED) < kDetailedEventsPerSocket)
    detail = __atomic_fetch_add(&slot->events_recorded, 1, __ATOMIC_RELAXED) <
             kDetailedEventsPerSocket;
  if (!failure && !zero && !detail) return;

  EventHead head{static_cast<uint8_t>(kind), static_cast<uint8_t>(op)};
  head.flags = static_cast<uint16_t>(RDZV_F_STORE | (nonblock ? RDZV_F_NONBLOCK : 0) |
                                     (timeout ? RDZV_F_TIMEOUT : 0) |
                                     (zero ? RDZV_F_ZERO_READ : 0));
  head.fd = fd;
  head.ts_ns = t0;
  head.dur_ns = mono_ns() - t0;
  head.ret = r;
  head.err = r < 0 ? err : 0;
  if (Slot s = new_record(Create::IfNeeded, head)) {
    rdzv_ev_net& net = s.rec->u.net;
    if (slot) {
      net.peer = slot->peer;
      net.local = slot->local;
      net.timeout_ms = is_send ? slot->sndtimeo_ms : slot->rcvtimeo_ms;
      if (net.timeout_ms < 0) net.timeout_ms = -1;
    } else {
      net.timeout_ms = -1;
    }
    net.size = asked;
    commit_record(s);
  }
  if (failure || zero) record_snapshot(Create::IfNeeded, RDZV_SNAP_FAILURE);
}

template <typename Call>
inline ssize_t traced_io(rdzv_kind kind, rdzv_op op, int fd, uint16_t info, size_t asked,
                         bool dontwait, Call call) {
  uint64_t t0 = mono_ns();
  ssize_t r = call();
  int err = errno;
  note_io(kind, op, fd, info, asked, dontwait, t0, r, err);
  errno = err;
  return r;
}

}  // namespace

#define RDZV_EXPORT __attribute__((visibility("default")))

extern "C" {

RDZV_EXPORT ssize_t send(int fd, const void* buf, size_t n, int flags) {
  auto fn = real::send();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, flags);
  return traced_io(RDZV_EV_SEND, RDZV_OP_SEND, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, buf, n, flags); });
}

RDZV_EXPORT ssize_t sendto(int fd, const void* buf, size_t n, int flags,
                           const struct sockaddr* to, socklen_t tolen) {
  auto fn = real::sendto();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, flags, to, tolen);
  return traced_io(RDZV_EV_SEND, RDZV_OP_SENDTO, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, buf, n, flags, to, tolen); });
}

RDZV_EXPORT ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  auto fn = real::sendmsg();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, msg, flags);
  size_t n = msg ? iov_bytes(msg->msg_iov, static_cast<long>(msg->msg_iovlen)) : 0;
  return traced_io(RDZV_EV_SEND, RDZV_OP_SENDMSG, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, msg, flags); });
}

RDZV_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  auto fn = real::write();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n);
  return traced_io(RDZV_EV_SEND, RDZV_OP_WRITE, fd, info, n, false,
                   [&] { return fn(fd, buf, n); });
}

RDZV_EXPORT ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  auto fn = real::writev();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, iov, iovcnt);
  return traced_io(RDZV_EV_SEND, RDZV_OP_WRITEV, fd, info, iov_bytes(iov, iovcnt), false,
                   [&] { return fn(fd, iov, iovcnt); });
}

RDZV_EXPORT ssize_t recv(int fd, void* buf, size_t n, int flags) {
  auto fn = real::recv();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, flags);
  return traced_io(RDZV_EV_RECV, RDZV_OP_RECV, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, buf, n, flags); });
}

RDZV_EXPORT ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags) {
  auto fn = real::__recv_chk();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, buflen, flags);
  return traced_io(RDZV_EV_RECV, RDZV_OP_RECV, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, buf, n, buflen, flags); });
}

RDZV_EXPORT ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from,
                             socklen_t* fromlen) {
  auto fn = real::recvfrom();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, flags, from, fromlen);
  return traced_io(RDZV_EV_RECV, RDZV_OP_RECVFROM, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, buf, n, flags, from, fromlen); });
}

RDZV_EXPORT ssize_t __recvfrom_chk(int fd, void* buf, size_t n, size_t buflen, int flags,
                                   struct sockaddr* from, socklen_t* fromlen) {
  auto fn = real::__recvfrom_chk();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, buflen, flags, from, fromlen);
  return traced_io(RDZV_EV_RECV, RDZV_OP_RECVFROM, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, buf, n, buflen, flags, from, fromlen); });
}

RDZV_EXPORT ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  auto fn = real::recvmsg();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, msg, flags);
  size_t n = msg ? iov_bytes(msg->msg_iov, static_cast<long>(msg->msg_iovlen)) : 0;
  return traced_io(RDZV_EV_RECV, RDZV_OP_RECVMSG, fd, info, n, flags & MSG_DONTWAIT,
                   [&] { return fn(fd, msg, flags); });
}

RDZV_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  auto fn = real::read();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n);
  return traced_io(RDZV_EV_RECV, RDZV_OP_READ, fd, info, n, false,
                   [&] { return fn(fd, buf, n); });
}

RDZV_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  auto fn = real::__read_chk();
  uint16_t info;
  if (!traced(fd, &info)) return fn(fd, buf, n, buflen);
  return traced_io(RDZV_EV_RECV, RDZV_OP_READ, fd, info, n, false,
                   [&] { return fn(fd, buf, n, buflen); });
}

}  // extern "C"
