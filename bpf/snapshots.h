// Resource snapshots for attach's traces: the shim takes one inside the process at its first
// store connect and at failures (shim/events.cpp: record_snapshot); the loader takes the same
// from /proc/PID when the kernel's record of such an event reaches it. They tell whether a
// late rank was computing, reading or waiting before it joined.
#pragma once

#include <cstdint>
#include <optional>

#include "rdzvscope/trace_format.h"

namespace rdzvscope::bpf {

class SnapshotPolicy {
 public:
  // The snapshot a record calls for, as the shim decides it (failure snapshots at most one
  // per 250 ms per process).
  std::optional<rdzv_snapshot_reason> after(const rdzv_record& rec, std::uint64_t now_ns);

 private:
  bool first_store_connect_seen_ = false;
  std::uint64_t last_failure_ns_ = 0;
};

// A SNAPSHOT record of `pid` now (/proc/PID/stat, io, status); false when the process is gone.
bool read_snapshot(int pid, std::uint64_t start_realtime_ns, rdzv_snapshot_reason reason, rdzv_record* out);

}  // namespace rdzvscope::bpf
