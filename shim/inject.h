// Fault injection at run time (`rdzvscope run --inject`, RDZVSCOPE_INJECT; the spec:
// inject_spec.h). Off unless the variable is set and valid: then inject_on() is false and no
// hook changes anything. Every call whose result is made up here is recorded with
// RDZV_F_INJECTED.
#pragma once

#include <stdint.h>

namespace rdzv {

extern bool g_inject_on;  // some fault applies to this process; set once, at load

inline bool inject_on() { return __builtin_expect(g_inject_on, 0); }

// At load: parses RDZVSCOPE_INJECT and keeps the faults that apply to this process (RANK). A
// bad spec is reported on stderr, removed from the environment (so that the job's other
// processes do not say it again) and nothing is injected.
void inject_init();

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

// Sleeps ns (whole, through EINTR).
void inject_sleep(uint64_t ns);

}  // namespace rdzv
