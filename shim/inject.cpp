#include "inject.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject_spec.h"
#include "text.h"

namespace rdzv {

bool g_inject_on = false;

namespace {

// What applies to this process, decided at load.
bool g_resolve_fail, g_refused, g_timeout, g_port_taken, g_late;
uint64_t g_timeout_ns, g_late_ns;
int g_late_done;            // atomic: the first store connect has been held back
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
  const int32_t rank = rank_from_env();
  for (int i = 0; i < spec.count; ++i) {
    const InjectFault& f = spec.faults[i];
    if (!inject_applies(f, rank)) continue;
    switch (f.kind) {
      case kInjectResolveFail: g_resolve_fail = true; break;
      case kInjectConnectRefused: g_refused = true; break;
      case kInjectConnectTimeout:
        g_timeout = true;
        g_timeout_ns = f.delay_ns;
        break;
      case kInjectLate:
        g_late = true;
        g_late_ns = f.delay_ns;
        break;
      case kInjectPortTaken: g_port_taken = true; break;
      default: break;
    }
  }
  endpoint_host(env_nonempty("PET_RDZV_ENDPOINT"), g_endpoint_host, sizeof g_endpoint_host);
  g_inject_on = g_resolve_fail || g_refused || g_timeout || g_late || g_port_taken;
}

bool inject_resolve_fail(const char* node, int ai_flags) {
  if (!g_resolve_fail || !node || !*node || (ai_flags & AI_PASSIVE)) return false;
  const char* master = env_nonempty("MASTER_ADDR");  // read now: scripts set it late
  if (master && strcmp(node, master) == 0) return true;
  return g_endpoint_host[0] && strcmp(node, g_endpoint_host) == 0;
}

ConnectFault inject_store_connect() {
  ConnectFault f;
  if (g_late && __atomic_exchange_n(&g_late_done, 1, __ATOMIC_ACQ_REL) == 0) {
    inject_sleep(g_late_ns);
    f.held_back = true;
  }
  if (g_refused) {
    f.err = ECONNREFUSED;
  } else if (g_timeout) {
    f.err = ETIMEDOUT;
    f.block_ns = g_timeout_ns;
  }
  return f;
}

bool inject_bind_taken() { return g_port_taken; }

void inject_sleep(uint64_t ns) {
  struct timespec left = {static_cast<time_t>(ns / 1000000000ull),
                          static_cast<long>(ns % 1000000000ull)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

}  // namespace rdzv
