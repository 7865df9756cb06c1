// Facts about this process for the trace header: identity from the environment, host,
// executable, command line and start time. Read once, when the trace file is created.
#pragma once

#include "rdzvscope/trace_format.h"

namespace rdzv {

void fill_identity(rdzv_identity* id);

// host, exe, cmdline, pid, ppid, start_realtime_ns and the clock pair.
void fill_process(rdzv_file_header* h);

// Reads a small /proc/self file into buf (NUL-terminated); returns bytes read or -1.
long read_proc_file(const char* path, char* buf, unsigned long cap);

}  // namespace rdzv
