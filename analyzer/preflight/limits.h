// Check 3, on the store host: can it take every rank's connection? Each rank (and each
// torchrun agent) connects to the store at about the same moment. A connection waits in the
// listen backlog until the store accepts it; c10d asks for a backlog of -1 (2.x) or 2048
// (1.13) and the kernel caps it at net.core.somaxconn (per network namespace). Past it, SYNs
// or handshakes are dropped and those ranks wait for a retransmission (1 s, 3 s, 7 s...). The
// store also holds one descriptor per client (two on 1.13: the callback connection), within
// the open-file limit it inherits from the shell that starts the job.
#pragma once

#include <optional>

#include "preflight/check.h"

namespace rdzvscope::preflight {

// Descriptors the store process needs besides its clients' (libraries, logs, pipes).
inline constexpr unsigned long kBaseDescriptors = 64;

std::optional<unsigned long> read_somaxconn();  // /proc/sys/net/core/somaxconn

struct FileLimit {
  unsigned long soft = 0, hard = 0;  // RLIM_INFINITY shows as ULONG_MAX
};
FileLimit read_nofile();

// ranks: the processes that will connect to the store at once (see cmd_preflight.cpp for
// where the number comes from).
Check somaxconn_check(unsigned long somaxconn, unsigned long ranks);
Check nofile_check(const FileLimit& limit, unsigned long ranks);

}  // namespace rdzvscope::preflight
