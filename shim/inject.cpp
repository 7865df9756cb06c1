#include "inject.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "inject_spec.h"
#include "text.h"

namespace rdzv {

bool g_inject_on = false;

namespace {

// The spec, parsed at load; which faults apply is decided per call (fault()).
InjectSpec g_spec;
bool g_has_reset;           // the spec has a store-reset (the I/O hooks ask only then)
int32_t g_rank = -1;        // RANK once seen (atomic); -1: not yet
int g_late_done;            // atomic: the first store connect has been held back
int g_reset_done;           // atomic: the one store-reset has been made
char g_endpoint_host[256];  // PET_RDZV_ENDPOINT's host, at load

int32_t rank_from_env() {
  const char* r = env_nonempty("RANK");
  if (!r) return -1;
  int64_t v = 0;
  for (const char* p = r; *p; ++p) {
    if (*p < '0' || *p > '9' || v > 0x7fffffff) return -1;
    v = v * 10 + (*p - '0');
  }
  return v > 0x7fffffff ? -1 : static_cast<int32_t>(v);
}

// The first fault of this kind that applies to this process now, or null.
const InjectFault* fault(uint8_t kind) {
  const InjectFault* any = nullptr;
  for (int i = 0; i < g_spec.count; ++i)
    if (g_spec.faults[i].kind == kind) any = &g_spec.faults[i];
  if (!any) return nullptr;  // not in the spec: RANK is not even looked at
  const int32_t rank = inject_rank();
  for (int i = 0; i < g_spec.count; ++i)
    if (g_spec.faults[i].kind == kind && inject_applies(g_spec.faults[i], rank))
      return &g_spec.faults[i];
  return nullptr;
}

// `late`: marks the start of the hold in the trace (a snapshot record flagged injected, dur_ns
// the hold), so that a process stopped while held back (a torchrun worker that its agent
// SIGTERMs once the others timed out) still says it was a rehearsal. Called with the guard held.
void mark_hold(uint64_t hold_ns) {
  EventHead head{RDZV_EV_SNAPSHOT, RDZV_SNAP_FAILURE, RDZV_F_INJECTED};
  head.ts_ns = mono_ns();
  head.dur_ns = hold_ns;
  if (Slot s = new_record(Create::IfNeeded, head)) commit_record(s);
}

void say(const char* a, const char* b, const char* c) {
  char line[1024];
  TextBuf t(line, sizeof line);
  t.str("rdzvscope: RDZVSCOPE_INJECT=").str(a).str(": ").str(b).str(c).ch('\n');
  ssize_t ignored = write(2, t.c_str(), t.size());
  (void)ignored;
}

// "host:port", "[v6]:port" or "host" -> host.
void endpoint_host(const char* ep, char* out, size_t cap) {
  out[0] = '\0';
  if (!ep) return;
  const char* start = ep;
  const char* end;
  if (*ep == '[') {
    start = ep + 1;
    end = strchr(start, ']');
    if (!end) return;
  } else {
    end = strrchr(ep, ':');
    if (!end) end = ep + strlen(ep);
  }
  TextBuf t(out, cap);
  t.str(start, static_cast<size_t>(end - start));
  if (t.truncated()) out[0] = '\0';
}

}  // namespace

void inject_init() {
  const char* text = env_nonempty("RDZVSCOPE_INJECT");
  if (!text) return;
  InjectSpec spec;
  char err[256];
  if (!inject_parse(text, &spec, err, sizeof err)) {
    say(text, err, "; injecting nothing");
    // Said once per job rather than once per process: the children do not inherit it (the
    // variable is ours; unsetenv only moves pointers).
    unsetenv("RDZVSCOPE_INJECT");
    return;
  }
  g_spec = spec;
  for (int i = 0; i < spec.count; ++i)
    if (spec.faults[i].kind == kInjectStoreReset) g_has_reset = true;
  endpoint_host(env_nonempty("PET_RDZV_ENDPOINT"), g_endpoint_host, sizeof g_endpoint_host);
  g_inject_on = spec.count > 0;
}

int32_t inject_rank() {
  int32_t r = __atomic_load_n(&g_rank, __ATOMIC_RELAXED);
  if (r >= 0) return r;
  r = rank_from_env();  // read while absent: Python may set it after exec (multiprocessing)
  if (r >= 0) __atomic_store_n(&g_rank, r, __ATOMIC_RELAXED);
  return r;
}

bool inject_resolve_fail(const char* node, int ai_flags) {
  if (!node || !*node || (ai_flags & AI_PASSIVE) || !fault(kInjectResolveFail)) return false;
  const char* master = env_nonempty("MASTER_ADDR");  // read now: scripts set it late
  if (master && strcmp(node, master) == 0) return true;
  return g_endpoint_host[0] && strcmp(node, g_endpoint_host) == 0;
}

ConnectFault inject_store_connect() {
  ConnectFault f;
  const InjectFault* late = fault(kInjectLate);
  if (late && __atomic_exchange_n(&g_late_done, 1, __ATOMIC_ACQ_REL) == 0) {
    mark_hold(late->delay_ns);
    inject_sleep(late->delay_ns);
    f.held_back = true;
  }
  const InjectFault* timeout = nullptr;
  if (fault(kInjectConnectRefused)) {
    f.err = ECONNREFUSED;
  } else if ((timeout = fault(kInjectConnectTimeout)) != nullptr) {
    f.err = ETIMEDOUT;
    f.block_ns = timeout->delay_ns;
  }
  return f;
}

bool inject_bind_taken() { return fault(kInjectPortTaken) != nullptr; }

bool inject_store_reset_due(uint64_t opened_ns, uint64_t bytes) {
  if (!g_has_reset || __atomic_load_n(&g_reset_done, __ATOMIC_RELAXED)) return false;
  const InjectFault* f = fault(kInjectStoreReset);
  if (!f || bytes < f->bytes) return false;
  if (f->delay_ns) {
    const uint64_t now = mono_ns();
    if (now < opened_ns || now - opened_ns < f->delay_ns) return false;
  }
  return __atomic_exchange_n(&g_reset_done, 1, __ATOMIC_ACQ_REL) == 0;
}

void inject_sleep(uint64_t ns) {
  struct timespec left = {static_cast<time_t>(ns / 1000000000ull),
                          static_cast<long>(ns % 1000000000ull)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

}  // namespace rdzv
