// connect, bind, listen, accept/accept4: recorded for every TCP socket; a socket whose peer
// or local port is a store port becomes a store socket (per-call events from then on).
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "clock.h"
#include "events.h"
#include "fd_table.h"
#include "guard.h"
#include "hook.h"
#include "inflight.h"
#include "inject.h"
#include "real_calls.h"
#include "sockets.h"

using namespace rdzv;

namespace {

bool inet_family(const struct sockaddr* sa) {
  return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

uint16_t socket_flags(bool store, bool nonblock) {
  return static_cast<uint16_t>((store ? RDZV_F_STORE : 0) | (nonblock ? RDZV_F_NONBLOCK : 0));
}

// A connect() on a socket whose non-blocking connect is still pending is how some programs
// poll for the outcome: EALREADY/EINPROGRESS = not yet, EISCONN = connected, else failed.
void repeated_connect(int fd, uint16_t info, int r, int err) {
  if (r < 0 && (err == EALREADY || err == EINPROGRESS || err == EINTR)) return;
  complete_pending_connect(fd, info, (r == 0 || err == EISCONN) ? 0 : err, RDZV_OP_CONNECT);
}

void record_connect(int fd, const struct sockaddr* addr, socklen_t len, bool nonblock,
                    uint64_t t0, int r, int err, uint16_t extra_flags = 0) {
  rdzv_sockaddr peer;
  to_trace_addr(addr, len, &peer);
  const bool store = is_store_port(peer.port);
  const bool pending = r < 0 && err == EINPROGRESS;
  uint16_t info = static_cast<uint16_t>(kFdTcp | (nonblock ? kFdNonblock : 0) |
                                        (store ? kFdStore : 0));
  ConnSlot* slot = nullptr;
  if (store || pending) {
    slot = conn_slot_claim(fd, store, t0, peer);
    if (store && !slot) info = static_cast<uint16_t>(info & ~kFdStore);  // table full
  }
  rdzv_sockaddr local{};
  if (r == 0) local_addr_of(fd, &local);
  if (slot) slot->local = local;
  if (pending && slot) info |= kFdPending;
  if (r == 0 || pending) fd_info_set(fd, static_cast<uint16_t>(info | conn_slot_bits(slot)));
  else {
    if (slot) __atomic_store_n(&slot->owner_fd, -1, __ATOMIC_RELEASE);
    fd_info_set(fd, static_cast<uint16_t>(info & ~kFdStore));
  }
  if (r == 0 && !store) {
    classify_peer_socket(fd, t0, peer, local);
    if (fd_info(fd) & kFdPeer) extra_flags |= RDZV_F_PEER;
  }

  rdzv_ev_net net = net_fields();
  net.peer = peer;
  net.local = local;
  record_net(call_head(RDZV_EV_CONNECT, RDZV_OP_CONNECT,
                       static_cast<uint16_t>(socket_flags(store, nonblock) | extra_flags), fd, t0,
                       r, err),
             net);
  if (store) record_torch_version_once();
  if (r == 0 && store) snapshot_first_store_connect();
  if (r < 0 && !pending && err != EINTR) record_snapshot(Create::IfNeeded, RDZV_SNAP_FAILURE);
}

void record_accept(int listen_fd, uint16_t listen_info, int r, int err, bool nonblock,
                   rdzv_op op, uint64_t t0) {
  if (r < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) return;
  const bool store = listen_info & kFdStore;
  rdzv_sockaddr peer{}, local{};
  if (r >= 0) {
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getpeername(r, reinterpret_cast<sockaddr*>(&ss), &len) == 0) to_trace_addr(ss, len, &peer);
    local_addr_of(r, &local);
    ConnSlot* slot = store ? conn_slot_claim(r, true, t0, peer) : nullptr;
    if (slot) slot->local = local;
    fd_info_set(r, static_cast<uint16_t>(kFdTcp | (nonblock ? kFdNonblock : 0) |
                                         (slot ? kFdStore : 0) | conn_slot_bits(slot)));
    if (!store) classify_peer_socket(r, t0, peer, local);
  }
  const bool peer_socket = r >= 0 && (fd_info(r) & kFdPeer);
  rdzv_ev_net net = net_fields();
  net.peer = peer;
  net.local = local;
  net.size = static_cast<uint64_t>(listen_fd);
  record_net(call_head(RDZV_EV_ACCEPT, op,
                       static_cast<uint16_t>(socket_flags(store, nonblock) | (peer_socket ? RDZV_F_PEER : 0)),
                       r >= 0 ? r : listen_fd, t0, r, err),
             net);
}

void record_bind(int fd, const struct sockaddr* addr, socklen_t len, uint64_t t0, int r,
                 int err, uint16_t extra_flags = 0) {
  if (!is_tcp_socket(fd)) return;
  rdzv_ev_net net = net_fields();
  to_trace_addr(addr, len, &net.local);
  if (r == 0 && net.local.port == 0) local_addr_of(fd, &net.local);  // ephemeral port picked
  const bool store = is_store_port(net.local.port);
  ConnSlot* slot = (r == 0 && store) ? conn_slot_claim(fd, true, t0, rdzv_sockaddr{}) : nullptr;
  if (slot) slot->local = net.local;
  fd_info_set(fd, static_cast<uint16_t>(kFdTcp | (slot ? kFdStore : 0) | conn_slot_bits(slot)));
  record_net(call_head(RDZV_EV_BIND, RDZV_OP_BIND,
                       static_cast<uint16_t>(socket_flags(store, false) | extra_flags), fd, t0, r,
                       err),
             net);
  if (store) record_torch_version_once();
  if (r < 0) record_snapshot(Create::IfNeeded, RDZV_SNAP_FAILURE);
}

void record_listen(int fd, uint16_t info, int backlog, uint64_t t0, int r, int err) {
  rdzv_ev_net net = net_fields();
  local_addr_of(fd, &net.local);
  net.size = static_cast<uint64_t>(backlog);
  record_net(call_head(RDZV_EV_LISTEN, RDZV_OP_LISTEN, socket_flags(info & kFdStore, false), fd,
                       t0, r, err),
             net);
  if (r < 0) record_snapshot(Create::IfNeeded, RDZV_SNAP_FAILURE);
}

// Rehearsal (inject.h), only with injection on: a store connect held back, or failed without
// being made. Returns true when the call was answered here (*r set, errno set for the caller).
bool injected_connect(int fd, const struct sockaddr* addr, socklen_t len, bool nonblock,
                      uint16_t* extra_flags, int* r) {
  ConnectFault f;
  {
    RecordScope scope;
    rdzv_sockaddr peer;
    to_trace_addr(addr, len, &peer);
    if (!is_store_port(peer.port)) return false;
    f = inject_store_connect();  // sleeps first when this one is held back
  }
  if (f.held_back) *extra_flags = RDZV_F_INJECTED;
  if (!f.err) return false;
  const uint64_t t0 = mono_ns();
  if (f.block_ns) {
    RecordScope scope;
    inject_sleep(f.block_ns);
  }
  errno = f.err;
  *r = -1;
  RecordScope scope;  // gives the caller errno = f.err back
  record_connect(fd, addr, len, nonblock, t0, -1, f.err, RDZV_F_INJECTED);
  return true;
}

bool injected_bind(int fd, const struct sockaddr* addr, socklen_t len, int* r) {
  {
    RecordScope scope;
    rdzv_sockaddr local;
    to_trace_addr(addr, len, &local);
    if (!is_store_port(local.port) || !inject_bind_taken() || !is_tcp_socket(fd)) return false;
  }
  const uint64_t t0 = mono_ns();
  errno = EADDRINUSE;
  *r = -1;
  RecordScope scope;
  record_bind(fd, addr, len, t0, -1, EADDRINUSE, RDZV_F_INJECTED);
  return true;
}

// A blocking connect to a store port is published in flight while it runs (a store host whose
// packets are dropped holds it for minutes); a non-blocking one waits in poll instead.
rdzv_inflight* inflight_connect(int fd, const struct sockaddr* addr, socklen_t len,
                                uint64_t t0) {
  RecordScope scope;
  rdzv_sockaddr peer;
  to_trace_addr(addr, len, &peer);
  if (!is_store_port(peer.port) || !ensure_trace_open()) return nullptr;
  return inflight_begin_socket(RDZV_EV_CONNECT, RDZV_OP_CONNECT, RDZV_F_STORE, fd, t0, -1, &peer);
}

// An accept on a blocking store listener: the store host waiting for a rank.
rdzv_inflight* inflight_accept(int fd, uint16_t info, rdzv_op op, uint64_t t0) {
  if (!(info & kFdStore) || (info & kFdNonblock)) return nullptr;
  RecordScope scope;
  if (forget_if_stale(fd, info)) return nullptr;
  const ConnSlot* slot = conn_slot(info);
  return inflight_begin_socket(RDZV_EV_ACCEPT, op, RDZV_F_STORE, fd, t0, -1,
                               slot ? &slot->local : nullptr);
}

}  // namespace

