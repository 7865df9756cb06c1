// What /proc/PID says about a process we attach to: the header facts the shim takes from
// inside the process (identity environment, command line, start time), read from outside,
// the same way (rdzvscope/recorder_core.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdzvscope/trace_format.h"

namespace rdzvscope::bpf {

// Fills pid, ppid, clocks, start time, host, exe, cmdline (rdzv_process_fill) and the identity
// (rdzv_identity_fill, from /proc/PID/environ) of `h`. Returns false when /proc/PID is gone
// (the header then holds the pid and the clocks only).
bool fill_header_from_proc(int pid, rdzv_file_header* h);

// The store ports the shim would use for this process (rdzv_ports_from_env on
// /proc/PID/environ: MASTER_PORT, PET_RDZV_ENDPOINT's port, 29400, 29500, RDZVSCOPE_PORTS; at
// most RDZV_MAX_STORE_PORTS), then those of `extra` not among them yet (all of them).
std::vector<std::uint16_t> store_ports_of(int pid, const std::vector<std::uint16_t>& extra);

// The libc the process has mapped, as a path that works from our mount namespace
// (/proc/PID/root/...); "" when none is found.
std::string libc_path_of(int pid);

// Pids (tgids) whose /proc/PID/comm equals `comm` (cut to 15 characters as the kernel does).
std::vector<int> pids_with_comm(const std::string& comm);

bool process_exists(int pid);

// Up to `limit` bytes of a (/proc) file; "" when it cannot be read.
std::string read_file(const std::string& path, std::size_t limit = 1 << 20);

// Fields after the command name of /proc/PID/stat (which may hold spaces and parentheses):
// [0] is field 3 (state).
std::vector<std::string> stat_fields(int pid);

}  // namespace rdzvscope::bpf
