/* The recorder core (include/rdzvscope/recorder_core.h): what the shim and the bpf loader must
 * do the same way. libc only; no allocation, no locks, no stdio: the shim runs this inside its
 * hooks, in forked and vforked children too. */
#define _GNU_SOURCE

#include "rdzvscope/recorder_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- text */

void rdzv_text_init(struct rdzv_text *t, char *buf, size_t cap) {
  t->buf = buf;
  t->cap = cap;
  t->len = 0;
  t->truncated = 0;
  if (cap > 0) buf[0] = '\0';
}

void rdzv_text_strn(struct rdzv_text *t, const char *s, size_t n) {
  if (t->cap == 0) {
    t->truncated |= n > 0;
    return;
  }
  const size_t room = t->cap - 1 - t->len;
  if (n > room) {
    n = room;
    t->truncated = 1;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

void rdzv_text_str(struct rdzv_text *t, const char *s) {
  if (s) rdzv_text_strn(t, s, strlen(s));
}

void rdzv_text_ch(struct rdzv_text *t, char c) { rdzv_text_strn(t, &c, 1); }

void rdzv_text_u64(struct rdzv_text *t, rdzv_u64 v) {
  char digits[24];
  size_t n = 0;
  do {
    digits[sizeof digits - 1 - n] = (char)('0' + v % 10);
    v /= 10;
    ++n;
  } while (v != 0);
  rdzv_text_strn(t, digits + sizeof digits - n, n);
}

void rdzv_text_i64(struct rdzv_text *t, rdzv_s64 v) {
  if (v < 0) {
    rdzv_text_ch(t, '-');
    rdzv_text_u64(t, 0 - (rdzv_u64)v);
    return;
  }
  rdzv_text_u64(t, (rdzv_u64)v);
}

int rdzv_copy_cut(char *dst, size_t cap, const char *src) {
  if (cap == 0) return src && *src;
  if (!src) {
    dst[0] = '\0';
    return 0;
  }
  size_t n = strnlen(src, cap);
  const int cut = n == cap;
  if (cut) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return cut;
}

int rdzv_parse_i64(const char *s, rdzv_s64 *out) {
  if (!s || !*s) return 0;
  int neg = 0;
  if (*s == '-') {
    neg = 1;
    ++s;
  }
  if (!*s) return 0;
  rdzv_u64 v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return 0;
    const rdzv_u64 digit = (rdzv_u64)(*s - '0');
    /* INT64_MIN itself is refused too: nothing we parse gets near it. */
    if (v > ((rdzv_u64)INT64_MAX - digit) / 10) return 0;
    v = v * 10 + digit;
  }
  *out = neg ? -(rdzv_s64)v : (rdzv_s64)v;
  return 1;
}

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

/* A job id fit for one path component: [A-Za-z0-9._-] kept, anything else '_', and never
 * "." or "..": a leading '.' becomes '_'. */
static void add_path_safe(struct rdzv_text *t, const char *s) {
  for (size_t i = 0; s && s[i]; ++i) {
    const char c = s[i];
    const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || (c == '.' && i > 0);
    rdzv_text_ch(t, ok ? c : '_');
  }
}

static void add_two_digits(struct rdzv_text *t, int v) {
  rdzv_text_ch(t, (char)('0' + (v / 10) % 10));
  rdzv_text_ch(t, (char)('0' + v % 10));
}

static void add_job(struct rdzv_text *t, rdzv_env_fn env, void *ctx) {
  const char *job = env(ctx, "SLURM_JOB_ID");
  if (!job || !*job) job = env(ctx, "TORCHELASTIC_RUN_ID");
  if (!job || !*job) job = "nojob";
  add_path_safe(t, job);
}

int rdzv_trace_dir_expand(char *out, size_t cap, const char *pattern, rdzv_env_fn env, void *ctx,
                          const char *host, time_t now) {
  struct rdzv_text t;
  rdzv_text_init(&t, out, cap);
  struct tm day;
  const int have_day = gmtime_r(&now, &day) != NULL;
  for (const char *p = pattern ? pattern : ""; *p; ++p) {
    if (*p != '%' || !p[1]) {
      rdzv_text_ch(&t, *p);
      continue;
    }
    switch (*++p) {
      case 'h': rdzv_text_str(&t, host); break;
      case 'j': add_job(&t, env, ctx); break;
      case 'Y': rdzv_text_i64(&t, have_day ? day.tm_year + 1900 : 0); break;
      case 'm': add_two_digits(&t, have_day ? day.tm_mon + 1 : 0); break;
      case 'd': add_two_digits(&t, have_day ? day.tm_mday : 0); break;
      case '%': rdzv_text_ch(&t, '%'); break;
      default: /* not ours: kept as written */
        rdzv_text_ch(&t, '%');
        rdzv_text_ch(&t, *p);
    }
  }
  return t.truncated ? -1 : 0;
}

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

/* ---------------------------------------------------------------- process facts */

long rdzv_read_file(const char *path, char *buf, size_t cap) {
  if (cap == 0) return -1;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t total = 0;
  while (total + 1 < cap) {
    const ssize_t n = read(fd, buf + total, cap - 1 - total);
    if (n <= 0) break;
    total += (size_t)n;
  }
  close(fd);
  buf[total] = '\0';
  return (long)total;
}

rdzv_u64 rdzv_proc_field(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (!p) return 0;
  p += strlen(key);
  while (*p == ' ' || *p == '\t') ++p;
  rdzv_u64 v = 0;
  for (; *p >= '0' && *p <= '9'; ++p) v = v * 10 + (rdzv_u64)(*p - '0');
  return v;
}

/* /proc/PID or /proc/self, then `leaf`. */
static void proc_path(char *out, size_t cap, int pid, const char *leaf) {
  struct rdzv_text t;
  rdzv_text_init(&t, out, cap);
  rdzv_text_str(&t, "/proc/");
  if (pid > 0)
    rdzv_text_i64(&t, pid);
  else
    rdzv_text_str(&t, "self");
  rdzv_text_str(&t, leaf);
}

/* Fields 4 (ppid) and 22 (start time, clock ticks after boot) of /proc/PID/stat. The command
 * name in field 2 may hold spaces and parentheses, so counting starts after the last ')'. */
static int read_stat(int pid, rdzv_s64 *ppid, rdzv_s64 *start_ticks) {
  char path[48];
  char buf[1024];
  proc_path(path, sizeof path, pid, "/stat");
  if (rdzv_read_file(path, buf, sizeof buf) <= 0) return -1;
  const char *p = strrchr(buf, ')');
  if (!p) return -1;
  *ppid = -1;
  *start_ticks = -1;
  int field = 2;
  for (; *p; ++p) {
    if (*p != ' ') continue;
    ++field;
    if (field != 4 && field != 22) continue;
    char num[24];
    size_t n = 0;
    for (const char *d = p + 1; *d >= '0' && *d <= '9' && n + 1 < sizeof num; ++d) num[n++] = *d;
    num[n] = '\0';
    rdzv_s64 v;
    if (rdzv_parse_i64(num, &v)) *(field == 4 ? ppid : start_ticks) = v;
    if (field == 22) break;
  }
  return 0;
}

/* ---------------------------------------------------------------- origin */

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int rdzv_parse_boot_id(const char *text, rdzv_u8 out[16]) {
  rdzv_u8 bytes[16];
  int digits = 0;
  for (const char *p = text; *p && *p != '\n'; ++p) {
    const long at = p - text;
    if (at == 8 || at == 13 || at == 18 || at == 23) {
      if (*p != '-') return 0;
      continue;
    }
    const int v = hex_value(*p);
    if (v < 0 || digits >= 32) return 0;
    if (digits % 2 == 0) bytes[digits / 2] = (rdzv_u8)(v << 4);
    else bytes[digits / 2] |= (rdzv_u8)v;
    ++digits;
  }
  if (digits != 32) return 0;
  memcpy(out, bytes, sizeof bytes);
  return 1;
}

rdzv_u64 rdzv_parse_ns_link(const char *link) {
  const char *open = strchr(link, '[');
  if (!open) return 0;
  rdzv_u64 v = 0;
  const char *p = open + 1;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (v > (~0ull - 9) / 10) return 0;
    v = v * 10 + (rdzv_u64)(*p - '0');
  }
  return (*p == ']' && p > open + 1) ? v : 0;
}

