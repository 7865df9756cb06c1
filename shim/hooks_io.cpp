// send/recv families and read/write. This is the host's hot path: for any fd that is not a
// store socket the cost is one table load and one branch before the real call.
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "clock.h"
#include "events.h"
#include "fd_table.h"
#include "guard.h"
#include "hook.h"
#include "inflight.h"
#include "inject.h"
#include "rdzvscope/recorder_core.h"
#include "real_calls.h"
#include "sockets.h"

using namespace rdzv;

namespace {

// Individual events per store socket before only totals (and failures) are kept: enough for
// the rendezvous handshake and first queries, bounded for a heartbeat that runs for days.
// Failures and 0-byte reads keep being recorded after that, up to a second limit per socket:
// a client that spins on recv()==0 after the store went away (torch 1.13's callback client
// does) must not fill the file. The rest still count in the socket's totals at close. Both
// limits are the recorder core's, which attach applies too (rdzvscope/recorder_core.h).
constexpr uint32_t kFailureEventsPerSocket = RDZV_IO_FAILURE_EVENTS;
// A peer socket (a process group's own connection) has fewer, RDZV_PEER_DETAIL_EVENTS: its
// opening exchange and the first collective's first messages. Each slot holds its own limit.

size_t iov_bytes(const struct iovec* iov, long n) {
  size_t total = 0;
  for (long i = 0; iov && i < n; ++i) total += iov[i].iov_len;
  return total;
}

inline uint64_t coarse_ns() { return clock_ns(CLOCK_MONOTONIC_COARSE); }

// How a call on a store socket ended, as its record tells it.
struct IoOutcome {
  bool failure = false;
  bool timeout = false;   // the socket's timeout expired (EAGAIN on a blocking socket)
  bool zero = false;      // a read that returned 0 (the peer closed)
  bool nonblock = false;  // the call could not block (MSG_DONTWAIT or a non-blocking fd)
};

// The steps of note_io, each forced inline into it (no call more on this path). Like note_io:
// libc only, no allocation, and errno as the real call left it (note_io's RecordScope).

// The outcome of a call that returned r (errno err), or false when it is not recorded: EINTR
// (the caller calls again), EAGAIN on a socket that cannot block.
__attribute__((always_inline)) inline bool io_outcome(int fd, uint16_t info, bool is_send,
                                                      size_t asked, bool dontwait, ssize_t r,
                                                      int err, IoOutcome* o) {
  o->nonblock = dontwait || (info & kFdNonblock);
  if (r < 0) {
    if (err == EINTR) return false;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!o->nonblock && is_nonblocking(fd)) {  // set by ioctl(FIONBIO) or before we saw it
        fd_info_update(fd, kFdNonblock, 0);
        o->nonblock = true;
      }
      if (o->nonblock) return false;  // routine for event-loop servers (libuv)
      o->timeout = true;              // SO_RCVTIMEO/SO_SNDTIMEO expired: c10d's "Socket Timeout"
    }
    o->failure = true;
  } else if (r == 0 && !is_send && asked > 0) {
    o->zero = true;
  }
  return true;
}

// Whether the call is recorded, within the socket's limits: every call while its detailed
// events last (*detail is cleared once they are spent), then failures and 0-byte reads up to
// their own limit; a call with extra_flags (an injected reset) always.
__attribute__((always_inline)) inline bool io_within_limits(ConnSlot* slot, bool* detail,
                                                            uint16_t extra_flags,
                                                            const IoOutcome& o) {
  if (*detail)
    *detail = __atomic_fetch_add(&slot->events_recorded, 1, __ATOMIC_RELAXED) < slot->detail_limit;
  if (*detail || extra_flags) return true;
  if (!o.failure && !o.zero) return false;
  return slot && __atomic_fetch_add(&slot->failures_recorded, 1, __ATOMIC_RELAXED) <
                     kFailureEventsPerSocket;
}

// The head of the call's record. Once a socket's detailed events are spent, the start of a
// call is read from the coarse clock (a few instructions instead of a TSC read); only failures
// are recorded then, and for those a resolution of a few milliseconds is plenty (they block
// for seconds).
__attribute__((always_inline)) inline EventHead io_head(rdzv_kind kind, rdzv_op op, int fd,
                                                        bool detail, uint64_t t0, ssize_t r,
                                                        int err, const IoOutcome& o,
                                                        uint16_t extra_flags,
                                                        uint16_t socket_kind_flag) {
  EventHead head{static_cast<uint8_t>(kind), static_cast<uint8_t>(op)};
  head.flags = static_cast<uint16_t>(socket_kind_flag | (o.nonblock ? RDZV_F_NONBLOCK : 0) |
                                     (o.timeout ? RDZV_F_TIMEOUT : 0) |
                                     (o.zero ? RDZV_F_ZERO_READ : 0) | extra_flags);
  head.fd = fd;
  uint64_t now = mono_ns();
  if (detail) {
    head.ts_ns = t0;
    head.dur_ns = now - t0;
  } else {
    uint64_t c = coarse_ns();
    head.dur_ns = c > t0 ? c - t0 : 0;
    head.ts_ns = now - head.dur_ns;
  }
  head.ret = r;
  head.err = r < 0 ? err : 0;
  return head;
}

