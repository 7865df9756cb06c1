#include "env_inject.h"

#include <dlfcn.h>
#include <string.h>

#include "text.h"
#include "trace_writer.h"

namespace rdzv {
namespace {

char g_shim_path[1024];
// NAME=value strings for the settings worth carrying over, captured at start.
constexpr const char* kCarried[] = {"RDZVSCOPE_DIR", "RDZVSCOPE_PORTS", "RDZVSCOPE_MAX_MB",
                                    "RDZVSCOPE_GROUP_READ", "RDZVSCOPE_SHIM",
                                    "RDZVSCOPE_INJECT"};
constexpr int kNumCarried = sizeof kCarried / sizeof kCarried[0];
char g_carried[kNumCarried][1200];

const char* find_var(char* const* envp, const char* name) {
  size_t n = strlen(name);
  for (char* const* e = envp; e && *e; ++e)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

bool contains_path(const char* list, const char* path) {
  size_t n = strlen(path);
  for (const char* p = list; p && *p;) {
    const char* end = p + strcspn(p, ": ");
    if (static_cast<size_t>(end - p) == n && strncmp(p, path, n) == 0) return true;
    p = *end ? end + 1 : end;
  }
  return false;
}

}  // namespace

void env_inject_init() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&env_inject_init), &info) && info.dli_fname &&
      info.dli_fname[0] == '/')
    copy_cut(g_shim_path, sizeof g_shim_path, info.dli_fname);
  for (int i = 0; i < kNumCarried; ++i) {
    const char* v = env_nonempty(kCarried[i]);
    if (!v) continue;
    TextBuf b(g_carried[i], sizeof g_carried[i]);
    b.str(kCarried[i]).ch('=').str(v);
    if (b.truncated()) g_carried[i][0] = '\0';
  }
}

long env_count(char* const* envp) {
  long n = 0;
  for (char* const* e = envp; e && *e; ++e)
    if (++n > 65536) return -1;
  return n;
}

char* const* env_for_exec(char* const* envp, long count, char** out, char* text) {
  if (!g_shim_path[0] || !trace_dir()[0] || count < 0) return envp;
  const char* dir = find_var(envp, "RDZVSCOPE_DIR");
  if (dir && !*dir) return envp;  // explicitly switched off for this child
  const char* preload = find_var(envp, "LD_PRELOAD");
  bool preload_ok = preload && contains_path(preload, g_shim_path);
  bool carried_ok = true;
  for (int i = 0; i < kNumCarried; ++i)
    if (g_carried[i][0] && !find_var(envp, kCarried[i])) carried_ok = false;
  if (preload_ok && carried_ok) return envp;

  TextBuf ld(text, kInjectTextSize);
  ld.str("LD_PRELOAD=").str(g_shim_path);
  if (preload && *preload) ld.ch(':').str(preload);
  if (ld.truncated()) return envp;

  long n = 0;
  for (char* const* e = envp; e && *e; ++e)
    if (preload_ok || strncmp(*e, "LD_PRELOAD=", 11) != 0) out[n++] = *e;
  if (!preload_ok) out[n++] = text;
  for (int i = 0; i < kNumCarried; ++i)
    if (g_carried[i][0] && !find_var(envp, kCarried[i])) out[n++] = g_carried[i];
  out[n] = nullptr;
  return out;
}

}  // namespace rdzv
