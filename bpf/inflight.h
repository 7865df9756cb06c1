// Calls in flight under attach (trace_format.h, struct rdzv_inflight): the calls a target's
// threads are in, as the kernel side holds them between their enter and their exit (read by
// the iterator rdzv_calls_in_flight on each drain and when attach stops), go into the same
// in-flight slots of the process's file that the shim fills from inside the process, chosen
// by the same rule (rdzv_inflight_publishes) and written by the same code (the recorder
// core's rdzv_inflight_begin_*), so that `watch` sees them live and `analyze` after a kill.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rdzv.h"

namespace rdzvscope::bpf {

// One call as its slot will hold it.
struct SlotCall {
  std::uint32_t tid = 0;
  std::uint8_t kind = 0;
  std::uint8_t op = 0;
  std::uint16_t flags = 0;
  std::int32_t fd = -1;
  std::uint64_t start_ns = 0;
  std::int64_t timeout_ms = -1;
  rdzv_sockaddr peer{};
  std::string host;  // resolver calls
};

// What making a slot asks of the kernel's tables and of the loader.
struct CallContext {
  // The store socket (pid, fd) of the kernel's table, or false.
  std::function<bool(int pid, int fd, store_sock* out)> store_sock_of;
  // Whether a connect to a store port is in progress in pid (epoll waits, as the shim).
  std::function<bool(int pid)> connect_pending;
  // A call found blocked at attach (seed.cpp), which the kernel rebuilds only at its exit:
  // its slot as the loader made it then, or none.
  std::function<std::optional<SlotCall>(int pid, std::uint32_t tid)> found_call;
  // `len` bytes of pid's memory (a poll's descriptors), "" when unreadable.
  std::function<std::string(int pid, std::uint64_t addr, std::size_t len)> read_memory;
};

// The slot of one call the iterator reported, or none when the rule publishes no such call (a
// send, a setsockopt, a close, a wait on no store socket...).
std::optional<SlotCall> slot_of(const rdzv_bpf_inflight& in, const CallContext& ctx);

// The in-flight slots of one process's file, kept equal to what the kernel holds. Only the
// loader writes them (the process is not under the shim).
class InflightSlots {
 public:
  // One pass of the iterator: `calls` are the process's calls in flight now, `alive` every
  // thread of it seen. A slot whose call ended is emptied; a thread no longer seen may have
  // died in its call (its notice, `died`, can come a drain later): its slot is emptied only if
  // it is still unseen at the next pass without a notice.
  void sync(rdzv_file_header* h, const std::vector<SlotCall>& calls, const std::set<std::uint32_t>& alive);
  // A record of thread r.tid dated from the call's start: that call returned.
  void returned(rdzv_file_header* h, const rdzv_record& r);
  // The thread was killed in its call: its slot stays for good (made from `call` when the
  // thread had none yet).
  void died(rdzv_file_header* h, std::uint32_t tid, const std::optional<SlotCall>& call);
  // attach stops: the slots of threads gone at the last pass, without a notice, are emptied.
  void finish(rdzv_file_header* h);

 private:
  std::set<std::uint32_t> final_;    // threads that died in their call
  std::set<std::uint32_t> missing_;  // threads with a slot, not seen at the last pass
};

}  // namespace rdzvscope::bpf