// The socket part of the call's record: the connection's addresses and the timeout that
// applied to the call.
__attribute__((always_inline)) inline rdzv_ev_net io_net(const ConnSlot* slot, bool is_send,
                                                         size_t asked) {
  rdzv_ev_net net = net_fields();
  net.peer = slot->peer;
  net.local = slot->local;
  net.timeout_ms = is_send ? slot->sndtimeo_ms : slot->rcvtimeo_ms;
  if (net.timeout_ms < 0) net.timeout_ms = -1;
  net.size = asked;
  return net;
}

// A call on a store socket outside the steady state (traced_io): counted in the socket's
// totals, and recorded (with a snapshot after a failure) when io_outcome and io_within_limits
// say so.
__attribute__((noinline)) void note_io(rdzv_kind kind, rdzv_op op, int fd, uint16_t info,
                                       size_t asked, bool dontwait, bool detail, uint64_t t0,
                                       ssize_t r, int err, uint16_t extra_flags) {
  RecordScope scope;
  if (forget_if_stale(fd, info)) return;  // the fd now names something else
  ConnSlot* slot = conn_slot(info);
  if ((info & kFdPending) && r >= 0) {  // I/O worked, so the non-blocking connect did
    complete_pending_connect(fd, info, 0, op);
    info = static_cast<uint16_t>(info & ~kFdPending);
  }
  const bool is_send = kind == RDZV_EV_SEND;
  if (slot) {
    __atomic_fetch_add(is_send ? &slot->calls_send : &slot->calls_recv, 1, __ATOMIC_RELAXED);
    if (r > 0)
      __atomic_fetch_add(is_send ? &slot->bytes_sent : &slot->bytes_recv,
                         static_cast<uint64_t>(r), __ATOMIC_RELAXED);
  }
  IoOutcome o;
  if (!io_outcome(fd, info, is_send, asked, dontwait, r, err, &o)) return;
  if (!io_within_limits(slot, &detail, extra_flags, o)) return;
  const EventHead head = io_head(kind, op, fd, detail, t0, r, err, o, extra_flags,
                                 (info & kFdPeer) ? RDZV_F_PEER : RDZV_F_STORE);
  record_net(head, io_net(slot, is_send, asked));
  if (o.failure || o.zero) record_snapshot(Create::IfNeeded, RDZV_SNAP_FAILURE);
}

// Rehearsal (inject.h), only with injection on: store-reset's point reached on this connection.
// It is reset as a peer's reset would leave it: connect(AF_UNSPEC) aborts the TCP connection
// (an RST to the peer, whose next call fails with ECONNRESET, and ECONNRESET pending here, so
// that the caller's call, made next, fails with it), while fd stays open and the same socket
// (an event loop's epoll registration stays valid). Returns the flags of the call's record.
__attribute__((noinline)) uint16_t injected_reset(int fd, const ConnSlot* slot) {
  RecordScope scope;
  const uint64_t bytes = __atomic_load_n(&slot->bytes_sent, __ATOMIC_RELAXED) +
                         __atomic_load_n(&slot->bytes_recv, __ATOMIC_RELAXED);
  if (!inject_store_reset_due(slot->opened_ns, bytes)) return 0;
  struct sockaddr unspec = {};
  unspec.sa_family = AF_UNSPEC;
  if (real::connect()(fd, &unspec, sizeof unspec) != 0) return 0;
  return RDZV_F_INJECTED;
}

// The slot of a blocking store-socket call, filled inline (the steady state's budget).
// Only the fields every slot has: the reader finds the peer and the socket's timeout from the
// records of fd (trace_format.h), which keeps this within the store-socket budget.
__attribute__((always_inline)) inline rdzv_inflight* inflight_io(rdzv_kind kind, rdzv_op op,
                                                                  int fd, uint64_t t0) {
  rdzv_inflight* s = inflight_claim();
  if (__builtin_expect(!s, 0)) return nullptr;
  inflight_fill(s, static_cast<uint8_t>(kind), static_cast<uint8_t>(op), RDZV_F_STORE, fd, t0);
  rdzv_inflight_publish(s);
  return s;
}

