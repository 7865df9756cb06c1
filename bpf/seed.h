// The store sockets a process already has when attach starts. The kernel's store-socket table
// (rdzv.h: struct store_sock) learns sockets from connect/bind/accept, which for a job that is
// already hung happened long before: without these entries attach would record nothing on
// exactly the connections of a hung rank. Found from outside, in /proc: the process's
// descriptors (/proc/PID/fd -> socket:[INODE]) and its network namespace's TCP tables
// (/proc/PID/net/tcp, tcp6: addresses, ports, state by inode).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdzvscope/trace_format.h"

namespace rdzvscope::bpf {

// `len` bytes of `pid`'s memory at `addr` ("" when they cannot be read: the call ended, the
// address is bad).
std::string read_memory(int pid, std::uint64_t addr, std::size_t len);

// The entries of a directory whose names are numbers (/proc, /proc/PID/fd, /proc/PID/task).
std::vector<long> numbered_entries(const std::string& dir);

struct FoundSocket {
  int fd = -1;
  std::uint64_t inode = 0;
  rdzv_sockaddr local{};
  rdzv_sockaddr peer{};  // family 0 for a listener
  unsigned tcp_state = 0;  // linux TCP_* (1 ESTABLISHED, 8 CLOSE_WAIT, 10 LISTEN...)
};

// The TCP sockets of one /proc/net/tcp or tcp6 text (`v6` for the latter), by inode; lines
// that do not parse are skipped. Exposed for the tests.
std::vector<FoundSocket> parse_proc_net_tcp(const std::string& text, bool v6);

// The descriptors of `pid` that hold a TCP socket whose local or remote port is one of
// `ports`, in a state with a connection or a listener, or in SYN_SENT towards a store port (a
// hung rank's connect in progress: its outcome is recorded when the kernel decides it).
// SYN_RECV and TIME_WAIT are left out.
std::vector<FoundSocket> find_store_sockets(int pid, const std::vector<std::uint16_t>& ports);

// The threads of `pid` blocked in a call on one of `found` (/proc/PID/task/TID/syscall, read
// without stopping them): read/write/readv/writev/send*/recv* on one of those descriptors, or
// poll. Their sys_enter was never seen; the kernel rebuilds the record at their exit. And the
// waits the kernel cannot rebuild at exit, because it has written over their arguments by
// then (ppoll's and select's timeouts, select's sets) or never had them (epoll's descriptors):
// ppoll, select, pselect6 and the epoll waits with a found store socket among what they wait
// on, read now from the process's memory (/proc/PID/mem) and, for epoll, from
// /proc/PID/fdinfo/EPFD. For those, wait_fd and timeout_ms are set (timeout -1: unknown).
struct BlockedCall {
  int tid;
  long nr;                       // x86_64 syscall number
  int wait_fd = -1;              // a wait's found store socket; -1 for the others
  std::int64_t timeout_ms = -1;  // a wait's timeout, read before it ends; -1 unknown or none
  bool glibc_select = false;     // pselect6 without a signal mask: glibc's select(), named so
  // The others (rebuilt at their exit): the descriptor of the call (a poll's first found store
  // socket, -1 when it waits on none) and a poll's timeout.
  int call_fd = -1;
  std::int64_t call_timeout_ms = -1;
};
std::vector<BlockedCall> blocked_calls(int pid, const std::vector<FoundSocket>& found);

// A wait's record as far as it is known when found (kind POLL, op, fd, timeout; flags store
// and preexisting); the kernel completes and writes it if the wait times out.
rdzv_record found_wait_record(const BlockedCall& b, std::uint64_t now_ns);

// The record that says so in the process's trace (RDZV_F_PREEXISTING): LISTEN for a
// listener, CONNECT when the remote port is a store port (ret -1, EINPROGRESS in SYN_SENT),
// else ACCEPT (the store's end of a client's connection). Dated `now_ns` (CLOCK_MONOTONIC, as
// the kernel's records).
rdzv_record found_record(int pid, const FoundSocket& s, const std::vector<std::uint16_t>& ports,
                         std::uint64_t now_ns);

}  // namespace rdzvscope::bpf
