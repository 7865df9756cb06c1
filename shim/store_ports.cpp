#include "store_ports.h"

#include <string.h>

#include "text.h"

namespace rdzv {
namespace {

uint16_t g_ports[RDZV_MAX_STORE_PORTS];  // 0 = free entry; written with atomic stores

// Returns true when the port was not in the set before.
bool add_port(int64_t port) {
  if (port <= 0 || port > 65535) return false;
  const uint16_t p = static_cast<uint16_t>(port);
  for (auto& slot : g_ports) {
    uint16_t cur = __atomic_load_n(&slot, __ATOMIC_RELAXED);
    if (cur == p) return false;
    if (cur == 0) {
      uint16_t expected = 0;
      if (__atomic_compare_exchange_n(&slot, &expected, p, false, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED))
        return true;
      if (expected == p) return false;
    }
  }
  return false;
}

bool add_port_text(const char* text, size_t len) {
  char buf[8];
  if (len == 0 || len >= sizeof buf) return false;
  memcpy(buf, text, len);
  buf[len] = '\0';
  int64_t v;
  return parse_i64(buf, &v) && add_port(v);
}

bool add_env_port(const char* name) {
  const char* v = env_nonempty(name);
  return v && add_port_text(v, strlen(v));
}

// "host:port" or "[v6]:port"; the port is what follows the last colon.
void add_endpoint_port(const char* name) {
  const char* v = env_nonempty(name);
  if (!v) return;
  const char* colon = strrchr(v, ':');
  if (colon && !strchr(colon, ']')) add_port_text(colon + 1, strlen(colon + 1));
}

void add_port_list(const char* name) {
  const char* v = env_nonempty(name);
  while (v && *v) {
    const char* end = strchr(v, ',');
    size_t len = end ? static_cast<size_t>(end - v) : strlen(v);
    add_port_text(v, len);
    v = end ? end + 1 : nullptr;
  }
}

}  // namespace

void store_ports_init() {
  add_env_port("MASTER_PORT");
  add_endpoint_port("PET_RDZV_ENDPOINT");
  add_port(29400);
  add_port(29500);
  add_port_list("RDZVSCOPE_PORTS");
}

bool store_ports_refresh() { return add_env_port("MASTER_PORT"); }

bool is_store_port(uint16_t port) {
  if (port == 0) return false;
  for (auto& slot : g_ports) {
    uint16_t cur = __atomic_load_n(&slot, __ATOMIC_RELAXED);
    if (cur == port) return true;
    if (cur == 0) return false;
  }
  return false;
}

void store_ports_export(uint16_t out[RDZV_MAX_STORE_PORTS]) {
  // Entries are only ever added, each slot once: copying the set ones (never a 0) keeps a
  // slower exporter from erasing a port that a faster one has just written.
  for (int i = 0; i < RDZV_MAX_STORE_PORTS; ++i)
    if (uint16_t p = __atomic_load_n(&g_ports[i], __ATOMIC_RELAXED))
      __atomic_store_n(&out[i], p, __ATOMIC_RELAXED);
}

}  // namespace rdzv
