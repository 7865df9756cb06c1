/* The recorder core (include/rdzvscope/recorder_core.h), the facts of a process read from
 * /proc (this one's or another's): pid, ppid, start time, host, executable, command line and
 * the clock pair (rdzv_process_fill), and where it runs (rdzv_origin_fill: boot id, PID and
 * network namespaces, NSpid, container id), with the parsers behind them.
 * libc only, like the rest of the core: no allocation, no locks, no stdio (the shim runs
 * this inside its hooks, in forked and vforked children too). */
#define _GNU_SOURCE

#include "rdzvscope/recorder_core.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The host name `pid` sees: its UTS namespace's (a container, or `unshare --uts` standing in
 * for another node) when it is not ours, read by entering it for one gethostname and coming
 * back (root; this thread only: a UTS namespace is per thread); else, or when that cannot be
 * done, ours. The shim asks for itself (pid 0): gethostname alone. */
static void process_host(int pid, char *out, size_t cap) {
  if (gethostname(out, cap) != 0) out[0] = '\0';
  out[cap - 1] = '\0';
  if (pid <= 0) return;
  const rdzv_u64 theirs = ns_inode(pid, "/ns/uts");
  if (!theirs || theirs == ns_inode(0, "/ns/uts")) return;
  char path[48];
  proc_path(path, sizeof path, pid, "/ns/uts");
  const int target = open(path, O_RDONLY | O_CLOEXEC);
  const int self = open("/proc/thread-self/ns/uts", O_RDONLY | O_CLOEXEC);
  if (target >= 0 && self >= 0 && setns(target, CLONE_NEWUTS) == 0) {
    char name[256];
    if (gethostname(name, sizeof name) == 0) {
      name[sizeof name - 1] = '\0';
      rdzv_copy_cut(out, cap, name);
    }
    (void)setns(self, CLONE_NEWUTS);
  }
  if (target >= 0) close(target);
  if (self >= 0) close(self);
}