int rdzv_parse_nspid(const char *status, rdzv_s32 *first, rdzv_s32 *last) {
  const char *line = status;
  while (line && strncmp(line, "NSpid:", 6) != 0) {
    line = strchr(line, '\n');
    if (line) ++line;
  }
  if (!line) return 0;
  int count = 0;
  for (const char *p = line + 6; *p && *p != '\n';) {
    if (*p == ' ' || *p == '\t') {
      ++p;
      continue;
    }
    rdzv_s64 v = 0;
    const char *start = p;
    for (; *p >= '0' && *p <= '9'; ++p)
      if ((v = v * 10 + (*p - '0')) > 0x7fffffff) return 0;
    if (p == start) return 0;
    if (count++ == 0) *first = (rdzv_s32)v;
    *last = (rdzv_s32)v;
  }
  return count;
}

int rdzv_find_container_id(const char *cgroup, char *out, size_t cap) {
  /* The last run of exactly 64 hex digits wins: nested cgroups name the innermost last. */
  const char *found = NULL;
  for (const char *p = cgroup; *p;) {
    if (hex_value(*p) < 0) {
      ++p;
      continue;
    }
    const char *start = p;
    while (hex_value(*p) >= 0) ++p;
    if (p - start == 64 && (start == cgroup || !((start[-1] >= 'g' && start[-1] <= 'z') ||
                                                 (start[-1] >= 'G' && start[-1] <= 'Z'))))
      found = start;
  }
  if (!found || cap < 65) return 0;
  memcpy(out, found, 64);
  out[64] = '\0';
  return 1;
}

