// Fault injection for rehearsals (`rdzvscope run --inject FAULT`, RDZVSCOPE_INJECT): the spec
// and its parser. Shared by the shim (parsed once at load) and the CLI (checked before the
// command is started), so both read a spec the same way. libc only, no allocation: it runs
// inside the traced process.
//
//   SPEC   := FAULT [ "," FAULT ]...
//   FAULT  := NAME [ ":" OPTION ]...
//   OPTION := "rank=" N | "after=" DURATION | DURATION | "bytes=" N
//   DURATION := N [ "ms" | "s" | "m" ]       (a bare N is seconds)
//
//   resolve-fail      getaddrinfo of the store host fails with EAI_NONAME
//   connect-refused   store connects fail with ECONNREFUSED
//   connect-timeout   a store connect blocks DURATION (default 3s, a SYN never answered with
//                     tcp_syn_retries=1), then fails with ETIMEDOUT
//   late              the first store connect is held back DURATION (default 10s)
//   port-taken        bind on the store port fails with EADDRINUSE
//   store-reset       one store connection of the process is reset (RST both ways), once: at
//                     the first I/O call on a store connection that is DURATION old (default 0)
//                     and has carried bytes=N bytes, sent and received (default 0)
// Without rank=N a fault applies to every process of the job; with it, to the process whose
// RANK is N only (read when the fault would strike, so a torchrun worker, which gets RANK from
// its agent, is told from the agent).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace rdzv {

enum InjectKind : uint8_t {
  kInjectNone = 0,
  kInjectResolveFail,
  kInjectConnectRefused,
  kInjectConnectTimeout,
  kInjectLate,
  kInjectPortTaken,
  kInjectStoreReset,
  kInjectKindCount
};

struct InjectFault {
  uint8_t kind = kInjectNone;
  int32_t rank = -1;      // -1: every process
  uint64_t delay_ns = 0;  // late: the hold; connect-timeout: how long a connect blocks;
                          // store-reset: the connection's age at the reset
  uint64_t bytes = 0;     // store-reset: bytes the connection carried before the reset
};

constexpr int kInjectMaxFaults = 8;
constexpr size_t kInjectSpecMax = 512;  // longer specs are refused

struct InjectSpec {
  int count = 0;
  InjectFault faults[kInjectMaxFaults];
};

// Parses text (see above) into *out. On failure returns false, *out is empty and err (when
// given) holds a one-line reason. Never reads past the terminating NUL.
bool inject_parse(const char* text, InjectSpec* out, char* err, size_t errlen);

// "resolve-fail" ... for a kind, "" for kInjectNone or an unknown value.
const char* inject_kind_name(uint8_t kind);

// Whether the fault applies to a process whose RANK is rank (-1 when RANK is not set).
inline bool inject_applies(const InjectFault& f, int32_t rank) {
  return f.rank < 0 || f.rank == rank;
}

}  // namespace rdzv
