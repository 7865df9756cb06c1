// One call a traced process made, decoded once from its trace record: when it began on the
// wall clock, how it ended, and the details of its kind, with strings already read out of
// their fixed-size fields. Nothing after decoding reads a raw record (trace_format.h's
// union): a rule asks an event for the body of its kind, and gets an empty one for any
// other kind rather than reinterpreted bytes.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include <rdzvscope/trace_format.h>

namespace rdzvscope {

// getaddrinfo, gethostbyname*, getnameinfo (RDZV_EV_RESOLVE). The result code is the
// event's `ret` (EAI_* or h_errno, by `op`); RDZV_F_PASSIVE and RDZV_F_REVERSE are flags.
struct ResolveCall {
  std::string host;     // the name looked up (an address for a reverse lookup)
  std::string service;  // the port or service name given with it
  std::uint32_t addresses = 0;  // how many addresses came back
  rdzv_sockaddr first{};        // the first of them
};

// A socket call: connect and its outcome, bind, listen, accept, send/recv (store sockets),
// a wait that timed out, a timeout set with setsockopt, a TCP state change seen by attach.
struct SocketCall {
  rdzv_sockaddr peer{}, local{};
  std::uint64_t size = 0;       // bytes asked (send/recv), backlog (listen), optname (sockopt)
  std::int64_t timeout_ms = -1; // of a wait, or SO_RCVTIMEO/SO_SNDTIMEO; -1 none or infinite
  std::uint32_t waited_fds = 0; // a wait: how many descriptors it waited on
  std::uint32_t tcp_state = 0;  // when known: linux TCP_ESTABLISHED = 1 ...; for TCP_STATE
                                // records the new state, `size` the old one
};

// The close of a store socket (its byte and call totals), or of a connect still pending.
struct CloseCall {
  rdzv_sockaddr peer{}, local{};
  std::uint64_t bytes_sent = 0, bytes_received = 0;
  std::uint64_t sends = 0, receives = 0;
  std::uint64_t open_ns = 0;    // since the connect or accept that made the socket
  std::uint32_t tcp_state = 0;  // at close
};

// Process life: start, exit, fork, exec, spawn.
struct ProcessCall {
  std::int32_t status = 0;     // exit code, or the signal's number
  std::int32_t child_pid = 0;  // fork and spawn
  std::string path;            // exec and spawn
};

// Resource use at a moment (first store connect, a failure, exit): the numbers as recorded.
using Snapshot = rdzv_ev_snapshot;

struct Event {
  std::int64_t wall_ns = 0;  // when the call began, CLOCK_REALTIME
  std::uint64_t dur_ns = 0;
  std::int64_t ret = 0;
  std::int32_t fd = -1;
  std::int32_t err = 0;      // errno after the call when it failed
  std::uint32_t tid = 0;
  std::uint8_t kind = 0;     // enum rdzv_kind; a value this reader does not know stays as is
  std::uint8_t op = 0;       // enum rdzv_op (the snapshot's reason for RDZV_EV_SNAPSHOT)
  std::uint16_t flags = 0;   // RDZV_F_*

  std::variant<std::monostate, ResolveCall, SocketCall, CloseCall, ProcessCall, Snapshot> body;

  // The body of this event's kind; an empty one for an event of another kind.
  const ResolveCall& resolve() const;
  const SocketCall& socket() const;
  const CloseCall& close() const;
  const ProcessCall& process() const;
  const Snapshot& snapshot() const;
  // The socket's addresses, for a socket call and for a close alike (a connect given up while
  // pending is closed: its close names where it was going); none for other kinds.
  const rdzv_sockaddr& peer() const;
  const rdzv_sockaddr& local() const;

  bool has(std::uint16_t flag) const { return (flags & flag) != 0; }
  bool on_store_socket() const { return has(RDZV_F_STORE); }
  // A connect, or the outcome of a non-blocking one.
  bool is_connect() const { return kind == RDZV_EV_CONNECT || kind == RDZV_EV_CONNECT_DONE; }
  // The call worked: ret 0 and no errno (connect, bind, listen, resolve).
  bool succeeded() const { return ret == 0 && err == 0; }
};

// The event a record describes, with its begin time already on the wall clock.
Event decode_event(std::int64_t wall_ns, const rdzv_record& r);

// A call in flight (trace_format.h: struct rdzv_inflight) as an event that has begun and not
// returned: ret 0, dur 0, its body what the slot holds (a socket call's peer and timeout, a
// lookup's host); kept apart from the events (Process::inflight), never taken for a result.
Event decode_inflight(std::int64_t wall_ns, const rdzv_inflight& s);

}  // namespace rdzvscope