int rdzv_process_fill(struct rdzv_file_header *h, int pid) {
  h->pid = pid > 0 ? pid : (rdzv_s32)getpid();
  h->ppid = pid > 0 ? -1 : (rdzv_s32)getppid();

  /* The two clocks are read back to back; their pair maps record times onto the wall clock. */
  h->clock_monotonic_ns = rdzv_clock_ns(CLOCK_MONOTONIC);
  h->clock_realtime_ns = rdzv_clock_ns(CLOCK_REALTIME);
  h->created_monotonic_ns = h->clock_monotonic_ns;

  char host[256];
  process_host(pid, host, sizeof host);
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

/* ---------------------------------------------------------------- the PyTorch it loaded */

static const char *find_last(const char *hay, size_t len, const char *needle) {
  const size_t n = strlen(needle);
  const char *last = NULL;
  for (const char *p = hay; (p = memmem(p, len - (size_t)(p - hay), needle, n)) != NULL; ++p) last = p;
  return last;
}

/* The mapped file's path in a maps line: from its first '/' (address, permissions, offset,
 * device and inode have none) to the end of the line. */
static const char *mapped_path(const char *line, size_t len, size_t *path_len) {
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\0')) --len;
  const char *p = memchr(line, '/', len);
  if (!p) return NULL;
  *path_len = len - (size_t)(p - line);
  return p;
}

int rdzv_torch_dir_of_mapping(const char *line, size_t len, char *dir, size_t cap) {
  size_t plen = 0;
  const char *path = mapped_path(line, len, &plen);
  if (!path) return 0;
  static const char kPkg[] = "/torch/";
  const char *t = find_last(path, plen, kPkg);
  if (!t) return 0;
  const char *rest = t + sizeof kPkg - 1;
  const size_t rest_len = plen - (size_t)(rest - path);
  const int extension = rest_len > 3 && memcmp(rest, "_C.", 3) == 0;
  const int bundled = rest_len > 4 && memcmp(rest, "lib/", 4) == 0;
  const size_t dir_len = (size_t)(rest - path);
  if (!(extension || bundled) || dir_len + 1 > cap) return 0;
  memcpy(dir, path, dir_len);
  dir[dir_len] = '\0';
  return 1;
}

int rdzv_torch_soname_version(const char *line, size_t len, char *out, size_t cap) {
  size_t plen = 0;
  const char *path = mapped_path(line, len, &plen);
  if (!path) return 0;
  const char *base = find_last(path, plen, "/") + 1;
  const size_t blen = plen - (size_t)(base - path);
  if (!(blen > 6 && memcmp(base, "libc10", 6) == 0) && !(blen > 8 && memcmp(base, "libtorch", 8) == 0))
    return 0;
  const char *so = memmem(base, blen, ".so.", 4);
  if (!so) return 0;
  const char *v = so + 4;
  const size_t vlen = blen - (size_t)(v - base);
  if (vlen == 0 || vlen + 1 > cap || v[0] < '0' || v[0] > '9') return 0;
  for (size_t i = 0; i < vlen; ++i)
    if (!((v[i] >= '0' && v[i] <= '9') || v[i] == '.')) return 0;
  memcpy(out, v, vlen);
  out[vlen] = '\0';
  return 1;
}

int rdzv_parse_torch_version_py(const char *text, char *out, size_t cap) {
  static const char kKey[] = "__version__";
  for (const char *p = text; (p = strstr(p, kKey)) != NULL; p += sizeof kKey - 1) {
    if (p != text && p[-1] != '\n') continue;  /* only an assignment at the start of a line */
    const char *q = p + sizeof kKey - 1;
    while (*q && *q != '=' && *q != '\n') ++q;  /* past an annotation (": str") */
    if (*q != '=') continue;
    ++q;
    while (*q == ' ' || *q == '\t') ++q;
    const char quote = *q;
    if (quote != '\'' && quote != '"') continue;
    const char *v = ++q;
    while (*q && *q != quote && *q != '\n' && (unsigned char)*q > ' ') ++q;
    const size_t vlen = (size_t)(q - v);
    if (*q != quote || vlen == 0 || cap == 0) continue;
    const size_t n = vlen < cap - 1 ? vlen : cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    return 1;
  }
  return 0;
}

/* One maps line: the package directory (into scan->path) once found, else a soname's version
 * (into soname) the first time one is seen. 1 once the directory is known: no need to read on. */
static int torch_scan_line(const char *line, size_t len, struct rdzv_torch_scan *scan,
                           char *soname, size_t soname_cap) {
  if (rdzv_torch_dir_of_mapping(line, len, scan->path, sizeof scan->path - sizeof "version.py")) return 1;
  if (!soname[0]) rdzv_torch_soname_version(line, len, soname, soname_cap);
  return 0;
}

/* Reads /proc/self/maps line by line through scan->chunk; 1 when the package directory was
 * found (scan->path), else 0 (soname may hold a version). */
static int torch_scan_maps(struct rdzv_torch_scan *scan, char *soname, size_t soname_cap) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int found = 0;
  size_t have = 0;
  while (!found) {
    const ssize_t n = read(fd, scan->chunk + have, sizeof scan->chunk - have);
    if (n <= 0) break;
    have += (size_t)n;
    size_t start = 0;
    for (const char *nl; !found && (nl = memchr(scan->chunk + start, '\n', have - start)) != NULL;) {
      const size_t end = (size_t)(nl - scan->chunk) + 1;
      found = torch_scan_line(scan->chunk + start, end - start, scan, soname, soname_cap);
      start = end;
    }
    if (start == 0 && have == sizeof scan->chunk) start = have;  /* a line longer than the chunk */
    memmove(scan->chunk, scan->chunk + start, have - start);
    have -= start;
  }
  if (!found && have > 0) found = torch_scan_line(scan->chunk, have, scan, soname, soname_cap);
  close(fd);
  return found;
}

int rdzv_torch_version_self(char *out, size_t cap, struct rdzv_torch_scan *scan) {
  char soname[RDZV_TORCH_VERSION_MAX] = "";
  if (cap == 0) return 0;
  if (torch_scan_maps(scan, soname, sizeof soname)) {
    strcat(scan->path, "version.py");
    if (rdzv_read_file(scan->path, scan->text, sizeof scan->text) > 0 &&
        rdzv_parse_torch_version_py(scan->text, out, cap))
      return 1;
  }
  if (!soname[0]) return 0;
  rdzv_copy_cut(out, cap, soname);
  return 1;
}
