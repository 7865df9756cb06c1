// Fault injection at run time (`rdzvscope run --inject`, RDZVSCOPE_INJECT; the spec:
// inject_spec.h). Off unless the variable is set and valid: then inject_on() is false and no
// hook changes anything. Every call whose result is made up here is recorded with
// RDZV_F_INJECTED.
#pragma once

#include <stdint.h>

namespace rdzv {

extern bool g_inject_on;  // a valid spec was given; set once, at load

inline bool inject_on() { return __builtin_expect(g_inject_on, 0); }

// At load: parses RDZVSCOPE_INJECT. A bad spec is reported on stderr, removed from the
// environment (so that the job's other processes do not say it again) and nothing is injected.
// Whether a rank= fault applies is decided when it would strike, from RANK as it is then: a
// torchrun worker gets RANK from its agent (in its environment at exec, or set by Python before
// its first store call), the agent has none; once seen, a process's RANK is kept.
void inject_init();

// The process's RANK as the faults see it now (-1: none yet).
int32_t inject_rank();

// getaddrinfo: true when this lookup must fail with EAI_NONAME (a lookup of the store host,
// MASTER_ADDR or PET_RDZV_ENDPOINT's host, that is not a server's AI_PASSIVE one).
bool inject_resolve_fail(const char* node, int ai_flags);

// A connect to a store port, about to be made. Holds the caller back first when `late`
// applies (the process's first store connect only; held_back then). err != 0: fail the call
// with it, without making it, after blocking block_ns.
struct ConnectFault {
  int err = 0;
  uint64_t block_ns = 0;
  bool held_back = false;
};
ConnectFault inject_store_connect();

// bind on a store port: true when it must fail with EADDRINUSE.
bool inject_bind_taken();

// store-reset, at the start of an I/O call on a store connection opened at opened_ns
// (monotonic) that has carried `bytes` so far: true once per process, for the first call at
// which the fault's point is reached; the caller then resets that connection.
bool inject_store_reset_due(uint64_t opened_ns, uint64_t bytes);

// Sleeps ns (whole, through EINTR).
void inject_sleep(uint64_t ns);

}  // namespace rdzv
