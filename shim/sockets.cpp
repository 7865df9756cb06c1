#include "sockets.h"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <string.h>

#include "clock.h"
#include "events.h"
#include "rdzvscope/recorder_core.h"
#include "real_calls.h"

namespace rdzv {

namespace {
bool g_first_store_connect_seen;
}

void snapshot_first_store_connect() {
  bool expected = false;
  if (__atomic_compare_exchange_n(&g_first_store_connect_seen, &expected, true, false,
                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    record_snapshot(Create::IfNeeded, RDZV_SNAP_FIRST_STORE_CONNECT);
}

bool store_reached() { return __atomic_load_n(&g_first_store_connect_seen, __ATOMIC_RELAXED); }

void classify_peer_socket(int fd, uint64_t opened_ns, const rdzv_sockaddr& peer,
                          const rdzv_sockaddr& local) {
  const uint16_t info = fd_info(fd);
  if (info & kFdPeer) return;
  const int open = __atomic_load_n(&g_peer_sockets, __ATOMIC_RELAXED);
  if (!rdzv_is_peer_socket(store_reached(), (info & kFdStore) != 0, static_cast<rdzv_u32>(open)))
    return;
  ConnSlot* slot = conn_slot(info);  // a settled non-blocking connect keeps its own
  if (!slot) slot = conn_slot_claim(fd, false, opened_ns, peer);
  if (!slot) return;  // table full: the socket stays plain
  slot->local = local;
  slot->detail_limit = RDZV_PEER_DETAIL_EVENTS;
  fd_info_set(fd, static_cast<uint16_t>((info & ~(kFdSlotMask | kFdPending)) | kFdPeer |
                                        conn_slot_bits(slot)));
}

void complete_pending_connect(int fd, uint16_t info, int so_error, rdzv_op op) {
  if (forget_if_stale(fd, info)) return;
  ConnSlot* slot = conn_slot(info);
  const bool store = info & kFdStore;
  rdzv_ev_net net = net_fields();
  if (so_error == 0) local_addr_of(fd, &net.local);
  if (slot) {
    slot->local = net.local;
    net.peer = slot->peer;
  }
  const uint64_t opened_ns = slot ? slot->opened_ns : mono_ns();
  if (!store && so_error == 0 && slot) classify_peer_socket(fd, opened_ns, slot->peer, net.local);
  const bool peer = fd_info(fd) & kFdPeer;
  const uint16_t flags = static_cast<uint16_t>((store ? RDZV_F_STORE : 0) | (peer ? RDZV_F_PEER : 0) |
                                               RDZV_F_NONBLOCK);
  record_net(call_head(RDZV_EV_CONNECT_DONE, op, flags, fd, opened_ns, so_error ? -1 : 0, so_error),
             net);
  if (store) {
    fd_info_update(fd, 0, kFdPending);
  } else if (!peer) {
    // Plain TCP sockets keep no slot once their connect is settled.
    fd_info_update(fd, 0, static_cast<uint16_t>(kFdPending | kFdSlotMask));
    if (slot) __atomic_store_n(&slot->owner_fd, -1, __ATOMIC_RELEASE);
  }
  if (so_error == 0 && store) snapshot_first_store_connect();
  if (so_error != 0) record_snapshot(Create::IfNeeded, RDZV_SNAP_FAILURE);
}

void note_socket_closing(int fd, uint16_t info, rdzv_op op, bool already_closed) {
  if (!already_closed && forget_if_stale(fd, info)) return;  // closed behind our back earlier
  ConnSlot* slot = conn_slot(info);
  if ((info & kFdPending) && !already_closed && tcp_state_of(fd) != TCP_SYN_SENT) {
    // The connect finished but nobody asked how (poll said writable, the program went on):
    // the socket is going away, so reading its pending error here takes nothing from anyone.
    int so_error = 0;
    socklen_t len = sizeof so_error;
    real::getsockopt()(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    complete_pending_connect(fd, info, so_error, op);
    info = fd_info(fd);
    slot = conn_slot(info);
  }
  if (info & (kFdStore | kFdPending)) {
    uint64_t now = mono_ns();
    EventHead head{RDZV_EV_CLOSE, static_cast<uint8_t>(op)};
    head.fd = fd;
    head.ts_ns = now;
    if (info & kFdStore) head.flags |= RDZV_F_STORE;
    if (info & kFdPending) head.flags |= RDZV_F_ABANDONED;
    if (Slot s = new_record(Create::OnlyIfOpen, head)) {
      rdzv_ev_close& c = s.rec->u.close;
      if (slot) {
        c.peer = slot->peer;
        c.local = slot->local;
        c.bytes_sent = __atomic_load_n(&slot->bytes_sent, __ATOMIC_RELAXED);
        c.bytes_recv = __atomic_load_n(&slot->bytes_recv, __ATOMIC_RELAXED);
        c.calls_send = __atomic_load_n(&slot->calls_send, __ATOMIC_RELAXED);
        c.calls_recv = __atomic_load_n(&slot->calls_recv, __ATOMIC_RELAXED);
        c.open_ns = now - slot->opened_ns;
      }
      if (!already_closed) c.tcp_state = tcp_state_of(fd);
      commit_record(s);
    }
  }
  fd_forget(fd);
}

}  // namespace rdzv
