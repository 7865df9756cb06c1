#include "snapshots.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "proc_info.h"
#include "rdzvscope/recorder_core.h"

namespace rdzvscope::bpf {
namespace {

bool is_failure(const rdzv_record& r) {
  switch (r.kind) {
    case RDZV_EV_CONNECT:
      return r.ret < 0 && r.err != EINPROGRESS && r.err != EINTR;
    case RDZV_EV_CONNECT_DONE:
    case RDZV_EV_BIND:
    case RDZV_EV_LISTEN:
      return r.ret < 0;
    case RDZV_EV_SEND:
    case RDZV_EV_RECV:
      return r.ret < 0 || (r.flags & RDZV_F_ZERO_READ);
    default:
      return false;
  }
}

}  // namespace

std::optional<rdzv_snapshot_reason> SnapshotPolicy::after(const rdzv_record& r, std::uint64_t now_ns) {
  const bool connected = (r.kind == RDZV_EV_CONNECT || r.kind == RDZV_EV_CONNECT_DONE) && r.ret == 0;
  if (connected && (r.flags & RDZV_F_STORE) && !first_store_connect_seen_) {
    first_store_connect_seen_ = true;
    return RDZV_SNAP_FIRST_STORE_CONNECT;
  }
  if (!is_failure(r)) return std::nullopt;
  if (!rdzv_failure_snapshot_due(&last_failure_ns_, now_ns)) return std::nullopt;
  return RDZV_SNAP_FAILURE;
}

bool read_snapshot(int pid, std::uint64_t start_realtime_ns, rdzv_snapshot_reason reason, rdzv_record* out) {
  const std::string dir = "/proc/" + std::to_string(pid);
  const auto stat = stat_fields(pid);
  if (stat.size() < 13) return false;  // gone
  std::memset(out, 0, sizeof *out);
  out->kind = RDZV_EV_SNAPSHOT;
  out->op = static_cast<std::uint8_t>(reason);
  out->tid = static_cast<std::uint32_t>(pid);
  out->ts_ns = rdzv_clock_ns(CLOCK_MONOTONIC);
  out->fd = -1;
  rdzv_ev_snapshot& s = out->u.snap;
  // stat fields 14 and 15 (utime, stime of the whole process) are stat[11] and stat[12].
  const long tick = sysconf(_SC_CLK_TCK);
  const std::uint64_t us_per_tick = tick > 0 ? 1000000 / static_cast<std::uint64_t>(tick) : 10000;
  s.utime_us = std::strtoull(stat[11].c_str(), nullptr, 10) * us_per_tick;
  s.stime_us = std::strtoull(stat[12].c_str(), nullptr, 10) * us_per_tick;
  const std::string io = read_file(dir + "/io", 4096);
  s.rchar = rdzv_proc_field(io.c_str(), "rchar:");
  s.wchar = rdzv_proc_field(io.c_str(), "wchar:");
  s.read_bytes = rdzv_proc_field(io.c_str(), "\nread_bytes:");
  s.write_bytes = rdzv_proc_field(io.c_str(), "\nwrite_bytes:");
  // The main thread's context switches and the peak RSS (the shim's getrusage counts all
  // threads; a rank waits and computes on its main thread).
  const std::string status = read_file(dir + "/status", 16384);
  s.vol_ctxsw = rdzv_proc_field(status.c_str(), "\nvoluntary_ctxt_switches:");
  s.invol_ctxsw = rdzv_proc_field(status.c_str(), "\nnonvoluntary_ctxt_switches:");
  s.maxrss_kb = rdzv_proc_field(status.c_str(), "\nVmHWM:");
  const std::uint64_t rt = rdzv_clock_ns(CLOCK_REALTIME);
  s.since_start_ns = start_realtime_ns && rt > start_realtime_ns ? rt - start_realtime_ns : 0;
  return true;
}

}  // namespace rdzvscope::bpf
