// rdzvscope attach, the user side: loads rdzv.bpf.c (open -> rodata -> load -> attach),
// drains its ring buffer into one trace file per process, and stops when asked.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rdzvscope/recorder_core.h"

namespace spdlog {
class logger;
}

namespace rdzvscope::bpf {

struct AttachOptions {
  std::vector<int> pids;
  std::vector<std::string> comms;
  bool all = false;
  std::vector<std::uint16_t> ports;  // --port: per-call events on these only; also store ports
  std::string out_dir;               // exists and is writable
  double duration_s = 0;             // 0: until *stop
  // Per trace file, as the shim's RDZVSCOPE_MAX_MB: at most RDZV_TRACE_MAX_MB MiB.
  std::uint64_t max_bytes = std::uint64_t{RDZV_TRACE_DEFAULT_MAX_MB} << 20;
  // Per store socket: the first io_events send/recv calls are recorded one by one (0: every
  // call), as the shim does with RDZV_IO_DETAIL_EVENTS; after that only failures and 0-byte
  // reads (RDZV_IO_FAILURE_EVENTS of them).
  std::uint32_t io_events = RDZV_IO_DETAIL_EVENTS;
  // Where the loader's own diagnostics go: the CLI's logger (analyzer/cli/diagnostics.h), so
  // that they read "rdzvscope attach: ..." and follow --quiet/--verbose. A file it cannot
  // create is a warning; libbpf's messages are debug (its verifier logs trace), or info when
  // RDZVSCOPE_BPF_VERBOSE is set. None: nothing is said.
  std::shared_ptr<spdlog::logger> log;
};

// What attach is following, for a status line while it runs.
struct AttachProgress {
  std::size_t processes = 0;    // trace files open
  std::size_t ports_learnt = 0; // the kernel's table of store ports learnt since the start (learnt_ports)
  std::uint64_t events = 0;
  std::uint64_t lost = 0;
};

struct PidCount {
  int pid;
  std::uint64_t events;
  std::string path;
};

struct AttachResult {
  int exit_code = 0;  // 0, or 2 with `error` (no root, no BPF, no such process...)
  std::string error;
  std::vector<PidCount> per_pid;
  std::uint64_t lost = 0;
};

// Runs until *stop becomes nonzero (a signal handler sets it) or the duration has passed.
// `on_ready` is called once the probes are attached (the CLI says so on stderr).
// `on_progress`, when given, is called about once a second while recording.
AttachResult attach_and_record(const AttachOptions& opt, volatile std::sig_atomic_t* stop,
                               void (*on_ready)(const AttachResult& targets, const AttachOptions&),
                               void (*on_progress)(const AttachProgress&) = nullptr);

}  // namespace rdzvscope::bpf