static rdzv_u64 ns_inode(int pid, const char *which) {
  char path[48], link[64];
  proc_path(path, sizeof path, pid, which);
  const ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  return rdzv_parse_ns_link(link);
}

int rdzv_origin_fill(struct rdzv_origin *o, int pid, rdzv_s64 start_ticks) {
  memset(o, 0, sizeof *o);
  char buf[4096];
  int have_boot = 0;
  if (rdzv_read_file("/proc/sys/kernel/random/boot_id", buf, sizeof buf) > 0)
    have_boot = rdzv_parse_boot_id(buf, o->boot_id);
  o->pidns_inode = ns_inode(pid, "/ns/pid");
  o->netns_inode = ns_inode(pid, "/ns/net");
  o->start_ticks = start_ticks > 0 ? (rdzv_u64)start_ticks : 0;

  char path[48];
  proc_path(path, sizeof path, pid, "/status");
  rdzv_s32 first = 0, last = 0;
  const int levels = rdzv_read_file(path, buf, sizeof buf) > 0 ? rdzv_parse_nspid(buf, &first, &last) : 0;
  o->ns_pid = levels > 0 ? last : (pid > 0 ? pid : (rdzv_s32)getpid());
  o->host_pid = levels > 1 ? first : 0;

  proc_path(path, sizeof path, pid, "/cgroup");
  if (rdzv_read_file(path, buf, sizeof buf) > 0) rdzv_find_container_id(buf, o->container_id, sizeof o->container_id);
  return have_boot && o->pidns_inode != 0;
}

int rdzv_process_fill(struct rdzv_file_header *h, int pid) {
  h->pid = pid > 0 ? pid : (rdzv_s32)getpid();
  h->ppid = pid > 0 ? -1 : (rdzv_s32)getppid();

  /* The two clocks are read back to back; their pair maps record times onto the wall clock. */
  h->clock_monotonic_ns = rdzv_clock_ns(CLOCK_MONOTONIC);
  h->clock_realtime_ns = rdzv_clock_ns(CLOCK_REALTIME);
  h->created_monotonic_ns = h->clock_monotonic_ns;

  char host[256];
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  rdzv_copy_cut(h->host, sizeof h->host, host);

  rdzv_s64 ppid = -1, ticks = -1;
  const int alive = read_stat(pid, &ppid, &ticks) == 0;
  if (alive && pid > 0) h->ppid = (rdzv_s32)ppid;
  const long hz = sysconf(_SC_CLK_TCK);
  if (alive && ticks >= 0 && hz > 0) {
    const rdzv_u64 started_boot = (rdzv_u64)ticks * (1000000000ull / (rdzv_u64)hz);
    const rdzv_u64 boot_now = rdzv_clock_ns(CLOCK_BOOTTIME);
    if (started_boot <= boot_now) {
      h->start_realtime_ns = h->clock_realtime_ns - (boot_now - started_boot);
      h->features |= RDZV_FEAT_PROC_START;
    }
  }

  if (alive && rdzv_origin_fill(&h->origin, pid, ticks)) h->features |= RDZV_FEAT_ORIGIN;

  char path[48];
  proc_path(path, sizeof path, pid, "/exe");
  const ssize_t n = readlink(path, h->exe, sizeof h->exe - 1);
  h->exe[n > 0 ? n : 0] = '\0';

  /* argv is NUL-separated, a NUL ending the last argument: joined by single spaces. One byte
   * more than fits is read, to tell a command line that fills the field from a longer one. */
  char cmd[RDZV_CMDLINE_MAX + 1];
  proc_path(path, sizeof path, pid, "/cmdline");
  long len = rdzv_read_file(path, cmd, sizeof cmd);
  if (len > 0) {
    if (cmd[len - 1] == '\0') --len;
    for (long i = 0; i < len; ++i)
      if (cmd[i] == '\0') cmd[i] = ' ';
    cmd[len] = '\0';
    h->cmdline_truncated = (rdzv_u32)(rdzv_copy_cut(h->cmdline, sizeof h->cmdline, cmd) ||
                                      (size_t)len + 1 >= sizeof cmd);
  }
  return alive ? 0 : -1;
}