template <typename Call>
inline ssize_t traced_io(rdzv_kind kind, rdzv_op op, int fd, uint16_t info, size_t asked,
                         bool dontwait, Call call) {
  ConnSlot* slot = conn_slot(info);  // kFdStore and kFdPeer are only ever set with a slot
  if (in_guard() || !slot) return call();
  const uint16_t injected = (inject_on() && (info & kFdStore)) ? injected_reset(fd, slot) : 0;
  const bool detail = __atomic_load_n(&slot->events_recorded, __ATOMIC_RELAXED) < slot->detail_limit;
  const uint64_t t0 = detail ? mono_ns() : coarse_ns();
  // A blocking receive on a store socket is published in flight while it runs: a store that
  // never answers leaves the thread here, and the slot says so after the process is killed.
  // Sends are not: a TCPStore request is a few bytes that the kernel takes whether or not the
  // server runs (a stopped store leaves its clients in the receive of the reply), and the
  // store-socket budget is measured on a send loop. Peer sockets (gloo's) are not store calls.
  rdzv_inflight* inflight = nullptr;
  if (kind == RDZV_EV_RECV && (info & kFdStore) && !dontwait && !(info & kFdNonblock))
    inflight = inflight_io(kind, op, fd, t0);
  ssize_t r = call();
  inflight_end(inflight);
  // The store still moved bytes to this process (a reply, or a request its server read): past
  // the detail limit no record says so, and a store host serving its own client while the
  // others get nothing is told from a frozen one by this (trace_format.h).
  if (rdzv_store_recv_moves(r, static_cast<uint8_t>(kind), (info & kFdStore) != 0)) note_store_recv(t0);
  if (__builtin_expect(r > 0 && !detail && !injected, 1)) {
    // The steady state of a store connection: count it, record nothing, leave errno alone.
    const bool is_send = kind == RDZV_EV_SEND;
    __atomic_fetch_add(is_send ? &slot->calls_send : &slot->calls_recv, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(is_send ? &slot->bytes_sent : &slot->bytes_recv,
                       static_cast<uint64_t>(r), __ATOMIC_RELAXED);
    return r;
  }
  note_io(kind, op, fd, info, asked, dontwait, detail, t0, r, errno, injected);
  return r;
}

// What the messages of a sendmmsg/recvmmsg ask for, and the bytes of the first n of them (the
// kernel's msg_len): the records carry bytes, as every send/recv record (trace_format.h).
size_t mmsg_asked(const struct mmsghdr* vec, unsigned int vlen) {
  size_t total = 0;
  for (unsigned int i = 0; vec && i < vlen; ++i)
    total += iov_bytes(vec[i].msg_hdr.msg_iov, static_cast<long>(vec[i].msg_hdr.msg_iovlen));
  return total;
}

size_t mmsg_done(const struct mmsghdr* vec, int n) {
  size_t total = 0;
  for (int i = 0; vec && i < n; ++i) total += vec[i].msg_len;
  return total;
}

// As traced_io, with the bytes done as the recorded result; the caller gets the count of
// messages that libc returned, and its errno.
template <typename Call>
inline int traced_mmsg(rdzv_kind kind, rdzv_op op, int fd, uint16_t info,
                       const struct mmsghdr* vec, unsigned int vlen, bool dontwait, Call call) {
  int n = -1;
  traced_io(kind, op, fd, info, mmsg_asked(vec, vlen), dontwait, [&]() -> ssize_t {
    n = call();
    return n < 0 ? -1 : static_cast<ssize_t>(mmsg_done(vec, n));
  });
  return n;
}

}  // namespace

// The exported part of a hook on a call on one descriptor: a leaf that tail-calls libc
// unless fd is a store or peer socket, else calls name##_traced.
#define RDZV_IO_LEAF(name, ret_t, params, args)                                            \
  extern "C" RDZV_EXPORT ret_t name params {                                               \
    auto fn = real::name();                                                                 \
    uint16_t info = fd_info(fd);                                                            \
    if (__builtin_expect(!(info & kFdTracedIo), 1)) return fn args;                         \
    return name##_traced(fn, info, RDZV_UNPAREN args);                                      \
  }

#define RDZV_IO_HOOK(name, ret_t, params, args, kind, op, asked, dontwait)            \
  __attribute__((noinline)) static ret_t name##_traced(real::name##_fn fn, uint16_t info,   \
                                                      RDZV_UNPAREN params) {               \
    return traced_io(kind, op, fd, info, asked, dontwait, [&] { return fn args; });        \
  }                                                                                         \
  RDZV_IO_LEAF(name, ret_t, params, args)

