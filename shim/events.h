// Building records: the fields every event has, addresses, and resource snapshots.
#pragma once

#include <stdint.h>
#include <sys/socket.h>

#include "rdzvscope/trace_format.h"
#include "trace_writer.h"

namespace rdzv {

struct EventHead {
  uint8_t kind;
  uint8_t op;
  uint16_t flags = 0;
  int fd = -1;
  uint64_t ts_ns = 0;
  uint64_t dur_ns = 0;
  int64_t ret = 0;
  int err = 0;
};

// Reserves a record and fills in the common fields; the caller adds the payload and commits.
Slot new_record(Create create, const EventHead& head);

// The head of an event for a call that began at t0 (monotonic) and returned r with errno err;
// err is kept only when the call failed.
EventHead call_head(rdzv_kind kind, rdzv_op op, uint16_t flags, int fd, uint64_t t0, int64_t r,
                    int err);

// Socket payload with nothing set yet (timeout -1: none).
inline rdzv_ev_net net_fields() {
  rdzv_ev_net n{};
  n.timeout_ms = -1;
  return n;
}

// Writes a socket event (creating the trace file when needed).
void record_net(const EventHead& head, const rdzv_ev_net& net);

// sockaddr -> trace address; family 0 when sa is null, too short or not AF_INET/AF_INET6.
void to_trace_addr(const struct sockaddr* sa, socklen_t len, rdzv_sockaddr* out);
inline void to_trace_addr(const struct sockaddr_storage& ss, socklen_t len, rdzv_sockaddr* out) {
  to_trace_addr(reinterpret_cast<const struct sockaddr*>(&ss), len, out);
}

// The socket's own address (getsockname) and TCP state, both optional extras.
void local_addr_of(int fd, rdzv_sockaddr* out);
uint32_t tcp_state_of(int fd);

// An AF_INET/AF_INET6 stream socket? (resolver's UDP and nscd's AF_UNIX sockets are not.)
bool is_tcp_socket(int fd);
bool is_nonblocking(int fd);

// A snapshot of the process's own counters (CPU, I/O bytes, context switches). Failure
// snapshots are rate limited so that a retry loop cannot fill the file with them.
void record_snapshot(Create create, rdzv_snapshot_reason reason);

}  // namespace rdzv
