// One trace file written by the loader on behalf of one process: the same file the shim
// would write inside it (include/rdzvscope/trace_format.h), made the same way (the recorder
// core, rdzvscope/recorder_core.h), with source = bpf and the ring buffer's lost-event
// counter in the header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inflight.h"
#include "rdzvscope/recorder_core.h"
#include "rdzvscope/trace_format.h"

namespace rdzvscope::bpf {

class TraceFile {
 public:
  TraceFile() = default;
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  ~TraceFile();

  // Creates DIR/<host>.<pid>[.n].rzt as the shim does (rdzv_trace_create: O_EXCL|O_NOFOLLOW,
  // 0600 or 0640 with group_read, blocks allocated), fills the header from /proc/PID, writes
  // the PROC_START record. Returns "" or the reason it failed.
  std::string create(const std::string& dir, int pid, const std::vector<std::uint16_t>& store_ports,
                     std::uint64_t max_bytes, bool group_read);

  // The process exec'd: the header takes the new image's identity, executable, command line
  // and store ports (the analyzer reads a header as the newest image's, as for the shim's
  // files, of which there is one per image).
  void after_exec(const std::vector<std::uint16_t>& store_ports);

  // Stores one record in the next slot and seals it (or counts it in header.dropped).
  void append(const rdzv_record& rec);
  void set_lost(std::uint64_t lost);
  void close();

  // The header's in-flight slots (inflight.h): each pass of the iterator, a record that ends a
  // published call, a thread killed in its call, attach's end.
  void sync_inflight(const std::vector<SlotCall>& calls, const std::set<std::uint32_t>& alive) {
    if (trace_.header) inflight_.sync(trace_.header, calls, alive);
  }
  void call_returned(const rdzv_record& r) {
    if (trace_.header) inflight_.returned(trace_.header, r);
  }
  void died_in_call(std::uint32_t tid, const std::optional<SlotCall>& call) {
    if (trace_.header) inflight_.died(trace_.header, tid, call);
  }
  // The kernel's latest store receive of the process (store_recv_last), as the shim's header.
  void store_recv(std::uint64_t start_ns) {
    if (trace_.header && start_ns) rdzv_note_store_recv(trace_.header, start_ns);
  }
  void finish_inflight() {
    if (trace_.header) inflight_.finish(trace_.header);
  }

  const std::string& path() const { return path_; }
  std::uint64_t events() const { return events_; }
  int pid() const { return pid_; }
  std::uint64_t start_realtime_ns() const {
    return trace_.header ? trace_.header->start_realtime_ns : 0;
  }

 private:
  rdzv_trace trace_{};
  InflightSlots inflight_;
  std::uint64_t events_ = 0;
  int pid_ = -1;
  std::string path_;
};

}  // namespace rdzvscope::bpf