// sendmmsg/recvmmsg: the same, the messages being `vec`, `vlen` of them.
#define RDZV_MMSG_HOOK(name, params, args, kind, op, dontwait)                             \
  __attribute__((noinline)) static int name##_traced(real::name##_fn fn, uint16_t info,     \
                                                    RDZV_UNPAREN params) {                 \
    return traced_mmsg(kind, op, fd, info, vec, vlen, dontwait, [&] { return fn args; });  \
  }                                                                                         \
  RDZV_IO_LEAF(name, int, params, args)

#define RDZV_UNPAREN(...) __VA_ARGS__

// The exported hook is a leaf that tail-calls libc unless fd is a store socket; all other
// work sits in the out-of-line *_traced function so that the common path saves no registers.
RDZV_IO_HOOK(send, ssize_t, (int fd, const void* buf, size_t n, int flags), (fd, buf, n, flags),
             RDZV_EV_SEND, RDZV_OP_SEND, n, flags & MSG_DONTWAIT)
RDZV_IO_HOOK(sendto, ssize_t,
             (int fd, const void* buf, size_t n, int flags, const struct sockaddr* to,
              socklen_t tolen),
             (fd, buf, n, flags, to, tolen), RDZV_EV_SEND, RDZV_OP_SENDTO, n, flags & MSG_DONTWAIT)
RDZV_IO_HOOK(sendmsg, ssize_t, (int fd, const struct msghdr* msg, int flags), (fd, msg, flags),
             RDZV_EV_SEND, RDZV_OP_SENDMSG,
             msg ? iov_bytes(msg->msg_iov, static_cast<long>(msg->msg_iovlen)) : 0,
             flags & MSG_DONTWAIT)
RDZV_IO_HOOK(write, ssize_t, (int fd, const void* buf, size_t n), (fd, buf, n), RDZV_EV_SEND,
             RDZV_OP_WRITE, n, false)
RDZV_IO_HOOK(writev, ssize_t, (int fd, const struct iovec* iov, int iovcnt), (fd, iov, iovcnt),
             RDZV_EV_SEND, RDZV_OP_WRITEV, iov_bytes(iov, iovcnt), false)
RDZV_IO_HOOK(recv, ssize_t, (int fd, void* buf, size_t n, int flags), (fd, buf, n, flags),
             RDZV_EV_RECV, RDZV_OP_RECV, n, flags & MSG_DONTWAIT)
RDZV_IO_HOOK(__recv_chk, ssize_t, (int fd, void* buf, size_t n, size_t buflen, int flags),
             (fd, buf, n, buflen, flags), RDZV_EV_RECV, RDZV_OP_RECV, n, flags & MSG_DONTWAIT)
RDZV_IO_HOOK(recvfrom, ssize_t,
             (int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* fromlen),
             (fd, buf, n, flags, from, fromlen), RDZV_EV_RECV, RDZV_OP_RECVFROM, n,
             flags & MSG_DONTWAIT)
RDZV_IO_HOOK(__recvfrom_chk, ssize_t,
             (int fd, void* buf, size_t n, size_t buflen, int flags, struct sockaddr* from,
              socklen_t* fromlen),
             (fd, buf, n, buflen, flags, from, fromlen), RDZV_EV_RECV, RDZV_OP_RECVFROM, n,
             flags & MSG_DONTWAIT)
RDZV_IO_HOOK(recvmsg, ssize_t, (int fd, struct msghdr* msg, int flags), (fd, msg, flags),
             RDZV_EV_RECV, RDZV_OP_RECVMSG,
             msg ? iov_bytes(msg->msg_iov, static_cast<long>(msg->msg_iovlen)) : 0,
             flags & MSG_DONTWAIT)
RDZV_IO_HOOK(read, ssize_t, (int fd, void* buf, size_t n), (fd, buf, n), RDZV_EV_RECV,
             RDZV_OP_READ, n, false)
RDZV_IO_HOOK(__read_chk, ssize_t, (int fd, void* buf, size_t n, size_t buflen),
             (fd, buf, n, buflen), RDZV_EV_RECV, RDZV_OP_READ, n, false)
RDZV_MMSG_HOOK(sendmmsg, (int fd, struct mmsghdr* vec, unsigned int vlen, int flags),
               (fd, vec, vlen, flags), RDZV_EV_SEND, RDZV_OP_SENDMMSG, flags & MSG_DONTWAIT)
RDZV_MMSG_HOOK(recvmmsg,
               (int fd, struct mmsghdr* vec, unsigned int vlen, int flags, struct timespec* timeout),
               (fd, vec, vlen, flags, timeout), RDZV_EV_RECV, RDZV_OP_RECVMMSG,
               flags & MSG_DONTWAIT)
