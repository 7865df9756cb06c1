/* The recorder core (include/rdzvscope/recorder_core.h), the trace file: its host name and
 * file name, geometry, exclusive creation (the exec generation read from an earlier image's
 * file), allocation and mapping, publication of the header, the PROC_START record, slot
 * reservation, closing, and the failure-snapshot rate.
 * libc only, like the rest of the core: no allocation, no locks, no stdio (the shim runs
 * this inside its hooks, in forked and vforked children too). */
#define _GNU_SOURCE

#include "rdzvscope/recorder_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- in-flight calls */

struct rdzv_inflight *rdzv_inflight_claim_other(struct rdzv_file_header *h, rdzv_u32 tid) {
  for (rdzv_u32 k = 1; k < RDZV_INFLIGHT_SLOTS; k++) {
    struct rdzv_inflight *s = &h->inflight[(tid + k) % RDZV_INFLIGHT_SLOTS];
    rdzv_u32 expected = 0;
    if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(&s->owner, &expected, tid, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED))
      return s;
  }
  return NULL;
}

struct rdzv_inflight *rdzv_inflight_begin_socket(struct rdzv_file_header *h, rdzv_u32 tid, rdzv_u8 kind,
                                                 rdzv_u8 op, rdzv_u16 flags, rdzv_s32 fd, rdzv_u64 start_ns,
                                                 rdzv_s64 timeout_ms, const struct rdzv_sockaddr *peer) {
  struct rdzv_inflight *s = rdzv_inflight_claim(h, tid);
  if (!s) return NULL;
  rdzv_inflight_fill(s, kind, op, flags, fd, start_ns);
  memset(&s->u, 0, sizeof s->u);
  if (timeout_ms >= 0) {
    s->timeout_ms = timeout_ms;
    s->has |= RDZV_INFLIGHT_HAS_TIMEOUT;
  }
  if (peer && peer->family) {
    s->u.peer = *peer;
    s->has |= RDZV_INFLIGHT_HAS_PEER;
  }
  rdzv_inflight_publish(s);
  return s;
}

struct rdzv_inflight *rdzv_inflight_begin_lookup(struct rdzv_file_header *h, rdzv_u32 tid, rdzv_u8 op,
                                                 rdzv_u16 flags, const char *host, rdzv_u64 start_ns) {
  struct rdzv_inflight *s = rdzv_inflight_claim(h, tid);
  if (!s) return NULL;
  rdzv_inflight_fill(s, RDZV_EV_RESOLVE, op, flags, -1, start_ns);
  memset(&s->u, 0, sizeof s->u);
  if (host) {
    if (rdzv_copy_cut(s->u.host, sizeof s->u.host, host)) s->flags |= RDZV_F_TRUNCATED;
    s->has |= RDZV_INFLIGHT_HAS_HOST;
  }
  rdzv_inflight_publish(s);
  return s;
}

/* ---------------------------------------------------------------- snapshots */

int rdzv_failure_snapshot_due(rdzv_u64 *last_ns, rdzv_u64 now_ns) {
  rdzv_u64 last = __atomic_load_n(last_ns, __ATOMIC_RELAXED);
  if (last && now_ns - last < RDZV_FAILURE_SNAPSHOT_GAP_NS) return 0;
  return __atomic_compare_exchange_n(last_ns, &last, now_ns, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