// The hooks, in the shim's one form (hook.h): the real call, then the recorder in a
// RecordScope (guard held, the call's errno given back to the caller).
extern "C" {

RDZV_EXPORT int connect(int fd, const struct sockaddr* addr, socklen_t len) {
  auto fn = real::connect();
  if (in_guard() || !inet_family(addr)) return fn(fd, addr, len);
  uint16_t info = fd_info(fd);
  if (info & kFdPending) {
    const int r = fn(fd, addr, len);
    RecordScope scope;
    repeated_connect(fd, info, r, scope.call_errno());
    return r;
  }
  bool tcp, nonblock = false;
  {
    RecordScope scope;  // nothing is recorded yet: the socket is looked at first
    tcp = is_tcp_socket(fd);
    if (tcp) nonblock = is_nonblocking(fd);
  }
  if (!tcp) return fn(fd, addr, len);  // UDP "connect" (the resolver's DNS sockets)
  uint16_t extra_flags = 0;
  int injected_r = -1;
  if (inject_on() && injected_connect(fd, addr, len, nonblock, &extra_flags, &injected_r))
    return injected_r;
  const uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = nonblock ? nullptr : inflight_connect(fd, addr, len, t0);
  const int r = fn(fd, addr, len);
  inflight_end(inflight);
  RecordScope scope;
  record_connect(fd, addr, len, nonblock, t0, r, scope.call_errno(), extra_flags);
  return r;
}

RDZV_EXPORT int bind(int fd, const struct sockaddr* addr, socklen_t len) {
  auto fn = real::bind();
  if (in_guard() || !inet_family(addr)) return fn(fd, addr, len);
  int injected_r = -1;
  if (inject_on() && injected_bind(fd, addr, len, &injected_r)) return injected_r;
  const uint64_t t0 = mono_ns();
  const int r = fn(fd, addr, len);
  RecordScope scope;
  record_bind(fd, addr, len, t0, r, scope.call_errno());
  return r;
}

RDZV_EXPORT int listen(int fd, int backlog) {
  auto fn = real::listen();
  uint16_t info = fd_info(fd);
  if (in_guard() || !(info & kFdTcp)) return fn(fd, backlog);
  const uint64_t t0 = mono_ns();
  const int r = fn(fd, backlog);
  RecordScope scope;
  record_listen(fd, info, backlog, t0, r, scope.call_errno());
  return r;
}

RDZV_EXPORT int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  auto fn = real::accept();
  uint16_t info = fd_info(fd);
  if (in_guard() || !(info & kFdTcp)) return fn(fd, addr, len);
  const uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = inflight_accept(fd, info, RDZV_OP_ACCEPT, t0);
  const int r = fn(fd, addr, len);
  inflight_end(inflight);
  RecordScope scope;
  record_accept(fd, info, r, scope.call_errno(), false, RDZV_OP_ACCEPT, t0);
  return r;
}

RDZV_EXPORT int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  auto fn = real::accept4();
  uint16_t info = fd_info(fd);
  if (in_guard() || !(info & kFdTcp)) return fn(fd, addr, len, flags);
  const uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = inflight_accept(fd, info, RDZV_OP_ACCEPT4, t0);
  const int r = fn(fd, addr, len, flags);
  inflight_end(inflight);
  RecordScope scope;
  record_accept(fd, info, r, scope.call_errno(), flags & SOCK_NONBLOCK, RDZV_OP_ACCEPT4, t0);
  return r;
}

}  // extern "C"