/* ---------------------------------------------------------------- trace files */

void rdzv_file_host(char *out, size_t cap) {
  if (cap == 0) return;
  char raw[256];
  if (gethostname(raw, sizeof raw) != 0) raw[0] = '\0';
  raw[sizeof raw - 1] = '\0';
  size_t n = 0;
  for (; raw[n] && n + 1 < cap; ++n) {
    const char c = raw[n];
    const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || c == '.';
    out[n] = ok ? c : '_';
  }
  out[n] = '\0';
  if (n == 0) rdzv_copy_cut(out, cap, "unknown-host");
}

int rdzv_trace_name(char *out, size_t cap, const char *dir, const char *host, int pid, int n) {
  struct rdzv_text t;
  rdzv_text_init(&t, out, cap);
  rdzv_text_str(&t, dir);
  rdzv_text_ch(&t, '/');
  rdzv_text_str(&t, host);
  rdzv_text_ch(&t, '.');
  rdzv_text_i64(&t, pid);
  if (n > 0) {
    rdzv_text_ch(&t, '.');
    rdzv_text_i64(&t, n);
  }
  rdzv_text_str(&t, RDZV_FILE_SUFFIX);
  return t.truncated ? -1 : 0;
}

/* One directory level: made with `mode`, or found to be a directory. */
static int ensure_one_dir(const char *dir, mode_t mode) {
  if (mkdir(dir, mode) == 0) {
    chmod(dir, mode); /* as for the files: the umask does not decide what we promised */
    return 0;
  }
  if (errno != EEXIST) return -1;
  struct stat st;
  if (stat(dir, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

int rdzv_trace_dir_ensure(const char *dir, int group_read) {
  const mode_t mode = group_read ? 0750 : 0700;
  /* Parents first (a per-job, per-host layout: BASE/2026/12/01/JOB/HOST). Ranks of one node
   * make them at the same moment: EEXIST from another one's mkdir is success. */
  char path[4096];
  if (rdzv_copy_cut(path, sizeof path, dir) != 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    if (slash[1] == '\0' || slash[-1] == '/') continue;
    *slash = '\0';
    const int made = ensure_one_dir(path, mode);
    *slash = '/';
    if (made != 0) return -1;
  }
  return ensure_one_dir(path, mode);
}

const char *rdzv_trace_step_text(enum rdzv_trace_step step) {
  switch (step) {
    case RDZV_TRACE_OK: return "ok";
    case RDZV_TRACE_NAME: /* followed by ENAMETOOLONG's text */
    case RDZV_TRACE_CREATE: return "cannot create trace file";
    case RDZV_TRACE_ALLOCATE: return "cannot allocate trace file";
    case RDZV_TRACE_SIZE: return "cannot size trace file";
    case RDZV_TRACE_MAP: return "cannot map trace file";
  }
  return "trace file";
}

void rdzv_trace_geometry(rdzv_u64 max_bytes, rdzv_u64 *capacity, size_t *map_len) {
  const rdzv_u64 least = (rdzv_u64)RDZV_HEADER_SIZE + RDZV_RECORD_SIZE;
  const rdzv_u64 most = (rdzv_u64)RDZV_TRACE_MAX_MB << 20;
  if (max_bytes < least) max_bytes = least;
  if (max_bytes > most) max_bytes = most;
  rdzv_u64 cap = (max_bytes - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE;
  if (cap > UINT32_MAX) cap = UINT32_MAX; /* header.capacity is 32 bits */
  *capacity = cap;
  *map_len = (size_t)rdzv_record_offset(cap);
}

/* A file of our name that exists is either an earlier image of this very process (it
 * exec'd: same pid, same start time, same PID namespace) or a stranger: a pid reused, or a
 * process of another PID namespace with the same pid (containers started together, each its
 * own pid 1). Its header tells which; only the fields needed are read (this may run on a
 * small thread stack). */
static void count_earlier_image(const char *path, int pid, rdzv_u64 our_start_ns,
                                rdzv_u64 our_pidns, rdzv_u32 *generation) {
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char magic[RDZV_MAGIC_LEN];
  rdzv_s32 their_pid = 0;
  rdzv_u64 their_start = 0;
  rdzv_u32 their_generation = 0;
  const int ok = pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
                 pread(fd, &their_pid, sizeof their_pid, offsetof(struct rdzv_file_header, pid)) ==
                     (ssize_t)sizeof their_pid &&
                 pread(fd, &their_start, sizeof their_start,
                       offsetof(struct rdzv_file_header, start_realtime_ns)) ==
                     (ssize_t)sizeof their_start &&
                 pread(fd, &their_generation, sizeof their_generation,
                       offsetof(struct rdzv_file_header, exec_generation)) ==
                     (ssize_t)sizeof their_generation;
  rdzv_u32 their_features = 0;
  rdzv_u64 their_pidns = 0;
  const int placed = pread(fd, &their_features, sizeof their_features,
                           offsetof(struct rdzv_file_header, features)) == (ssize_t)sizeof their_features &&
                     (their_features & RDZV_FEAT_ORIGIN) &&
                     pread(fd, &their_pidns, sizeof their_pidns,
                           offsetof(struct rdzv_file_header, origin.pidns_inode)) == (ssize_t)sizeof their_pidns;
  close(fd);
  if (!ok || memcmp(magic, RDZV_MAGIC, RDZV_MAGIC_LEN) != 0 || their_pid != pid) return;
  if (placed && our_pidns && their_pidns != our_pidns) return;
  /* Both start times come from the same tick count, read at slightly different moments. */
  const rdzv_u64 diff = their_start > our_start_ns ? their_start - our_start_ns
                                                   : our_start_ns - their_start;
  if (!our_start_ns || diff > 50000000ull) return;
  if (their_generation + 1 > *generation) *generation = their_generation + 1;
}

static int create_exclusive(const struct rdzv_trace_request *req, rdzv_u64 our_start_ns,
                            rdzv_u64 our_pidns, rdzv_u32 *generation, char *path, size_t path_cap,
                            enum rdzv_trace_step *failed) {
  const mode_t mode = req->group_read ? 0640 : 0600;
  for (int n = 0; n < RDZV_TRACE_NAME_ATTEMPTS; ++n) {
    if (rdzv_trace_name(path, path_cap, req->dir, req->host, req->pid, n) != 0) {
      *failed = RDZV_TRACE_NAME;
      errno = ENAMETOOLONG;
      return -1;
    }
    const int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) {
      fchmod(fd, mode); /* the umask must not widen or narrow what we promised */
      return fd;
    }
    if (errno != EEXIST) {
      *failed = RDZV_TRACE_CREATE;
      return -1;
    }
    if (req->count_exec_generation)
      count_earlier_image(path, req->pid, our_start_ns, our_pidns, generation);
  }
  *failed = RDZV_TRACE_CREATE;
  errno = EEXIST;
  return -1;
}

int rdzv_trace_create(const struct rdzv_trace_request *req, const struct rdzv_file_header *facts,
                      struct rdzv_trace *out, char *path, size_t path_cap,
                      enum rdzv_trace_step *failed) {
  enum rdzv_trace_step step_unused;
  if (!failed) failed = &step_unused;
  *failed = RDZV_TRACE_OK;
  rdzv_u32 generation = 0;
  const rdzv_u64 pidns = (facts->features & RDZV_FEAT_ORIGIN) ? facts->origin.pidns_inode : 0;
  const int fd = create_exclusive(req, facts->start_realtime_ns, pidns, &generation, path, path_cap,
                                  failed);
  if (fd < 0) return errno;

  rdzv_u64 capacity;
  size_t len;
  rdzv_trace_geometry(req->max_bytes, &capacity, &len);
  /* Blocks are allocated now: a store into a mapped hole on a full disk would be a SIGBUS in
   * the writer (the host process, for the shim), while a failure here only costs the trace.
   * File systems that cannot preallocate get a sparse file. */
  int err = posix_fallocate(fd, 0, (off_t)len);
  if (err != 0 && err != EOPNOTSUPP && err != EINVAL) {
    close(fd);
    *failed = RDZV_TRACE_ALLOCATE;
    return err;
  }
  if (err != 0 && ftruncate(fd, (off_t)len) != 0) {
    err = errno;
    close(fd);
    *failed = RDZV_TRACE_SIZE;
    return err;
  }
  void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  err = errno;
  close(fd); /* the mapping keeps the file: no descriptor of ours stays open */
  if (map == MAP_FAILED) {
    *failed = RDZV_TRACE_MAP;
    return err;
  }

  struct rdzv_file_header *h = (struct rdzv_file_header *)map;
  memcpy(h, facts, sizeof *h);
  memset(h->magic, 0, sizeof h->magic); /* stored last: rdzv_trace_publish */
  h->version = RDZV_FORMAT_VERSION;
  h->header_size = RDZV_HEADER_SIZE;
  h->record_size = RDZV_RECORD_SIZE;
  h->capacity = (rdzv_u32)capacity;
  h->next_slot = 0;
  h->dropped = 0;
  h->lost = 0;
  h->exec_generation = generation;
  out->header = h;
  out->records = (struct rdzv_record *)((char *)map + RDZV_HEADER_SIZE);
  out->capacity = capacity;
  out->map_len = len;
  return 0;
}

void rdzv_trace_publish(struct rdzv_trace *t) {
  rdzv_u64 magic_word;
  memcpy(&magic_word, RDZV_MAGIC, sizeof magic_word);
  __atomic_store_n((rdzv_u64 *)(void *)t->header->magic, magic_word, __ATOMIC_RELEASE);
}

void rdzv_proc_start_record(struct rdzv_record *r, const struct rdzv_file_header *h, rdzv_u32 tid) {
  memset(r, 0, offsetof(struct rdzv_record, seal));
  r->kind = RDZV_EV_PROC_START;
  r->op = RDZV_OP_INIT;
  r->tid = tid;
  const rdzv_u64 age = (h->features & RDZV_FEAT_PROC_START) &&
                               h->clock_realtime_ns > h->start_realtime_ns
                           ? h->clock_realtime_ns - h->start_realtime_ns
                           : 0;
  r->ts_ns = h->clock_monotonic_ns > age ? h->clock_monotonic_ns - age : 0;
  r->fd = -1;
  r->u.proc.child_pid = -1;
  rdzv_copy_cut(r->u.proc.path, sizeof r->u.proc.path, h->exe);
}

struct rdzv_record *rdzv_trace_reserve(struct rdzv_trace *t, rdzv_u64 *slot) {
  const rdzv_u64 index = __atomic_fetch_add(&t->header->next_slot, 1, __ATOMIC_RELAXED);
  if (index >= t->capacity) {
    __atomic_fetch_add(&t->header->dropped, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  *slot = index;
  return &t->records[index];
}

void rdzv_trace_close(struct rdzv_trace *t) {
  if (!t->header) return;
  msync(t->header, t->map_len, MS_ASYNC);
  munmap(t->header, t->map_len);
  t->header = NULL;
  t->records = NULL;
  t->capacity = 0;
  t->map_len = 0;
}

/* ---------------------------------------------------------------- snapshots */

int rdzv_failure_snapshot_due(rdzv_u64 *last_ns, rdzv_u64 now_ns) {
  rdzv_u64 last = __atomic_load_n(last_ns, __ATOMIC_RELAXED);
  if (last && now_ns - last < RDZV_FAILURE_SNAPSHOT_GAP_NS) return 0;
  return __atomic_compare_exchange_n(last_ns, &last, now_ns, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
