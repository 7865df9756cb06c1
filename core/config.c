/* The recorder core (include/rdzvscope/recorder_core.h), what is read from an environment:
 * the lookup interface (this process's environ or a /proc/PID/environ copy), the
 * configuration (RDZVSCOPE_DIR, RDZVSCOPE_MAX_MB, RDZVSCOPE_GROUP_READ), the identity
 * variables (RANK, MASTER_PORT, SLURM_*...) and the store-port set and its policy.
 * libc only, like the rest of the core: no allocation, no locks, no stdio (the shim runs
 * this inside its hooks, in forked and vforked children too). */
#define _GNU_SOURCE

#include "rdzvscope/recorder_core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- environment */

const char *rdzv_env_self(void *ctx, const char *name) {
  (void)ctx;
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

const char *rdzv_env_block_get(void *ctx, const char *name) {
  const struct rdzv_env_block *b = (const struct rdzv_env_block *)ctx;
  const size_t n = strlen(name);
  const char *p = b->data;
  const char *end = b->data + b->len;
  while (p && p < end) {
    const char *nul = (const char *)memchr(p, '\0', (size_t)(end - p));
    if (!nul) return NULL; /* cut at the end of the copy */
    if ((size_t)(nul - p) > n && memcmp(p, name, n) == 0 && p[n] == '=')
      return p[n + 1] ? p + n + 1 : NULL;
    p = nul + 1;
  }
  return NULL;
}

int rdzv_env_flag(const char *value) { return value && *value && strcmp(value, "0") != 0; }

/* ---------------------------------------------------------------- configuration */

rdzv_u64 rdzv_max_bytes_for_mb(rdzv_s64 mb) {
  if (mb <= 0) mb = RDZV_TRACE_DEFAULT_MAX_MB;
  if (mb > (rdzv_s64)RDZV_TRACE_MAX_MB) mb = RDZV_TRACE_MAX_MB;
  return (rdzv_u64)mb << 20;
}

/* RDZVSCOPE_DIR's placeholders are expanded by rdzv_trace_dir_expand (trace_dir.c), the
 * host name for %h is rdzv_file_host's (trace_file.c). */
void rdzv_config_read(struct rdzv_config *cfg, rdzv_env_fn env, void *ctx) {
  const char *dir = env(ctx, "RDZVSCOPE_DIR");
  if (dir && strchr(dir, '%')) {
    char host[256];
    rdzv_file_host(host, sizeof host);
    if (rdzv_trace_dir_expand(cfg->dir, sizeof cfg->dir, dir, env, ctx, host, time(NULL)) != 0)
      cfg->dir[0] = '\0'; /* cut short it would name another directory: untraced instead */
  } else {
    rdzv_copy_cut(cfg->dir, sizeof cfg->dir, dir);
  }
  rdzv_s64 mb = 0;
  if (!rdzv_parse_i64(env(ctx, "RDZVSCOPE_MAX_MB"), &mb)) mb = 0;
  cfg->max_bytes = rdzv_max_bytes_for_mb(mb);
  cfg->group_read = rdzv_env_flag(env(ctx, "RDZVSCOPE_GROUP_READ"));
}

/* ---------------------------------------------------------------- identity */

static rdzv_s32 env_int(rdzv_env_fn env, void *ctx, const char *name) {
  rdzv_s64 v;
  if (!rdzv_parse_i64(env(ctx, name), &v) || v < INT32_MIN || v > INT32_MAX) return -1;
  return (rdzv_s32)v;
}

void rdzv_identity_fill(struct rdzv_identity *id, rdzv_env_fn env, void *ctx) {
  id->rank = env_int(env, ctx, "RANK");
  id->local_rank = env_int(env, ctx, "LOCAL_RANK");
  id->world_size = env_int(env, ctx, "WORLD_SIZE");
  id->group_rank = env_int(env, ctx, "GROUP_RANK");
  id->master_port = env_int(env, ctx, "MASTER_PORT");
  id->restart_count = env_int(env, ctx, "TORCHELASTIC_RESTART_COUNT");
  id->slurm_procid = env_int(env, ctx, "SLURM_PROCID");
  id->slurm_nodeid = env_int(env, ctx, "SLURM_NODEID");
  rdzv_copy_cut(id->master_addr, sizeof id->master_addr, env(ctx, "MASTER_ADDR"));
  rdzv_copy_cut(id->run_id, sizeof id->run_id, env(ctx, "TORCHELASTIC_RUN_ID"));
  rdzv_copy_cut(id->slurm_job_id, sizeof id->slurm_job_id, env(ctx, "SLURM_JOB_ID"));
}

/* ---------------------------------------------------------------- store ports */

int rdzv_ports_add(struct rdzv_port_set *set, rdzv_s64 port) {
  if (port <= 0 || port > 65535) return 0;
  const rdzv_u16 p = (rdzv_u16)port;
  for (int i = 0; i < RDZV_MAX_STORE_PORTS; ++i) {
    rdzv_u16 cur = __atomic_load_n(&set->port[i], __ATOMIC_RELAXED);
    if (cur == p) return 0;
    if (cur == 0) {
      rdzv_u16 expected = 0;
      if (__atomic_compare_exchange_n(&set->port[i], &expected, p, 0, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED))
        return 1;
      if (expected == p) return 0;
    }
  }
  return 0;
}

int rdzv_ports_contains(const struct rdzv_port_set *set, rdzv_u16 port) {
  if (port == 0) return 0;
  for (int i = 0; i < RDZV_MAX_STORE_PORTS; ++i) {
    const rdzv_u16 cur = __atomic_load_n(&set->port[i], __ATOMIC_RELAXED);
    if (cur == port) return 1;
    if (cur == 0) return 0;
  }
  return 0;
}

/* The parsing is the header's (rdzv_port_of_*, rdzv_port_list_feed), shared with attach's
 * kernel side. Values are looked at up to RDZV_PORT_VALUE_MAX bytes. */
static unsigned bounded_len(const char *v) {
  const size_t n = strlen(v);
  return n > RDZV_PORT_VALUE_MAX ? RDZV_PORT_VALUE_MAX : (unsigned)n;
}

static int add_env_port(struct rdzv_port_set *set, rdzv_env_fn env, void *ctx, const char *name) {
  const char *v = env(ctx, name);
  return v && rdzv_ports_add(set, rdzv_port_of_text(v, bounded_len(v)));
}

void rdzv_ports_from_env(struct rdzv_port_set *set, rdzv_env_fn env, void *ctx) {
  add_env_port(set, env, ctx, RDZV_ENV_MASTER_PORT);
  const char *endpoint = env(ctx, RDZV_ENV_RDZV_ENDPOINT);
  if (endpoint) rdzv_ports_add(set, rdzv_port_of_endpoint(endpoint, (unsigned)strlen(endpoint)));
  rdzv_ports_add(set, RDZV_PORT_C10D_DEFAULT);
  rdzv_ports_add(set, RDZV_PORT_TCPSTORE_DEFAULT);
  const char *list = env(ctx, RDZV_ENV_EXTRA_PORTS);
  if (!list) return;
  struct rdzv_port_list_state st = {0, 0, 0};
  const unsigned len = bounded_len(list);
  for (unsigned i = 0; i <= len; ++i) rdzv_ports_add(set, rdzv_port_list_feed(&st, i < len ? list[i] : 0));
}

int rdzv_ports_refresh(struct rdzv_port_set *set, rdzv_env_fn env, void *ctx) {
  return add_env_port(set, env, ctx, RDZV_ENV_MASTER_PORT);
}

void rdzv_ports_export(const struct rdzv_port_set *set, rdzv_u16 out[RDZV_MAX_STORE_PORTS]) {
  for (int i = 0; i < RDZV_MAX_STORE_PORTS; ++i) {
    const rdzv_u16 p = __atomic_load_n(&set->port[i], __ATOMIC_RELAXED);
    if (p) __atomic_store_n(&out[i], p, __ATOMIC_RELAXED);
  }
}
